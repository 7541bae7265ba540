package database

import (
	"strconv"

	"gorm.io/gorm/clause"
)

// literalLimit writes a statement's LIMIT and OFFSET as numbers, not as
// parameters ("LIMIT 26", not "LIMIT $2"), on PostgreSQL; the SQLite
// driver already writes them so. pgx prepares every statement, and
// PostgreSQL plans a prepared statement afresh on every run until a plan
// made without the parameters' values (the generic plan) looks no costlier
// than those. Not knowing the LIMIT, the generic plan of a list page
// expects a tenth of the organization's rows rather than a page, so a large
// organization's lists were planned on every request: 0.045 ms of
// PostgreSQL's CPU a page, more than running it (0.03 ms). Both are the
// numbers GORM was given, never a client's text; a page size is one of
// 1–101, so a list shape has at most that many statements in pgx's cache
// (TestListPagesReuseTheirPlan).
func literalLimit(c clause.Clause, builder clause.Builder) {
	limit, ok := c.Expression.(clause.Limit)
	if !ok {
		c.Build(builder)
		return
	}
	hasLimit := limit.Limit != nil && *limit.Limit >= 0
	if hasLimit {
		builder.WriteString("LIMIT ")
		builder.WriteString(strconv.Itoa(*limit.Limit))
	}
	if limit.Offset > 0 {
		if hasLimit {
			builder.WriteByte(' ')
		}
		builder.WriteString("OFFSET ")
		builder.WriteString(strconv.Itoa(limit.Offset))
	}
}
