package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// ImportRow is one row of an import's file, by field: the object's own
// fields as text, its custom fields ("fields.<key>") as JSON values.
type ImportRow struct {
	Line   int64
	Values map[string]string
	Fields map[string]json.RawMessage
}

// Blank tells whether the row has no value at all (a blank line of a
// spreadsheet): it is skipped.
func (r *ImportRow) Blank() bool {
	for _, v := range r.Values {
		if v != "" {
			return false
		}
	}
	return len(r.Fields) == 0
}

// ImportColumn is one of an object's own fields that an import sets.
type ImportColumn struct {
	Field string
	// Max is the longest value, in characters.
	Max int
	// Required on a created object.
	Required bool
	// Check, when set, normalizes a non-empty value or says why it is
	// wrong.
	Check func(string) (string, string)
	// Address: the value is a person's e-mail address, refused while it
	// is erased (AddressErased).
	Address bool
}

// ImportObject is an object that imports and exports: its fields, the
// keys an upsert finds a row by, and how a batch of rows is written.
type ImportObject struct {
	// Name is the object as the routes name it ("contacts"), App the
	// interface that imports it, FieldObject its custom fields' object.
	Name, App, FieldObject string
	Columns                []ImportColumn
	// Keys are the fields an upsert may find an existing row by.
	Keys []string
	// Ignored are fields an export writes that an import does not set
	// (the id, the links, the times the suite keeps): a file exported
	// imports as it is.
	Ignored []string
	// Aliases are names the API shows a field by that an import takes
	// for it (a ticket's email is its requesterEmail).
	Aliases map[string]string
	write   func(w *importWriter, rows []ImportRow) error
	// ExportColumns are the fields an export writes by default, in order
	// (then the custom fields), Filters the list filters an export takes
	// besides the custom fields', and narrow applies them.
	ExportColumns []string
	Filters       []string
	narrow        func(q *gorm.DB, filters map[string]string) *gorm.DB
}

// ExportQuery is the rows of orgID's object that an export with filters
// writes, oldest first (the list's index, read forwards).
func (o *ImportObject) ExportQuery(tx *gorm.DB, orgID string, filters map[string]string) (*gorm.DB, error) {
	q := o.narrow(tx.Where("org_id = ?", orgID), filters)
	byField, err := FieldFilters(tx, orgID, o.FieldObject, filters)
	if err != nil {
		return nil, err
	}
	return byField(q).Order("created_at, id"), nil
}

// DefaultExportColumns are the columns an export writes when it names
// none: the object's fields, then its custom fields.
func (o *ImportObject) DefaultExportColumns(defs []CustomField) []string {
	out := slices.Clone(o.ExportColumns)
	for _, d := range defs {
		if d.Status == FieldActive {
			out = append(out, "fields."+d.Key)
		}
	}
	return out
}

// ImportObjects are the objects that import and export, by name.
var ImportObjects = map[string]*ImportObject{"contacts": &contactImport, "deals": &dealImport, "leads": &leadImport, "tasks": &taskImport,
	"customers": &customerImport, "tickets": &ticketImport, "articles": &articleImport}

// ImportObjectsOf are the names of the objects app imports.
func ImportObjectsOf(app string) []string {
	var out []string
	for name, o := range ImportObjects {
		if o.App == app {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Column is the object's column of field (nil: none).
func (o *ImportObject) Column(field string) *ImportColumn {
	for i := range o.Columns {
		if o.Columns[i].Field == field {
			return &o.Columns[i]
		}
	}
	return nil
}

// FieldNames are the fields an import may map a column to.
func (o *ImportObject) FieldNames(defs []CustomField) []string {
	var out []string
	for _, c := range o.Columns {
		out = append(out, c.Field)
	}
	for _, d := range defs {
		if d.Status == FieldActive {
			out = append(out, "fields."+d.Key)
		}
	}
	return out
}

// Target is the field a column or key named name sets under mapping: the
// mapping's, else the field of that name (case-insensitive); "" for one
// that sets nothing (mapped to "", or a field an import ignores), and ok
// false for a name that is no field.
func (o *ImportObject) Target(name string, mapping map[string]string, defs []CustomField) (string, bool) {
	if to, mapped := mapping[name]; mapped {
		name = to
		if to == "" {
			return "", true
		}
	}
	if alias, ok := o.Aliases[name]; ok {
		name = alias
	}
	for _, f := range o.FieldNames(defs) {
		if strings.EqualFold(f, name) {
			return f, true
		}
	}
	for _, f := range o.Ignored {
		if strings.EqualFold(f, name) {
			return "", true
		}
	}
	return "", false
}

// CheckImportSetup checks an import's object, mode, key and mapping
// against the file's header (columns, CSV; nil for NDJSON, whose keys
// are read row by row) and defs, the object's custom fields: every bad
// part in one 422, before anything is written.
func (o *ImportObject) CheckImportSetup(mode, key string, mapping map[string]string, columns []string, defs []CustomField) error {
	var bad []FieldError
	names := o.FieldNames(defs)
	for _, from := range slices.Sorted(maps.Keys(mapping)) {
		to := mapping[from]
		if to != "" && !slices.ContainsFunc(names, func(f string) bool { return strings.EqualFold(f, to) }) {
			bad = append(bad, FieldError{Field: "mapping." + from, Code: "unknown_field",
				Message: fmt.Sprintf("No field %q on %s; the fields are %s.", to, o.Name, strings.Join(names, ", "))})
		}
		if columns != nil && !slices.Contains(columns, from) {
			bad = append(bad, FieldError{Field: "mapping." + from, Code: "unknown_column", Message: fmt.Sprintf("The file has no column %q.", from)})
		}
	}
	set := map[string]bool{}
	for i, col := range columns {
		to, ok := o.Target(col, mapping, defs)
		if !ok {
			bad = append(bad, FieldError{Field: "file", Code: "unknown_column", Message: fmt.Sprintf(
				"Column %d, %q, is no field of %s: map it to one of %s, or to \"\" to leave it out.", i+1, col, o.Name, strings.Join(names, ", "))})
		}
		if set[to] && to != "" {
			bad = append(bad, FieldError{Field: "file", Code: "duplicate_column", Message: fmt.Sprintf("Two columns set %s.", to)})
		}
		set[to] = true
	}
	if columns != nil && mode == ModeCreate {
		for _, c := range o.Columns {
			if c.Required && !set[c.Field] {
				bad = append(bad, FieldError{Field: "file", Code: "missing_column", Message: fmt.Sprintf("No column sets %s, which every %s needs.", c.Field, o.Name)})
			}
		}
	}
	if mode == ModeUpsert {
		switch {
		case len(o.Keys) == 0:
			bad = append(bad, FieldError{Field: "mode", Code: "invalid", Message: fmt.Sprintf("%s import as new rows only (mode create).", o.Name)})
		case !slices.Contains(o.Keys, key):
			bad = append(bad, FieldError{Field: "key", Code: "invalid", Message: "An upsert finds rows by one of " + strings.Join(o.Keys, ", ") + "."})
		case columns != nil && !set[key]:
			bad = append(bad, FieldError{Field: "key", Code: "missing_column", Message: fmt.Sprintf("No column sets %s, the upsert's key.", key)})
		}
	}
	if len(bad) > 0 {
		return Invalid(bad...)
	}
	return nil
}
