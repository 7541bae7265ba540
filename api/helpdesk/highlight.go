package helpdesk

import (
	"html"
	"strings"

	"github.com/business-suite/suite/models"
)

// highlight HTML-escapes a search snippet and turns its delimiters into
// <mark>…</mark>. The only markup in the result is balanced <mark> pairs:
// stray delimiters (a body may itself contain the characters) are dropped.
func highlight(s string) string {
	escaped := html.EscapeString(s)
	var b strings.Builder
	b.Grow(len(escaped) + 32)
	open := false
	for _, r := range escaped {
		switch r {
		case models.SearchMarkStart:
			if !open {
				b.WriteString("<mark>")
				open = true
			}
		case models.SearchMarkStop:
			if open {
				b.WriteString("</mark>")
				open = false
			}
		default:
			b.WriteRune(r)
		}
	}
	if open {
		b.WriteString("</mark>")
	}
	return b.String()
}
