package models

import (
	"strings"
	"unicode"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// Search highlights are delimited in the database with two private-use
// characters, so the stored text around them can be HTML-escaped before the
// delimiters become <mark> tags (the Helpdesk's highlight).
const (
	SearchMarkStart = '\uE000'
	SearchMarkStop  = '\uE001'
)

// ArticleHit is one knowledge-base search result; Snippet is plain text
// with matches between SearchMarkStart and SearchMarkStop.
type ArticleHit struct {
	ID         string
	Title      string
	Slug       string
	CategoryID *string
	Snippet    string
	Rank       float64
}

// CleanText makes free text safe to hand to SQL and full-text syntax:
// invalid UTF-8 and control characters are dropped (NUL above all, which
// PostgreSQL refuses in text and which ends an FTS5 string), except that
// tabs and line breaks become spaces. Searching for a control character
// means nothing, so this strips rather than refuses.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "")
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// Truncate is s as valid UTF-8 of at most n bytes (a database column's
// bound), cut at a character boundary.
func Truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// SearchArticles is ranked full-text search over the published articles of
// orgID, best first, at most limit. q must be clean text (CleanText).
// Snippets are cut from the plain text of the body (BodyText), never from
// its Markdown.
func SearchArticles(db *gorm.DB, orgID, q string, limit int) ([]ArticleHit, error) {
	hits := []ArticleHit{}
	var err error
	if database.DialectFor(db) == database.Postgres {
		err = searchPostgres(db, orgID, q, limit, &hits)
	} else {
		err = searchSQLite(db, orgID, q, limit, &hits)
	}
	return hits, err
}

// headlineOptions make ts_headline delimit matches with the sentinels.
var headlineOptions = `StartSel="` + string(SearchMarkStart) + `", StopSel="` + string(SearchMarkStop) +
	`", MaxFragments=2, MaxWords=25, MinWords=10`

// searchPostgres ranks with ts_rank_cd over the weighted search_vector
// (title A, plain-text body B). websearch_to_tsquery accepts any text
// without syntax errors. Headlines, the costly part, are computed for the
// page only.
func searchPostgres(db *gorm.DB, orgID, q string, limit int, hits *[]ArticleHit) error {
	return db.Raw(`
WITH query AS (SELECT websearch_to_tsquery('english', ?) AS tsq),
hits AS (
    SELECT a.id, a.title, a.slug, a.category_id, a.body_text, a.published_at,
           ts_rank_cd(a.search_vector, query.tsq) AS rank
    FROM kb_articles a, query
    WHERE a.org_id = ? AND a.status = ? AND a.search_vector @@ query.tsq
    ORDER BY rank DESC, a.published_at DESC, a.id
    LIMIT ?
)
SELECT hits.id, hits.title, hits.slug, hits.category_id, hits.rank,
       ts_headline('english', hits.body_text, query.tsq, ?) AS snippet
FROM hits, query
ORDER BY hits.rank DESC, hits.published_at DESC, hits.id`,
		q, orgID, ArticlePublished, limit, headlineOptions).Scan(hits).Error
}

// searchSQLite ranks with FTS5's bm25 (title weighted 10, body 1; lower is
// better, so rank is its negation).
func searchSQLite(db *gorm.DB, orgID, q string, limit int, hits *[]ArticleHit) error {
	match := ftsQuery(q)
	if match == "" {
		return nil
	}
	return db.Raw(`
SELECT a.id, a.title, a.slug, a.category_id,
       -bm25(kb_articles_fts, 10.0, 1.0) AS rank,
       snippet(kb_articles_fts, 1, ?, ?, '…', 16) AS snippet
FROM kb_articles_fts
JOIN kb_articles a ON a.rowid = kb_articles_fts.rowid
WHERE kb_articles_fts MATCH ? AND a.org_id = ? AND a.status = ?
ORDER BY bm25(kb_articles_fts, 10.0, 1.0), a.published_at DESC, a.id
LIMIT ?`,
		string(SearchMarkStart), string(SearchMarkStop), match, orgID, ArticlePublished, limit).Scan(hits).Error
}

// ftsQuery turns free text into an FTS5 query that cannot be a syntax
// error: each whitespace-separated term, without double quotes, becomes a
// quoted string, and the strings are ANDed (FTS5's implicit operator).
// "" means nothing is left to search for.
func ftsQuery(q string) string {
	var terms []string
	for _, t := range strings.Fields(q) {
		t = strings.ReplaceAll(t, `"`, "")
		if t != "" {
			terms = append(terms, `"`+t+`"`)
		}
	}
	return strings.Join(terms, " ")
}
