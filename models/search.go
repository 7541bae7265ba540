package models

import (
	"strings"

	"gorm.io/gorm"
)

// ContainsText restricts q to rows where any of columns contains text,
// case-insensitively, with LIKE wildcards in text matched literally and
// control characters ignored (CleanText).
func ContainsText(q *gorm.DB, text string, columns ...string) *gorm.DB {
	pattern := LikePattern(strings.ToLower(CleanText(text)))
	clauses := make([]string, len(columns))
	args := make([]any, len(columns))
	for i, col := range columns {
		clauses[i] = "LOWER(" + col + `) LIKE ? ESCAPE '\'`
		args[i] = pattern
	}
	return q.Where("("+strings.Join(clauses, " OR ")+")", args...)
}

// Containing narrows q to rows with text in one of columns, when set.
func Containing(q *gorm.DB, text string, columns ...string) *gorm.DB {
	if text == "" {
		return q
	}
	return ContainsText(q, text, columns...)
}

// Equal narrows q to rows whose column is value, when set.
func Equal(q *gorm.DB, column, value string) *gorm.DB {
	if value == "" {
		return q
	}
	return q.Where(column+" = ?", value)
}

// ContactsMatching narrows q to the contacts of a type and containing
// text (each when set): the list's filters and an export's.
func ContactsMatching(q *gorm.DB, typ, text string) *gorm.DB {
	return Containing(Equal(q, "type", typ), text, "name", "email", "company")
}

// CustomersMatching narrows q to the customers containing text (when
// set): the list's filter and an export's.
func CustomersMatching(q *gorm.DB, text string) *gorm.DB {
	return Containing(q, text, "name", "email", "company")
}

// LikePattern is a LIKE pattern (ESCAPE '\\') of the rows containing text,
// its wildcards matched literally.
func LikePattern(text string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(text) + "%"
}
