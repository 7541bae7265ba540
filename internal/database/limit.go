package database

import (
	"math/bits"
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

// InList is values for an "IN ?" of a statement that runs often with lists
// of any length up to hundreds (a webhook batch's deliveries): padded to
// the next power of two by repeating the last value, which changes no
// result of IN. GORM writes one placeholder a value, and pgx prepares and
// keeps every statement text it sees (512 a connection); unpadded, each
// length would be a statement of its own, pushing the API's out of the
// cache, where padded a list of up to 512 has ten shapes.
func InList[T any](values []T) []T {
	n := len(values)
	if n == 0 || n&(n-1) == 0 {
		return values
	}
	padded := make([]T, 1<<bits.Len(uint(n)), 1<<bits.Len(uint(n)))
	copy(padded, values)
	for i := n; i < len(padded); i++ {
		padded[i] = values[n-1]
	}
	return padded
}
