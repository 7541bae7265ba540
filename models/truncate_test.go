package models

import (
	"testing"
	"unicode/utf8"
)

// Truncate keeps a column's bound in bytes and never cuts a character in
// two (PostgreSQL refuses invalid UTF-8 in text).
func TestTruncateCutsAtACharacterBoundary(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"café au lait", 4, "caf"}, // "é" is two bytes: not cut in two
		{"café au lait", 5, "café"},
		{"bad \xff byte", 100, "bad  byte"},
		{"", 3, ""},
	} {
		got := Truncate(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
