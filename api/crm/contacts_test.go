package crm_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type contactOut struct {
	ID, OrgID, Name, Email, Phone, Company, Designation, Type, Notes string
	CreatedAt, UpdatedAt                                             time.Time
}

// crmPage is one page of a CRM list.
type crmPage[T any] struct {
	Data       []T
	NextCursor *string
	HasMore    bool
}

// problemFields lists the fields a 422 problem names, in order.
func problemFields(p map[string]any) []string {
	var fields []string
	for _, fe := range p["errors"].([]any) {
		fields = append(fields, fe.(map[string]any)["field"].(string))
	}
	return fields
}

// expectFields fails unless the 422 names exactly want (in any order).
func expectFields(t *testing.T, p map[string]any, want ...string) {
	t.Helper()
	got := problemFields(p)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("422 names %v, want %v; problem: %v", got, want, p)
	}
}

// memberIDs returns the member ids of users in orgID, as listed to owner.
func memberIDs(e *apitest.Env, owner *apitest.User, orgID string, users ...*apitest.User) []string {
	e.T.Helper()
	var page crmPage[member]
	e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID + "/members?limit=100", Headers: owner.Auth()}).Expect(200).JSON(&page)
	ids := make([]string, len(users))
	for i, u := range users {
		for _, m := range page.Data {
			if m.Email == models.NormalizeEmail(u.Email) {
				ids[i] = m.ID
			}
		}
		if ids[i] == "" {
			e.T.Fatalf("%s is not a member of %s", u.Email, orgID)
		}
	}
	return ids
}

// pageAll walks a list with limit=2 and returns the ids in list order,
// checking the envelope of every page.
func pageAll(t *testing.T, e *apitest.Env, headers map[string]string, path string) []string {
	t.Helper()
	var ids []string
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path + sep + "limit=2"
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("pagination does not end")
		}
		var page crmPage[struct{ ID string }]
		e.Do(apitest.Request{Method: "GET", Path: next, Headers: headers}).Expect(200).JSON(&page)
		if len(page.Data) > 2 {
			t.Fatalf("page of %d rows with limit=2", len(page.Data))
		}
		for _, r := range page.Data {
			ids = append(ids, r.ID)
		}
		if !page.HasMore {
			if page.NextCursor != nil {
				t.Fatalf("last page has a nextCursor")
			}
			return ids
		}
		if page.NextCursor == nil || len(page.Data) != 2 {
			t.Fatalf("hasMore with nextCursor %v and %d rows", page.NextCursor, len(page.Data))
		}
		next = path + sep + "limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}

func reversed(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

func TestContactsCRUD(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Contacts")
		agent := e.AddMember(owner, orgID, models.RoleAgent)
		q := "?orgId=" + orgID

		var ct contactOut
		r := e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: owner.Auth(), Body: map[string]any{
			"orgId": orgID, "name": "  Ada Lovelace ", "email": "Ada@Analytical.Example", "phone": "+44 20 7946 0000",
			"company": "Analytical Engines", "designation": "Mathematician", "notes": "Met at the Royal Society.\n"}}).Expect(201)
		r.JSON(&ct)
		want := contactOut{ID: ct.ID, OrgID: orgID, Name: "Ada Lovelace", Email: "ada@analytical.example", Phone: "+44 20 7946 0000",
			Company: "Analytical Engines", Designation: "Mathematician", Type: "person", Notes: "Met at the Royal Society.\n",
			CreatedAt: ct.CreatedAt, UpdatedAt: ct.UpdatedAt}
		if ct != want || !models.ValidID(ct.ID) || ct.CreatedAt.IsZero() || !ct.CreatedAt.Equal(ct.UpdatedAt) {
			t.Fatalf("created %+v, want %+v", ct, want)
		}
		if r.Header.Get("Location") != "/crm/contacts/"+ct.ID {
			t.Fatalf("Location %q", r.Header.Get("Location"))
		}

		// Every member sees contacts: they are not role-scoped.
		var got contactOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ct.ID + q, Headers: agent.Auth()}).Expect(200).JSON(&got)
		if got != ct {
			t.Fatalf("get %+v, want %+v", got, ct)
		}

		// A partial update changes only what it names; "" clears.
		var upd contactOut
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + ct.ID, Headers: agent.Auth(), Body: map[string]any{
			"orgId": orgID, "email": "", "type": "company", "designation": "Countess"}}).Expect(200).JSON(&upd)
		want = ct
		want.Email, want.Type, want.Designation, want.UpdatedAt = "", "company", "Countess", upd.UpdatedAt
		if upd != want || !upd.UpdatedAt.After(ct.UpdatedAt) {
			t.Fatalf("updated %+v, want %+v", upd, want)
		}
		// orgId may come from the query instead of the body.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + ct.ID + q, Headers: owner.Auth(),
			Body: map[string]any{"name": "Augusta Ada King"}}).Expect(200).JSON(&upd)
		if upd.Name != "Augusta Ada King" || upd.Designation != "Countess" || upd.Company != "Analytical Engines" {
			t.Fatalf("second update %+v", upd)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ct.ID + q, Headers: owner.Auth()}).Expect(200).JSON(&got)
		if got != upd {
			t.Fatalf("stored %+v, answered %+v", got, upd)
		}

		// An API key acts in its own organization without orgId.
		key := e.CreateKey(owner, orgID, "crm")
		var page crmPage[contactOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts", Headers: apitest.Bearer(key)}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0] != upd || page.HasMore || page.NextCursor != nil {
			t.Fatalf("list by key: %+v", page)
		}
		var byKey contactOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: apitest.Bearer(key),
			Body: map[string]any{"name": "Globex", "type": "company"}}).Expect(201).JSON(&byKey)
		if byKey.OrgID != orgID || byKey.Type != "company" || byKey.Email != "" {
			t.Fatalf("created by key: %+v", byKey)
		}

		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/contacts/" + ct.ID + q, Headers: agent.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ct.ID + q, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/contacts/" + ct.ID + q, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + ct.ID + q, Headers: owner.Auth(),
			Body: map[string]any{"name": "Ghost"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/not-an-id" + q, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts" + q, Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != byKey.ID {
			t.Fatalf("list after delete: %+v", page)
		}
	})
}

func TestContactsRefusals(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Mine")
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Theirs")
		q := "?orgId=" + orgID

		var mine, theirs contactOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: owner.Auth(),
			Body: map[string]any{"orgId": orgID, "name": "Mine"}}).Expect(201).JSON(&mine)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: other.Auth(),
			Body: map[string]any{"orgId": otherOrg, "name": "Theirs"}}).Expect(201).JSON(&theirs)

		// No credential: 401 on every route.
		noAuth := []struct{ method, path string }{
			{"GET", "/crm/contacts" + q}, {"POST", "/crm/contacts"}, {"GET", "/crm/contacts/" + mine.ID + q},
			{"PUT", "/crm/contacts/" + mine.ID + q}, {"DELETE", "/crm/contacts/" + mine.ID + q},
		}
		for _, rt := range noAuth {
			var body any
			if rt.method == "POST" || rt.method == "PUT" {
				body = map[string]any{"orgId": orgID, "name": "X"}
			}
			e.Do(apitest.Request{Method: rt.method, Path: rt.path, Body: body}).ExpectProblem(401, "unauthorized")
		}

		// Another organization's contact, or naming another organization:
		// 404, and nothing changes.
		notFound := []struct {
			name, method, path string
			body               any
		}{
			{"get theirs", "GET", "/crm/contacts/" + theirs.ID + q, nil},
			{"update theirs", "PUT", "/crm/contacts/" + theirs.ID, map[string]any{"orgId": orgID, "name": "Hijacked"}},
			{"delete theirs", "DELETE", "/crm/contacts/" + theirs.ID + q, nil},
			{"list their org", "GET", "/crm/contacts?orgId=" + otherOrg, nil},
			{"create in their org", "POST", "/crm/contacts", map[string]any{"orgId": otherOrg, "name": "Intruder"}},
			{"get theirs in their org", "GET", "/crm/contacts/" + theirs.ID + "?orgId=" + otherOrg, nil},
			{"update theirs in their org", "PUT", "/crm/contacts/" + theirs.ID, map[string]any{"orgId": otherOrg, "name": "Hijacked"}},
			{"delete theirs in their org", "DELETE", "/crm/contacts/" + theirs.ID + "?orgId=" + otherOrg, nil},
		}
		for _, tc := range notFound {
			t.Run(tc.name, func(t *testing.T) {
				e.Do(apitest.Request{Method: tc.method, Path: tc.path, Headers: owner.Auth(), Body: tc.body}).ExpectProblem(404, "not_found")
			})
		}
		var still contactOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + theirs.ID + "?orgId=" + otherOrg, Headers: other.Auth()}).Expect(200).JSON(&still)
		if still != theirs {
			t.Fatalf("another organization's contact changed: %+v", still)
		}
		// A key of this organization cannot reach the other one either.
		key := e.CreateKey(owner, orgID, "crm")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + theirs.ID, Headers: apitest.Bearer(key)}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + otherOrg, Headers: apitest.Bearer(key)}).ExpectProblem(404, "not_found")

		// Bad bodies list every bad field; unknown fields are reported first.
		long := strings.Repeat("x", 201)
		invalid := []struct {
			name, method, path string
			body               any
			fields             []string
		}{
			{"unknown field", "POST", "/crm/contacts", map[string]any{"orgId": orgID, "name": "X", "nickname": "x"}, []string{"nickname"}},
			{"create rules", "POST", "/crm/contacts", map[string]any{"orgId": orgID, "name": "   ", "email": "not-an-email",
				"phone": strings.Repeat("1", 51), "company": long, "designation": long, "type": "robot",
				"notes": strings.Repeat("n", 10001)}, []string{"name", "email", "phone", "company", "designation", "type", "notes"}},
			{"name missing", "POST", "/crm/contacts", map[string]any{"orgId": orgID}, []string{"name"}},
			{"wrong types", "POST", "/crm/contacts", map[string]any{"orgId": orgID, "name": 7, "email": true}, []string{"name", "email"}},
			{"email too long", "POST", "/crm/contacts", map[string]any{"orgId": orgID, "name": "X",
				"email": strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".com"}, []string{"email"}},
			{"update rules", "PUT", "/crm/contacts/" + mine.ID, map[string]any{"orgId": orgID, "name": "", "type": "", "email": "@"},
				[]string{"name", "type", "email"}},
			{"update unknown field", "PUT", "/crm/contacts/" + mine.ID, map[string]any{"orgId": orgID, "id": models.NewID()}, []string{"id"}},
		}
		for _, tc := range invalid {
			t.Run(tc.name, func(t *testing.T) {
				p := e.Do(apitest.Request{Method: tc.method, Path: tc.path, Headers: owner.Auth(), Body: tc.body}).ExpectProblem(422, "validation_failed")
				expectFields(t, p, tc.fields...)
			})
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: owner.Auth(), Body: `{"name":`}).ExpectProblem(400, "malformed_json")
		var page crmPage[contactOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts" + q, Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0] != mine {
			t.Fatalf("refused requests changed the contacts: %+v", page.Data)
		}
	})
}

func TestContactsFiltersAndPagination(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Filters")
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Elsewhere")
		q := "?orgId=" + orgID

		seed := []map[string]any{
			{"name": "Ada Lovelace", "email": "ada@analytical.example", "company": "Analytical Engines"},
			{"name": "Globex", "type": "company", "company": "Globex Corporation", "email": "sales@globex.example"},
			{"name": "50% Off Ltd", "type": "company"},
			{"name": "500 Off Inc", "type": "company"},
			{"name": "Snake_Case", "email": "snake@example.com"},
			{"name": "SnakeXCase", "company": "Anvil Co"},
			{"name": "Grace Hopper", "company": "Navy", "email": "GRACE@NAVY.EXAMPLE"},
		}
		byName := map[string]string{}
		var created []string
		for _, body := range seed {
			body["orgId"] = orgID
			var ct contactOut
			e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: owner.Auth(), Body: body}).Expect(201).JSON(&ct)
			byName[ct.Name] = ct.ID
			created = append(created, ct.ID)
		}
		// Another organization's matching contact never shows.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: other.Auth(),
			Body: map[string]any{"orgId": otherOrg, "name": "Ada Elsewhere", "type": "company"}}).Expect(201)

		names := func(ns ...string) []string {
			var ids []string
			for _, n := range ns {
				ids = append(ids, byName[n])
			}
			return ids
		}
		cases := []struct {
			name, query string
			want        []string // newest first
		}{
			{"all", "", reversed(created)},
			{"companies", "&type=company", names("500 Off Inc", "50% Off Ltd", "Globex")},
			{"people", "&type=person", names("Grace Hopper", "SnakeXCase", "Snake_Case", "Ada Lovelace")},
			{"name, any case", "&q=LOVELACE", names("Ada Lovelace")},
			{"email", "&q=navy.example", names("Grace Hopper")},
			{"company", "&q=globex%20corp", names("Globex")},
			{"name or email or company", "&q=an", names("SnakeXCase", "Ada Lovelace")},
			{"percent is literal", "&q=" + url.QueryEscape("50%"), names("50% Off Ltd")},
			{"underscore is literal", "&q=e_c", names("Snake_Case")},
			{"type and q", "&type=company&q=off", names("500 Off Inc", "50% Off Ltd")},
			{"no match", "&q=zzz", nil},
			{"spaces around q are dropped", "&q=" + url.QueryEscape("  Lovelace  "), names("Ada Lovelace")},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := pageAll(t, e, owner.Auth(), "/crm/contacts"+q+tc.query)
				if !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
		// The same list with the default page size: one page.
		var page crmPage[contactOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts" + q, Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != len(seed) || page.HasMore || page.NextCursor != nil {
			t.Fatalf("default page: %d rows, hasMore %v", len(page.Data), page.HasMore)
		}

		p := e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts" + q + "&type=robot&limit=0&cursor=nope", Headers: owner.Auth()}).
			ExpectProblem(422, "validation_failed")
		expectFields(t, p, "limit", "cursor", "type") // the page's and the filter's, all at once
		p = e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts" + q + "&type=robot&q=" + strings.Repeat("q", 201), Headers: owner.Auth()}).
			ExpectProblem(422, "validation_failed")
		expectFields(t, p, "type", "q")
		p = e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts", Headers: owner.Auth()}).ExpectProblem(422, "validation_failed")
		expectFields(t, p, "orgId")
	})
}

// Control characters never reach the database as SQL text: a NUL in a list
// filter is ignored (PostgreSQL refused it: 500), and a NUL in a body field
// is a 422 on that field that stores nothing.
func TestControlCharactersNeverReachTheDatabase(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("nul"))
		org := e.CreateOrg(u, "Nul")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: u.Auth(),
			Body: map[string]any{"orgId": org, "name": "Ada Lovelace"}}).Expect(201)
		for _, path := range []string{"/crm/contacts", "/crm/leads", "/crm/deals", "/crm/tasks"} {
			e.Do(apitest.Request{Method: "GET", Path: path + "?orgId=" + org + "&q=%00", Headers: u.Auth()}).Expect(200)
		}
		var page struct{ Data []struct{ Name string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + org + "&q=Ada%00%01", Headers: u.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 {
			t.Fatalf("filter with control characters: %+v", page.Data)
		}
		hd := apitest.HelpdeskUser(u.Token, org)
		for _, path := range []string{"/helpdesk/tickets", "/helpdesk/customers"} {
			e.Do(apitest.Request{Method: "GET", Path: path + "?q=%00", Headers: hd}).Expect(200)
		}
		p := e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: u.Auth(),
			Body: `{"orgId":"` + org + `","name":"Ada\u0000","notes":"fine\ttab"}`}).ExpectProblem(422, "validation_failed")
		if errs := p["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != "name" || errs[0].(map[string]any)["code"] != "invalid_character" {
			t.Fatalf("errors %v", errs)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + org, Headers: u.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 {
			t.Fatalf("a refused body stored a contact: %+v", page.Data)
		}
	})
}
