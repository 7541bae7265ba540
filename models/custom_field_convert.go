package models

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Changing a custom field's type (issue 47): each stored value becomes a
// value of the new type where one reading of it fits, and is cleared
// where none does. The FieldChange workflow applies Convert to every
// object in batches (FieldChangeConvert); the definition's default is
// converted the same way when the change is asked for.

// Convert is v, a stored value, as a value of f's type: v itself when it
// already is one (so converting twice changes nothing, and a batch retried
// after its commit rewrites nothing again), else the first of its readings
// (convertCandidates) that f's check accepts; ok false when none does and
// the value is to be cleared.
func (f *CustomField) Convert(v any) (any, bool) {
	for _, c := range append([]any{v}, convertCandidates(v)...) {
		raw, err := json.Marshal(c)
		if err != nil {
			continue
		}
		if out, why := f.check(raw); why == "" {
			return out, true
		}
	}
	return nil, false
}

// convertCandidates are the readings of v as other types, most faithful
// first: a number or a bool as text and text as a number or a bool, a
// date and time as its date and a date as its midnight (UTC), a decimal
// rounded to a whole number, a list of options as one option or as text,
// a long text as its first 1,000 characters.
func convertCandidates(v any) []any {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		out := []any{s}
		if r := []rune(s); len(r) > 1000 { // long text as text: its start
			out = append(out, string(r[:1000]))
		}
		if n, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
			out = append(out, n, math.Round(n))
		}
		switch strings.ToLower(s) {
		case "true", "yes", "y", "on":
			out = append(out, true)
		case "false", "no", "n", "off":
			out = append(out, false)
		}
		if len(s) > 10 && s[10] == 'T' {
			out = append(out, s[:10])
		}
		if len(s) == 10 {
			out = append(out, s+"T00:00:00Z")
		}
		if s != "" {
			out = append(out, []string{s})
		}
		return out
	case float64:
		return []any{strconv.FormatFloat(x, 'f', -1, 64), math.Round(x), x != 0}
	case bool:
		return []any{strconv.FormatBool(x)}
	case []any:
		var parts []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			}
		}
		var out []any
		if len(parts) == 1 {
			out = append(out, parts[0])
		}
		if len(parts) > 0 {
			out = append(out, strings.Join(parts, ", "))
		}
		return out
	}
	return nil
}
