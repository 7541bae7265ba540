package helpdesk_test

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

type kbCategory struct {
	ID, WorkspaceID, Name, Slug, Description string
	Position                                 int
	ArticleCount                             int64
	CreatedAt, UpdatedAt                     time.Time
}

type kbArticle struct {
	ID, WorkspaceID, Title, Slug, Body, BodyHTML, Status string
	CategoryID                                           *string
	Views                                                int64
	PublishedAt                                          *time.Time
	CreatedAt, UpdatedAt                                 time.Time
}

type kbPage[T any] struct {
	Data       []T
	NextCursor *string
	HasMore    bool
}

type kbSearch struct {
	Data []struct {
		ID, Title, Slug, Snippet string
		CategoryID               *string
		Rank                     float64
	}
	Query string
}

// kbDesk is a workspace with its owner and an hd_ key.
type kbDesk struct {
	e     *apitest.Env
	owner *apitest.User
	org   string
	key   string
}

func newKBDesk(e *apitest.Env, name string) *kbDesk {
	e.T.Helper()
	owner := e.SignUp(apitest.UniqueEmail("kb-owner"))
	org := e.CreateOrg(owner, name)
	return &kbDesk{e: e, owner: owner, org: org, key: e.CreateKey(owner, org, "helpdesk")}
}

func (d *kbDesk) headers() map[string]string { return apitest.HelpdeskKey(d.key, d.org) }

func (d *kbDesk) do(method, path string, body any) *apitest.Response {
	d.e.T.Helper()
	return d.e.Do(apitest.Request{Method: method, Path: path, Headers: d.headers(), Body: body})
}

func (d *kbDesk) category(body map[string]any) kbCategory {
	d.e.T.Helper()
	var c kbCategory
	d.do("POST", "/helpdesk/knowledge-base/categories", body).Expect(201).JSON(&c)
	return c
}

func (d *kbDesk) article(body map[string]any) kbArticle {
	d.e.T.Helper()
	var a kbArticle
	d.do("POST", "/helpdesk/knowledge-base/articles", body).Expect(201).JSON(&a)
	return a
}

func (d *kbDesk) search(q string) kbSearch {
	d.e.T.Helper()
	var s kbSearch
	d.e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/public/kb/" + d.org + "/search?q=" + url.QueryEscape(q)}).Expect(200).JSON(&s)
	return s
}

// kbExpectFields fails unless the 422 problem names exactly want.
func kbExpectFields(t *testing.T, p map[string]any, want ...string) {
	t.Helper()
	var got []string
	for _, fe := range p["errors"].([]any) {
		got = append(got, fe.(map[string]any)["field"].(string))
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("422 names %v, want %v; problem: %v", got, want, p)
	}
}

func TestKBCategoriesCRUD(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newKBDesk(e, "KB Categories")
		const base = "/helpdesk/knowledge-base/categories"

		start := d.category(map[string]any{"name": "  Getting Started  "})
		if start.Name != "Getting Started" || start.Slug != "getting-started" || start.Position != 0 ||
			start.Description != "" || start.WorkspaceID != d.org {
			t.Fatalf("created %+v", start)
		}
		billing := d.category(map[string]any{"name": "Billing & Payments", "slug": "billing", "position": 2,
			"description": "Invoices and cards."})
		if billing.Slug != "billing" || billing.Position != 2 || billing.Description != "Invoices and cards." {
			t.Fatalf("created %+v", billing)
		}
		if c := d.category(map[string]any{"name": "Café & Crème — FAQ!"}); c.Slug != "cafe-creme-faq" {
			t.Fatalf("derived slug %q", c.Slug)
		}

		// Slugs are unique per workspace, derived or sent.
		d.do("POST", base, map[string]any{"name": "Getting started!"}).ExpectProblem(409, "slug_taken")
		d.do("POST", base, map[string]any{"name": "Other", "slug": "billing"}).ExpectProblem(409, "slug_taken")
		d.do("PUT", base+"/"+billing.ID, map[string]any{"slug": "getting-started"}).ExpectProblem(409, "slug_taken")

		// Every bad field in one 422.
		p := d.do("POST", base, map[string]any{"name": "   ", "slug": "Bad--Slug", "description": strings.Repeat("x", 1001),
			"position": -1}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "name", "slug", "description", "position")
		p = d.do("POST", base, map[string]any{"name": "ok", "colour": "red"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "colour")
		p = d.do("POST", base, map[string]any{"name": "日本語"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "slug")
		d.do("POST", base, "{").ExpectProblem(400, "malformed_json")

		// Partial update: a new name keeps the slug; ordering is by position, then name.
		var upd kbCategory
		d.do("PUT", base+"/"+billing.ID, map[string]any{"name": "Accounts", "position": 0}).Expect(200).JSON(&upd)
		if upd.Name != "Accounts" || upd.Slug != "billing" || upd.Description != "Invoices and cards." || upd.Position != 0 ||
			!upd.UpdatedAt.After(billing.UpdatedAt) {
			t.Fatalf("updated %+v", upd)
		}
		var list kbPage[kbCategory]
		d.do("GET", base, nil).Expect(200).JSON(&list)
		var names []string
		for _, c := range list.Data {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, []string{"Accounts", "Café & Crème — FAQ!", "Getting Started"}) || list.HasMore || list.NextCursor != nil {
			t.Fatalf("list %v %+v", names, list)
		}

		// Deleting a category keeps its articles, without a category.
		a := d.article(map[string]any{"title": "Invoices", "categoryId": billing.ID})
		if a.CategoryID == nil || *a.CategoryID != billing.ID {
			t.Fatalf("article category %v", a.CategoryID)
		}
		d.do("DELETE", base+"/"+billing.ID, nil).Expect(204)
		d.do("DELETE", base+"/"+billing.ID, nil).ExpectProblem(404, "not_found")
		var got kbArticle
		d.do("GET", "/helpdesk/knowledge-base/articles/"+a.ID, nil).Expect(200).JSON(&got)
		if got.CategoryID != nil {
			t.Fatalf("article keeps category %v", *got.CategoryID)
		}

		// Another workspace cannot see or touch these categories.
		other := newKBDesk(e, "KB Other")
		other.do("PUT", base+"/"+start.ID, map[string]any{"name": "Mine"}).ExpectProblem(404, "not_found")
		other.do("DELETE", base+"/"+start.ID, nil).ExpectProblem(404, "not_found")
		other.do("PUT", base+"/not-a-uuid", map[string]any{"name": "Mine"}).ExpectProblem(404, "not_found")
		var otherList kbPage[kbCategory]
		other.do("GET", base, nil).Expect(200).JSON(&otherList)
		if len(otherList.Data) != 0 {
			t.Fatalf("other workspace lists %+v", otherList.Data)
		}
		// The same slug is free in another workspace.
		other.category(map[string]any{"name": "Getting Started"})
	})
}

func TestKBCredentials(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newKBDesk(e, "KB Auth")
		other := newKBDesk(e, "KB Auth Other")
		const path = "/helpdesk/knowledge-base/articles"
		body := map[string]any{"title": "Hello"}

		e.Do(apitest.Request{Method: "GET", Path: path}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "POST", Path: path, Body: body}).ExpectProblem(401, "unauthorized")
		// An hd_ key in Authorization is refused.
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.HelpdeskUser(d.key, d.org)}).
			ExpectProblem(401, "api_key_in_authorization")
		// x-workspace-id is required, with a key or a token.
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: map[string]string{"X-Api-Key": d.key}}).
			ExpectProblem(401, "workspace_required")
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.owner.Auth()}).ExpectProblem(401, "workspace_required")
		// A key or a user of another workspace: 404.
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.HelpdeskKey(d.key, other.org)}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.HelpdeskUser(d.owner.Token, other.org)}).ExpectProblem(404, "not_found")
		// A key of another service: 403.
		crmKey := e.CreateKey(d.owner, d.org, "crm")
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.HelpdeskKey(crmKey, d.org)}).ExpectProblem(403, "wrong_service_key")

		// Every member may write: an AGENT authors articles and categories.
		agent := e.AddMember(d.owner, d.org, models.RoleAgent)
		ah := apitest.HelpdeskUser(agent.Token, d.org)
		var a kbArticle
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: ah, Body: body}).Expect(201).JSON(&a)
		e.Do(apitest.Request{Method: "PUT", Path: path + "/" + a.ID, Headers: ah, Body: map[string]any{"status": "published"}}).Expect(200)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/knowledge-base/categories", Headers: ah,
			Body: map[string]any{"name": "Agents"}}).Expect(201)
		// The owner's token works too.
		e.Do(apitest.Request{Method: "GET", Path: path + "/" + a.ID, Headers: apitest.HelpdeskUser(d.owner.Token, d.org)}).Expect(200)
	})
}

func TestKBArticlesCRUD(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newKBDesk(e, "KB Articles")
		const base = "/helpdesk/knowledge-base/articles"
		cat := d.category(map[string]any{"name": "Guides"})

		xss := "# Welcome\n\nSome **bold** text.\n\n<script>alert('x')</script>\n\n<img src=x onerror=\"alert(1)\">\n\n" +
			"[click](javascript:alert(1)) and <a href=\"https://example.com\" onclick=\"steal()\">a link</a>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
		a := d.article(map[string]any{"title": "Welcome aboard", "body": xss, "categoryId": cat.ID})
		if a.Slug != "welcome-aboard" || a.Status != models.ArticleDraft || a.PublishedAt != nil || a.Views != 0 ||
			a.Body != xss || a.CategoryID == nil || *a.CategoryID != cat.ID || a.WorkspaceID != d.org {
			t.Fatalf("created %+v", a)
		}
		for _, want := range []string{"<h1", "<strong>bold</strong>", "<table>", "https://example.com"} {
			if !strings.Contains(a.BodyHTML, want) {
				t.Fatalf("bodyHtml lacks %q: %s", want, a.BodyHTML)
			}
		}
		for _, bad := range []string{"<script", "onerror", "onclick", "javascript:", "alert('x')"} {
			if strings.Contains(strings.ToLower(a.BodyHTML), bad) {
				t.Fatalf("bodyHtml keeps %q: %s", bad, a.BodyHTML)
			}
		}

		// Publishing sets publishedAt once.
		var pub kbArticle
		d.do("PUT", base+"/"+a.ID, map[string]any{"status": "published"}).Expect(200).JSON(&pub)
		if pub.Status != models.ArticlePublished || pub.PublishedAt == nil || pub.BodyHTML != a.BodyHTML {
			t.Fatalf("published %+v", pub)
		}
		first := *pub.PublishedAt
		d.do("PUT", base+"/"+a.ID, map[string]any{"status": "draft"}).Expect(200).JSON(&pub)
		d.do("PUT", base+"/"+a.ID, map[string]any{"status": "published", "title": "Welcome!", "body": "New *body*",
			"categoryId": ""}).Expect(200).JSON(&pub)
		if !pub.PublishedAt.Equal(first) || pub.Title != "Welcome!" || pub.Slug != "welcome-aboard" ||
			!strings.Contains(pub.BodyHTML, "<em>body</em>") || pub.CategoryID != nil {
			t.Fatalf("republished %+v (first published %v)", pub, first)
		}
		var got kbArticle
		d.do("GET", base+"/"+a.ID, nil).Expect(200).JSON(&got)
		if got.Body != "New *body*" || got.BodyHTML != pub.BodyHTML || !got.UpdatedAt.Equal(pub.UpdatedAt) {
			t.Fatalf("read back %+v", got)
		}

		// Created published: publishedAt at once.
		b := d.article(map[string]any{"title": "Second", "slug": "second-one", "status": "published", "categoryId": cat.ID})
		if b.PublishedAt == nil || b.Slug != "second-one" || b.Body != "" || b.BodyHTML != "" {
			t.Fatalf("created published %+v", b)
		}

		// Conflicts and validation.
		d.do("POST", base, map[string]any{"title": "Welcome aboard"}).ExpectProblem(409, "slug_taken")
		d.do("PUT", base+"/"+b.ID, map[string]any{"slug": "welcome-aboard"}).ExpectProblem(409, "slug_taken")
		p := d.do("POST", base, map[string]any{"title": " ", "slug": "-x", "body": strings.Repeat("b", 100001),
			"status": "live", "categoryId": "nope"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "title", "slug", "body", "status", "categoryId")
		p = d.do("POST", base, map[string]any{"title": 5, "views": 3}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "title", "views")
		p = d.do("PUT", base+"/"+b.ID, map[string]any{"title": "", "status": "archived"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "title", "status")
		d.do("POST", base, "[1]").ExpectProblem(400, "malformed_json")
		r := e.Do(apitest.Request{Method: "POST", Path: base, Headers: map[string]string{"X-Api-Key": d.key, "X-Workspace-Id": d.org,
			"Content-Type": "text/plain"}, Body: "title=x"})
		r.ExpectProblem(415, "unsupported_media_type")

		// A category of another workspace is refused like an unknown one.
		other := newKBDesk(e, "KB Articles Other")
		otherCat := other.category(map[string]any{"name": "Theirs"})
		p = d.do("POST", base, map[string]any{"title": "Cross", "categoryId": otherCat.ID}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "categoryId")

		// Lists: newest first, filters, cursor pagination.
		c := d.article(map[string]any{"title": "Third"})
		var page kbPage[kbArticle]
		d.do("GET", base+"?limit=2", nil).Expect(200).JSON(&page)
		if len(page.Data) != 2 || page.Data[0].ID != c.ID || page.Data[1].ID != b.ID || !page.HasMore || page.NextCursor == nil {
			t.Fatalf("page 1 %+v", page)
		}
		var page2 kbPage[kbArticle]
		d.do("GET", base+"?limit=2&cursor="+*page.NextCursor, nil).Expect(200).JSON(&page2)
		if len(page2.Data) != 1 || page2.Data[0].ID != a.ID || page2.HasMore || page2.NextCursor != nil {
			t.Fatalf("page 2 %+v", page2)
		}
		d.do("GET", base+"?status=draft", nil).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != c.ID {
			t.Fatalf("drafts %+v", page.Data)
		}
		d.do("GET", base+"?categoryId="+cat.ID, nil).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != b.ID {
			t.Fatalf("in category %+v", page.Data)
		}
		p = d.do("GET", base+"?status=archived&categoryId=x&limit=500", nil).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "status", "categoryId", "limit")

		// Another workspace's ids are 404s.
		other.do("GET", base+"/"+a.ID, nil).ExpectProblem(404, "not_found")
		other.do("PUT", base+"/"+a.ID, map[string]any{"title": "Mine"}).ExpectProblem(404, "not_found")
		other.do("DELETE", base+"/"+a.ID, nil).ExpectProblem(404, "not_found")
		other.do("GET", base+"/not-a-uuid", nil).ExpectProblem(404, "not_found")

		d.do("DELETE", base+"/"+a.ID, nil).Expect(204)
		d.do("GET", base+"/"+a.ID, nil).ExpectProblem(404, "not_found")
		d.do("DELETE", base+"/"+a.ID, nil).ExpectProblem(404, "not_found")
	})
}

func TestKBPublicHelpCenterAndSearch(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newKBDesk(e, "KB Public")
		guides := d.category(map[string]any{"name": "Guides", "position": 1})
		account := d.category(map[string]any{"name": "Account", "position": 2})
		drafts := d.category(map[string]any{"name": "Only drafts"})
		d.category(map[string]any{"name": "Empty"})

		titleHit := d.article(map[string]any{"title": "Resetting your password", "status": "published", "categoryId": guides.ID,
			"body": "Open the sign-in page and follow the link we e-mail you."})
		bodyHit := d.article(map[string]any{"title": "Account settings", "status": "published", "categoryId": account.ID,
			"body": "You can change your password from the profile page. <script>alert(1)</script> Done."})
		d.article(map[string]any{"title": "Profile photos", "status": "published", "categoryId": account.ID,
			"body": "Upload a square image."})
		draft := d.article(map[string]any{"title": "Password policy (draft)", "categoryId": drafts.ID,
			"body": "Passwords, passwords and more passwords."})

		// Ranked: the title match before the body-only match; no drafts.
		res := d.search("password")
		if res.Query != "password" || len(res.Data) != 2 || res.Data[0].ID != titleHit.ID || res.Data[1].ID != bodyHit.ID {
			t.Fatalf("search %+v", res)
		}
		if res.Data[0].Rank <= res.Data[1].Rank || res.Data[0].Slug != "resetting-your-password" ||
			res.Data[0].CategoryID == nil || *res.Data[0].CategoryID != guides.ID {
			t.Fatalf("ranking %+v", res.Data)
		}
		snip := res.Data[1].Snippet
		if !strings.Contains(snip, "<mark>password</mark>") || strings.Contains(snip, "<script") ||
			strings.Count(snip, "<") != strings.Count(snip, "<mark>")+strings.Count(snip, "</mark>") {
			t.Fatalf("snippet %q", snip)
		}
		// Stemming finds "passwords"; several words must all match.
		if res := d.search("  passwords  "); len(res.Data) != 2 || res.Query != "passwords" {
			t.Fatalf("stemmed search %+v", res)
		}
		if res := d.search("change password"); len(res.Data) != 1 || res.Data[0].ID != bodyHit.ID {
			t.Fatalf("two-word search %+v", res)
		}
		// Query syntax characters are harmless.
		for _, q := range []string{`"`, `pass"word OR -x*`, `title:password`, `NEAR(a b)`, `'); DROP TABLE kb_articles; --`, "pass\x00word", "\x01password\x1f"} {
			d.search(q)
		}
		// Control characters are stripped; nothing else left is a 422,
		// never a database error (a NUL ended FTS5's string: a 500).
		p := e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/public/kb/" + d.org + "/search?q=%00"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "q")
		if res := d.search("pass\x00word"); res.Query != "password" || len(res.Data) != 2 {
			t.Fatalf("search with a NUL %+v", res)
		}
		for _, q := range []string{"policy", "drafts"} {
			if res := d.search(q); len(res.Data) != 0 {
				t.Fatalf("%q finds a draft: %+v", q, res.Data)
			}
		}
		// A draft made public appears; unpublished again, it disappears.
		d.do("PUT", "/helpdesk/knowledge-base/articles/"+draft.ID, map[string]any{"status": "published"}).Expect(200)
		if res := d.search("policy"); len(res.Data) != 1 || res.Data[0].ID != draft.ID {
			t.Fatalf("published draft %+v", res)
		}
		d.do("PUT", "/helpdesk/knowledge-base/articles/"+draft.ID, map[string]any{"status": "draft"}).Expect(200)
		if res := d.search("policy"); len(res.Data) != 0 {
			t.Fatalf("unpublished article found %+v", res)
		}
		// An edited title is searchable (the index follows updates).
		d.do("PUT", "/helpdesk/knowledge-base/articles/"+bodyHit.ID, map[string]any{"title": "Account and avatar settings"}).Expect(200)
		if res := d.search("avatar"); len(res.Data) != 1 || res.Data[0].ID != bodyHit.ID {
			t.Fatalf("search after edit %+v", res)
		}
		// So is an edited body: its plain text is saved with it.
		d.do("PUT", "/helpdesk/knowledge-base/articles/"+bodyHit.ID, map[string]any{"body": "Pick a **gravatar** for your profile."}).Expect(200)
		if res := d.search("gravatar"); len(res.Data) != 1 || res.Data[0].ID != bodyHit.ID || !strings.Contains(res.Data[0].Snippet, "<mark>gravatar</mark>") {
			t.Fatalf("search after a body edit %+v", res)
		}

		// Another workspace's search finds nothing of this one.
		other := newKBDesk(e, "KB Public Other")
		if res := other.search("password"); len(res.Data) != 0 {
			t.Fatalf("other workspace finds %+v", res.Data)
		}

		// Snippets highlight the plain text: no Markdown around the mark.
		md := d.article(map[string]any{"title": "Preferences", "status": "published",
			"body": "Open **Settings**, then _Notifications_, and pick [e-mail](https://example.com/help)."})
		res = d.search("settings notifications")
		if len(res.Data) != 1 || res.Data[0].ID != md.ID {
			t.Fatalf("markdown article search %+v", res)
		}
		if snip := res.Data[0].Snippet; !strings.Contains(snip, "Open <mark>Settings</mark>, then <mark>Notifications</mark>, and pick e-mail") ||
			strings.ContainsAny(snip, "*_[]") {
			t.Fatalf("snippet carries Markdown: %q", snip)
		}

		// Bad searches.
		pub := "/helpdesk/public/kb/" + d.org
		p = e.Do(apitest.Request{Method: "GET", Path: pub + "/search"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "q")
		p = e.Do(apitest.Request{Method: "GET", Path: pub + "/search?q=%20%20&limit=51"}).ExpectProblem(422, "validation_failed")
		kbExpectFields(t, p, "q", "limit")
		e.Do(apitest.Request{Method: "GET", Path: pub + "/search?q=" + strings.Repeat("a", 201)}).ExpectProblem(422, "validation_failed")
		if res := d.searchLimit("password", 1); len(res.Data) != 1 || res.Data[0].ID != titleHit.ID {
			t.Fatalf("limited search %+v", res)
		}

		// Public categories: only those with published articles, counted.
		var cats kbPage[kbCategory]
		e.Do(apitest.Request{Method: "GET", Path: pub + "/categories"}).Expect(200).JSON(&cats)
		if len(cats.Data) != 2 || cats.Data[0].ID != guides.ID || cats.Data[0].ArticleCount != 1 ||
			cats.Data[1].ID != account.ID || cats.Data[1].ArticleCount != 2 || cats.HasMore {
			t.Fatalf("public categories %+v", cats)
		}

		// Reading an article counts the view.
		var art map[string]any
		for i := 1; i <= 2; i++ {
			e.Do(apitest.Request{Method: "GET", Path: pub + "/articles/" + titleHit.Slug}).Expect(200).JSON(&art)
			if art["views"] != float64(i) || art["id"] != titleHit.ID || art["bodyHtml"] == "" {
				t.Fatalf("public article %v", art)
			}
		}
		if _, ok := art["body"]; ok {
			t.Fatalf("public article shows the Markdown source: %v", art)
		}
		var got kbArticle
		d.do("GET", "/helpdesk/knowledge-base/articles/"+titleHit.ID, nil).Expect(200).JSON(&got)
		if got.Views != 2 {
			t.Fatalf("views %d, want 2", got.Views)
		}
		// Editing an article does not lose views counted meanwhile.
		d.do("PUT", "/helpdesk/knowledge-base/articles/"+titleHit.ID, map[string]any{"body": "Updated."}).Expect(200).JSON(&got)
		if got.Views != 2 {
			t.Fatalf("views after edit %d, want 2", got.Views)
		}

		// Unpublished, unknown slug, unknown or malformed workspace: one 404.
		var details []any
		for _, path := range []string{
			pub + "/articles/" + draft.Slug,
			pub + "/articles/no-such-article",
			"/helpdesk/public/kb/" + models.NewID() + "/articles/" + titleHit.Slug,
			"/helpdesk/public/kb/not-a-uuid/articles/" + titleHit.Slug,
			other.pubPath() + "/articles/" + titleHit.Slug,
		} {
			details = append(details, e.Do(apitest.Request{Method: "GET", Path: path}).ExpectProblem(404, "not_found")["detail"])
		}
		for _, dt := range details {
			if dt != details[0] {
				t.Fatalf("404 details differ: %v", details)
			}
		}
		for _, path := range []string{"/helpdesk/public/kb/" + models.NewID(), "/helpdesk/public/kb/nope"} {
			e.Do(apitest.Request{Method: "GET", Path: path + "/categories"}).ExpectProblem(404, "not_found")
			e.Do(apitest.Request{Method: "GET", Path: path + "/search?q=password"}).ExpectProblem(404, "not_found")
		}
	})
}

func (d *kbDesk) pubPath() string { return "/helpdesk/public/kb/" + d.org }

func (d *kbDesk) searchLimit(q string, limit int) kbSearch {
	d.e.T.Helper()
	var s kbSearch
	d.e.Do(apitest.Request{Method: "GET", Path: d.pubPath() + "/search?limit=" + strconv.Itoa(limit) + "&q=" + url.QueryEscape(q)}).
		Expect(200).JSON(&s)
	return s
}

// The Location of a created category can be followed; another workspace
// cannot read it.
func TestKBCategoryLocationResolves(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	d := newKBDesk(e, "Loc")
	other := newKBDesk(e, "Other")
	r := e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/knowledge-base/categories", Headers: d.headers(),
		Body: map[string]any{"name": "Billing"}}).Expect(201)
	var got struct{ Name, Slug string }
	e.Do(apitest.Request{Method: "GET", Path: r.Header.Get("Location"), Headers: d.headers()}).Expect(200).JSON(&got)
	if got.Name != "Billing" || got.Slug != "billing" {
		t.Fatalf("category: %+v", got)
	}
	e.Do(apitest.Request{Method: "GET", Path: r.Header.Get("Location"), Headers: other.headers()}).ExpectProblem(404, "not_found")
}
