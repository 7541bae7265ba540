package models

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// The lists' filters by custom field (the values are in
// custom_field_values.go).

// fieldFilter is the form of a list's custom field filter parameter:
// fields.<key>, or fields.<key>[op] for a range.
var fieldFilter = regexp.MustCompile(`^fields\.([a-z][a-z0-9_]{0,39})(?:\[(gte|lte|gt|lt)\])?$`)

// rangeOps are the range filters' operators, as SQL.
var rangeOps = map[string]string{"gte": ">=", "lte": "<=", "gt": ">", "lt": "<"}

// FieldFilters narrows a list of object to the custom field filters in
// params (a list's query parameters named fields.…): fields.<key>=v (equality; for a
// multiselect, holds v) and fields.<key>[gte|lte|gt|lt]=v (numbers, dates
// and times). A parameter naming no field of object, a bad value or a
// range on a field that has none is a 422 naming the parameter. On
// PostgreSQL equality is a jsonb containment (fields @> …), served by the
// table's GIN index; on SQLite, json_extract.
func FieldFilters(tx *gorm.DB, orgID, object string, params map[string]string) (func(*gorm.DB) *gorm.DB, error) {
	var names []string
	for name := range params {
		if strings.HasPrefix(name, "fields.") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return func(q *gorm.DB) *gorm.DB { return q }, nil
	}
	slices.Sort(names)
	defs, err := FieldDefinitions(tx, orgID, object)
	if err != nil {
		return nil, err
	}
	sqlite := database.DialectFor(tx) == database.SQLite
	var bad []FieldError
	var where []func(*gorm.DB) *gorm.DB
	for _, name := range names {
		m := fieldFilter.FindStringSubmatch(name)
		var f *CustomField
		if m != nil {
			if i := slices.IndexFunc(defs, func(d CustomField) bool { return d.Key == m[1] }); i >= 0 {
				f = &defs[i]
			}
		}
		if f == nil {
			bad = append(bad, FieldError{Field: name, Code: "unknown_field", Message: "Not a custom field of this object: fields.<key> or fields.<key>[gte|lte|gt|lt]."})
			continue
		}
		op := m[2]
		value, why := f.queryValue(params[name], op != "")
		if why != "" {
			bad = append(bad, FieldError{Field: name, Code: "invalid", Message: why})
			continue
		}
		where = append(where, fieldCondition(f, op, value, sqlite))
	}
	if len(bad) > 0 {
		return nil, Invalid(bad...)
	}
	return func(q *gorm.DB) *gorm.DB {
		for _, w := range where {
			q = w(q)
		}
		return q
	}, nil
}

// queryValue reads a filter's value (a query parameter's text) as a value
// of f; a range (ranged) only on numbers, dates and times.
func (f *CustomField) queryValue(text string, ranged bool) (any, string) {
	orderable := slices.Contains([]string{FieldNumber, FieldDecimal, FieldDate, FieldDateTime}, f.Type)
	if ranged && !orderable {
		return nil, "A range compares numbers, dates and times; " + f.Key + " is a " + f.Type + "."
	}
	var raw json.RawMessage
	switch f.Type {
	case FieldNumber, FieldDecimal, FieldBool:
		raw = json.RawMessage(text)
	case FieldMultiSelect:
		raw, _ = json.Marshal([]string{text})
	default:
		raw, _ = json.Marshal(text)
	}
	v, why := f.check(raw)
	if why != "" {
		return nil, why
	}
	if f.Type == FieldMultiSelect {
		return text, ""
	}
	return v, ""
}

// fieldCondition is the WHERE of one filter.
func fieldCondition(f *CustomField, op string, value any, sqlite bool) func(*gorm.DB) *gorm.DB {
	numeric := f.Type == FieldNumber || f.Type == FieldDecimal
	switch {
	case sqlite && f.Type == FieldMultiSelect:
		return func(q *gorm.DB) *gorm.DB {
			return q.Where("EXISTS (SELECT 1 FROM json_each(fields, ?) WHERE value = ?)", "$."+f.Key, value)
		}
	case op != "":
		// A range, on numbers, dates or times: only a value of the
		// field's JSON type compares (typedValue).
		kind := sortText
		if numeric {
			kind = sortNumber
		}
		return func(q *gorm.DB) *gorm.DB {
			return q.Where(typedValue(f.Key, kind, sqlite)+" "+rangeOps[op]+" ?", value)
		}
	case sqlite:
		value = sqliteValue(value)
		return func(q *gorm.DB) *gorm.DB { return q.Where("json_extract(fields, ?) = ?", "$."+f.Key, value) }
	}
	doc := map[string]any{f.Key: value}
	if f.Type == FieldMultiSelect {
		doc[f.Key] = []any{value}
	}
	return func(q *gorm.DB) *gorm.DB { return q.Where("fields @> CAST(? AS jsonb)", jsonString(doc)) }
}
