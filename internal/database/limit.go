package database

import (
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// PageLimit is q with the LIMIT n written as a number ("LIMIT 26", not
// "LIMIT $2"), for a list page's statement. pgx prepares every statement,
// and PostgreSQL plans a prepared statement afresh on every run until a
// plan made without the parameters' values (the generic plan) looks no
// costlier than those. Not knowing the LIMIT, the generic plan of a list
// page expects a tenth of the organization's rows rather than a page, so a
// large organization's lists were planned on every request: 0.045 ms of
// PostgreSQL's CPU a page, more than running it (0.03 ms). n is the page
// size the API validated (1–101), never a client's text, so a list shape
// has at most that many statements in pgx's cache
// (TestListPagesReuseTheirPlan).
//
// Only the list pages use it; every other LIMIT is GORM's, a parameter on
// PostgreSQL. SQLite's dialect writes every LIMIT as a number already (and
// ignores a LIMIT clause of another type), so there it is GORM's Limit.
func PageLimit(q *gorm.DB, n int) *gorm.DB {
	if q.Dialector.Name() != string(Postgres) {
		return q.Limit(n)
	}
	return q.Clauses(literalLimit(n))
}

// literalLimit is a LIMIT clause that writes its number.
type literalLimit int

func (n literalLimit) Name() string { return "LIMIT" }

func (n literalLimit) Build(builder clause.Builder) {
	builder.WriteString("LIMIT ")
	builder.WriteString(strconv.Itoa(int(n)))
}

// MergeClause replaces any LIMIT the statement had; the clause has no
// keyword of its own to write (Build writes it), as GORM's Limit.
func (n literalLimit) MergeClause(c *clause.Clause) {
	c.Name = ""
	c.Expression = n
}
