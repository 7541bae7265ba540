package models

import (
	"encoding/json"
	"net/mail"
	"strconv"
	"strings"
	"time"
)

// An import's cells: the checks that normalize an object's own values
// (ImportColumn.Check), and a custom field's value to and from a CSV cell.

// importedTime reads an imported creation time (RFC 3339, or a date).
func importedTime(v string) (string, string) {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339Nano), ""
		}
	}
	return "", "A date and time, RFC 3339 (2006-01-02T15:04:05Z), or a date."
}

// importedEmail normalizes an e-mail address.
func importedEmail(v string) (string, string) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" {
		return "", "Must be a valid e-mail address."
	}
	return NormalizeEmail(a.Address), ""
}

// oneOf accepts the values given, in any case.
func oneOf(values ...string) func(string) (string, string) {
	return func(v string) (string, string) {
		for _, ok := range values {
			if strings.EqualFold(v, ok) {
				return ok, ""
			}
		}
		return "", "One of " + strings.Join(values, ", ") + "."
	}
}

// anID accepts an id.
func anID(v string) (string, string) {
	if !ValidID(v) {
		return "", "Not an id."
	}
	return strings.ToLower(v), ""
}

// ImportCell is a CSV cell as the JSON value of custom field f: a number
// for a number, true/false for a bool (true, yes, 1 / false, no, 0), a
// list for a multiselect (options separated by ";"), a string otherwise.
// A value that is none of those stays a string, and the field's check
// says why.
func ImportCell(f *CustomField, cell string) json.RawMessage {
	var v any = cell
	switch f.Type {
	case FieldNumber, FieldDecimal:
		if n, err := strconv.ParseFloat(cell, 64); err == nil {
			v = n
		}
	case FieldBool:
		switch strings.ToLower(cell) {
		case "true", "yes", "1":
			v = true
		case "false", "no", "0":
			v = false
		}
	case FieldMultiSelect:
		list := []string{}
		for _, s := range strings.Split(cell, ";") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		v = list
	}
	raw, _ := json.Marshal(v)
	return raw
}

// ExportCell is custom field value v as a CSV cell: ImportCell's inverse.
func ExportCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = ExportCell(p)
		}
		return strings.Join(parts, ";")
	case []string:
		return strings.Join(x, ";")
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}
