package models

import (
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// A list's order by a custom field (?sort=fields.<key>, or
// -fields.<key> for the highest first): the objects with a value first,
// by value then id, then those without one, by id. The filters are in
// custom_field_filters.go.

// HasFieldValues is an object that takes custom fields.
type HasFieldValues interface {
	CustomFieldValues() FieldValues
}

func (c *Contact) CustomFieldValues() FieldValues  { return c.Fields }
func (d *Deal) CustomFieldValues() FieldValues     { return d.Fields }
func (l *Lead) CustomFieldValues() FieldValues     { return l.Fields }
func (t *Ticket) CustomFieldValues() FieldValues   { return t.Fields }
func (c *Customer) CustomFieldValues() FieldValues { return c.Fields }

// How a field's values compare.
const (
	sortText = iota
	sortNumber
	sortBool
)

// FieldOrder is a list's order by one custom field.
type FieldOrder struct {
	// Param is the sort parameter it was read from, which a page's cursor
	// names (a cursor of another order is refused).
	Param string
	Desc  bool
	key   string
	kind  int
	// expr is the value as SQL: only a value of the field's own JSON type
	// (a number, a bool, a string), else NULL — a value not yet converted
	// by a change of the field's type sorts as none, and never fails a
	// cast.
	expr string
}

// FieldSort reads a list's ?sort= (param, "" for none) of object's
// custom fields: fields.<key> or -fields.<key>; any other is a 422 on
// sort. A multiselect, a list of values, does not order.
func FieldSort(tx *gorm.DB, orgID, object, param string) (*FieldOrder, error) {
	if param == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return Invalid(FieldError{Field: "sort", Code: "invalid", Message: why})
	}
	key, ok := strings.CutPrefix(strings.TrimPrefix(param, "-"), "fields.")
	if !ok || !fieldKey.MatchString(key) {
		return nil, bad("fields.<key>, or -fields.<key> for the highest first.")
	}
	defs, err := FieldDefinitions(tx, orgID, object)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(defs, func(d CustomField) bool { return d.Key == key })
	switch {
	case i < 0:
		return nil, bad("No custom field " + key + " on this object.")
	case defs[i].Type == FieldMultiSelect:
		return nil, bad(key + " is a multiselect, a list of options, and does not order a list.")
	}
	o := &FieldOrder{Param: param, Desc: strings.HasPrefix(param, "-"), key: key}
	switch defs[i].Type {
	case FieldNumber, FieldDecimal:
		o.kind = sortNumber
	case FieldBool:
		o.kind = sortBool
	}
	o.expr = typedValue(key, o.kind, database.DialectFor(tx) == database.SQLite)
	return o, nil
}

// typedValue is the SQL of the value of key, a defined field's (of
// [a-z0-9_] only: it is inlined), when it is of kind's JSON type — a
// string, a number or a bool — and NULL otherwise: a value a change of
// the field's type has not converted yet sorts as none, matches no range,
// and fails no cast.
func typedValue(key string, kind int, sqlite bool) string {
	if sqlite {
		path := "'$." + key + "'"
		types := map[int]string{sortText: "= 'text'", sortNumber: "IN ('integer', 'real')", sortBool: "IN ('true', 'false')"}[kind]
		return "(CASE WHEN json_type(fields, " + path + ") " + types + " THEN json_extract(fields, " + path + ") END)"
	}
	value := map[int]string{sortText: "fields ->> '" + key + "'", sortNumber: "CAST(fields ->> '" + key + "' AS numeric)",
		sortBool: "CAST(fields ->> '" + key + "' AS boolean)"}[kind]
	jsonType := map[int]string{sortText: "string", sortNumber: "number", sortBool: "boolean"}[kind]
	return "(CASE WHEN jsonb_typeof(fields -> '" + key + "') = '" + jsonType + "' THEN " + value + " END)"
}

// Value is the value an object with values v sorts by (nil: none), as
// the page's cursor keeps it.
func (o *FieldOrder) Value(v FieldValues) any {
	switch x := v[o.key].(type) {
	case string:
		if o.kind == sortText {
			return x
		}
	case float64:
		if o.kind == sortNumber {
			return x
		}
	case bool:
		if o.kind == sortBool {
			return x
		}
	}
	return nil
}

// ValidCursorValue tells whether a cursor's value (as JSON decoded it)
// can be a value of this order.
func (o *FieldOrder) ValidCursorValue(v any) bool {
	return v == nil || o.Value(FieldValues{o.key: v}) != nil
}

// Order orders q by the field, then by id.
func (o *FieldOrder) Order(q *gorm.DB) *gorm.DB {
	dir := " ASC"
	if o.Desc {
		dir = " DESC"
	}
	return q.Order(o.expr + dir + " NULLS LAST, id" + dir)
}

// After narrows q to the objects after the one with sort value value
// (nil: none) and id.
func (o *FieldOrder) After(q *gorm.DB, value any, id string) *gorm.DB {
	cmp := ">"
	if o.Desc {
		cmp = "<"
	}
	if value == nil {
		return q.Where(o.expr+" IS NULL AND id "+cmp+" ?", id)
	}
	if database.DialectFor(q) == database.SQLite {
		value = sqliteValue(value)
	}
	return q.Where("("+o.expr+" "+cmp+" ? OR ("+o.expr+" = ? AND id "+cmp+" ?) OR "+o.expr+" IS NULL)", value, value, id)
}

// sqliteValue is v as SQLite's JSON functions give it back: a bool as 1
// or 0, anything else as it is.
func sqliteValue(v any) any {
	if b, ok := v.(bool); ok {
		return map[bool]int{false: 0, true: 1}[b]
	}
	return v
}
