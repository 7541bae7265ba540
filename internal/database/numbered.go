package database

import (
	"strconv"
	"strings"
	"sync"
)

// numberedStatements caches Numbered's answers.
var numberedStatements sync.Map // query with ? → query with $n

// Numbered rewrites query's ? placeholders as PostgreSQL's $1, $2, … in
// order, once per query text. GORM's Raw does the same rewriting on every
// call, with a look at every argument: for the intake's 27-argument
// statement, 6 % of an accepted submission's CPU (docs/decisions.md,
// "Performance"). Like Raw's, the rewriting takes every ? for a
// placeholder: query must have none in a literal, and its arguments are
// passed as they are (no slice is expanded into a list).
func Numbered(query string) string {
	if q, ok := numberedStatements.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	numberedStatements.Store(query, b.String())
	return b.String()
}
