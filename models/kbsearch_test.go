package models_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// FuzzSearchArticles feeds arbitrary text, cleaned as the public search
// cleans it, through the query builder into a real database of every
// available dialect (SQLite's FTS5 always, PostgreSQL's
// websearch_to_tsquery when it runs): no input may make the database fail,
// which the API would answer with a 500. `go test` runs the committed seed
// corpus in testdata/fuzz/FuzzSearchArticles; `go test -run XXX -fuzz
// FuzzSearchArticles ./models` looks for new failing inputs.
func FuzzSearchArticles(f *testing.F) {
	type target struct {
		db  *gorm.DB
		org string
	}
	var targets []target
	for _, d := range dbtest.Dialects(f) {
		db := dbtest.Open(f, d)
		targets = append(targets, target{db, seedArticle(f, db)})
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q := strings.TrimSpace(models.CleanText(raw))
		if q == "" || utf8.RuneCountInString(q) > 200 {
			return // the API refuses these with a 422
		}
		for _, tg := range targets {
			if _, err := models.SearchArticles(tg.db.WithContext(t.Context()), tg.org, q, 5); err != nil {
				t.Fatalf("%s: search %q (from %q): %v", database.DialectFor(tg.db), q, raw, err)
			}
		}
	})
}

// seedArticle stores an organization with one published article and
// returns the organization's id.
func seedArticle(tb testing.TB, db *gorm.DB) string {
	tb.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "Fuzz", Status: models.OrgActive, Plan: models.PlanFree,
		Timezone: "UTC", Currency: "USD", CreatedBy: "fuzz", CreatedAt: now, UpdatedAt: now}
	body := "Open **Settings** and choose *Reset password*. Then `sign in` again."
	a := models.KBArticle{ID: models.NewID(), OrgID: org.ID, Title: "Reset your password", Slug: "reset-password",
		Body: body, BodyHTML: "<p>(rendered)</p>", BodyText: models.MarkdownText(body), Status: models.ArticlePublished,
		PublishedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&org).Error; err != nil {
		tb.Fatal(err)
	}
	if err := db.Create(&a).Error; err != nil {
		tb.Fatal(err)
	}
	return org.ID
}

// Snippets come from the plain text: Markdown around a match is gone, on
// both dialects.
func TestSearchSnippetsArePlainText(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := seedArticle(t, db)
		hits, err := models.SearchArticles(db, org, "settings", 5)
		if err != nil || len(hits) != 1 {
			t.Fatalf("hits %+v, %v", hits, err)
		}
		want := string(models.SearchMarkStart) + "Settings" + string(models.SearchMarkStop)
		if !strings.Contains(hits[0].Snippet, want) || strings.ContainsAny(hits[0].Snippet, "*`") {
			t.Fatalf("snippet %q: want %q with no Markdown around it", hits[0].Snippet, want)
		}
	})
}

func TestMarkdownText(t *testing.T) {
	cases := []struct{ md, want string }{
		{"Open **Settings** and click `Reset`.\nThen *done*.", "Open Settings and click Reset. Then done."},
		{"# Title\n\nA [link](https://x.example) and <https://auto.example>, \\*not em\\* &amp; AT&T", "Title\nA link and https://auto.example, *not em* & AT&T"},
		{"- one\n- two", "one\n\ntwo"},
		{"```go\nfmt.Println(1)\n```", "fmt.Println(1)"},
		{"<details><summary>More</summary>Hidden <b>bold</b></details>\n\n<script>alert(1)</script>", "More Hidden bold"},
		{"x<sup>2</sup> ![alt text](img.png) ~~gone~~", "x2 alt text gone"},
		{"", ""},
	}
	for _, c := range cases {
		if got := models.MarkdownText(c.md); got != c.want {
			t.Errorf("MarkdownText(%q) = %q, want %q", c.md, got, c.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{"a\x00b": "ab", "tab\there": "tab here", "bad\xffutf8": "badutf8", "line\nbreak": "line break", "ok": "ok", "\u0085x": " x"} {
		if got := models.CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Articles written before the plain-text column existed get it from the
// Go migration that follows, and become searchable by their body.
func TestKBBodyTextBackfill(t *testing.T) {
	for _, d := range dbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := dbtest.OpenEmpty(t, d)
			if err := models.MigrateTo(t.Context(), db, 5); err != nil {
				t.Fatal(err)
			}
			org := seedArticle(t, db)
			// As version 5 left it: no plain text yet.
			dbtest.MustExec(t, db, "UPDATE kb_articles SET body_text = ''")
			if hits, err := models.SearchArticles(db, org, "settings", 5); err != nil || len(hits) != 0 {
				t.Fatalf("before the backfill: %+v %v", hits, err)
			}
			if _, err := models.Migrate(t.Context(), db); err != nil {
				t.Fatal(err)
			}
			var a models.KBArticle
			if err := db.Take(&a, "org_id = ?", org).Error; err != nil {
				t.Fatal(err)
			}
			if a.BodyText != models.MarkdownText(a.Body) || a.BodyText == "" {
				t.Fatalf("body_text %q", a.BodyText)
			}
			if hits, err := models.SearchArticles(db, org, "settings", 5); err != nil || len(hits) != 1 || strings.Contains(hits[0].Snippet, "**") {
				t.Fatalf("after the backfill: %+v %v", hits, err)
			}
		})
	}
}
