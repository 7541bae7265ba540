package web

import (
	"strings"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// ContainsText restricts q to rows where any of columns contains text,
// case-insensitively, with LIKE wildcards in text matched literally and
// control characters ignored (models.CleanText).
func ContainsText(q *gorm.DB, text string, columns ...string) *gorm.DB {
	pattern := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(models.CleanText(text))) + "%"
	clauses := make([]string, len(columns))
	args := make([]any, len(columns))
	for i, col := range columns {
		clauses[i] = "LOWER(" + col + `) LIKE ? ESCAPE '\'`
		args[i] = pattern
	}
	return q.Where("("+strings.Join(clauses, " OR ")+")", args...)
}
