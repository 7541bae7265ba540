package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	"customers": &customerImport, "tickets": &ticketImport}

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

// ImportBatch is what a batch of rows did: its progress and its rows'
// problems.
type ImportBatch struct {
	Progress ImportProgress
	Errors   []ImportError
}

func (b *ImportBatch) fail(importID string, line int64, column, reason string) {
	b.Errors = append(b.Errors, ImportError{ImportID: importID, Line: line, Column: column, Reason: reason})
}

// failRow counts row line failed, for each of its problems.
func (b *ImportBatch) failRow(importID string, line int64, problems []FieldError) {
	for _, p := range problems {
		b.fail(importID, line, p.Field, p.Message)
	}
	b.Progress.Failed++
}

// WriteImportRows writes rows, a batch of imp's file, in tx: each row
// is checked (a bad one fails and the others go on) and created, or in
// an upsert updated when its key finds one; what each did goes into b.
// Nothing is emitted per row: imported rows set off no webhooks,
// automations or e-mail.
func WriteImportRows(tx *gorm.DB, imp *Import, rows []ImportRow, b *ImportBatch) error {
	o := ImportObjects[imp.Object]
	if o == nil {
		return fmt.Errorf("import %s: no object %s", imp.ID, imp.Object)
	}
	defs, err := FieldDefinitions(tx, imp.OrgID, o.FieldObject)
	if err != nil {
		return err
	}
	w := &importWriter{tx: tx, imp: imp, obj: o, defs: defs, batch: b, now: Now()}
	var good []ImportRow
	for _, r := range rows {
		if r.Blank() {
			b.Progress.Skipped++
			continue
		}
		if problems := o.checkValues(&r); len(problems) > 0 {
			b.failRow(imp.ID, r.Line, problems)
			continue
		}
		good = append(good, r)
	}
	b.Progress.Processed += int64(len(rows))
	return o.write(w, good)
}

// checkValues checks and normalizes r's own fields (not yet whether a
// created object has its required ones: an upsert's update need not).
func (o *ImportObject) checkValues(r *ImportRow) []FieldError {
	var bad []FieldError
	for _, field := range slices.Sorted(maps.Keys(r.Values)) {
		v := strings.TrimSpace(r.Values[field])
		c := o.Column(field)
		switch {
		case c == nil || v == "":
		case !utf8.ValidString(v):
			bad = append(bad, FieldError{Field: field, Code: "invalid", Message: "Not valid UTF-8."})
		case strings.ContainsRune(v, 0):
			bad = append(bad, FieldError{Field: field, Code: "invalid", Message: "Holds a NUL character."})
		case utf8.RuneCountInString(v) > c.Max:
			bad = append(bad, FieldError{Field: field, Code: "too_long", Message: fmt.Sprintf("At most %d characters.", c.Max)})
		case c.Check != nil:
			norm, why := c.Check(v)
			if why != "" {
				bad = append(bad, FieldError{Field: field, Code: "invalid", Message: why})
			}
			v = norm
		}
		r.Values[field] = v
	}
	return bad
}

// importWriter writes one batch of an import.
type importWriter struct {
	tx    *gorm.DB
	imp   *Import
	obj   *ImportObject
	defs  []CustomField
	batch *ImportBatch
	now   time.Time
}

// fields are a row's custom field values on an object that has current
// (nil for a new one), or its problems.
func (w *importWriter) fields(r *ImportRow, current FieldValues, creating bool) (FieldValues, []FieldError, error) {
	out, err := CheckFieldValues(w.tx, w.imp.OrgID, w.defs, current, r.Fields, creating)
	var domain *DomainError
	if errors.As(err, &domain) && errors.Is(domain.Kind, ErrInvalid) {
		return nil, domain.Fields, nil
	}
	return out, nil, err
}

// missing are the required fields a created row lacks.
func (w *importWriter) missing(r *ImportRow) []FieldError {
	var bad []FieldError
	for _, c := range w.obj.Columns {
		if c.Required && r.Values[c.Field] == "" {
			bad = append(bad, FieldError{Field: c.Field, Code: "required", Message: c.Field + " is required."})
		}
	}
	return bad
}

// key is the value of the upsert's key in r ("" in a create, or when the
// row has none).
func (w *importWriter) key(r *ImportRow) string {
	if w.imp.Mode != ModeUpsert {
		return ""
	}
	return r.Values[w.imp.UpsertKey]
}

// valuesOf are rows' values of field, but the empty ones.
func valuesOf(rows []ImportRow, field string) []string {
	var out []string
	for i := range rows {
		if v := rows[i].Values[field]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// members are those of ids that are members of the import's organization
// (not removed).
func (w *importWriter) members(ids []string) (map[string]bool, error) {
	return existing(w.tx, "members", w.imp.OrgID, ids, "status <> ?", MemberRemoved)
}

// keys are the upsert's keys of rows (none in a create).
func (w *importWriter) keys(rows []ImportRow) []string {
	if w.imp.Mode != ModeUpsert {
		return nil
	}
	return valuesOf(rows, w.imp.UpsertKey)
}

// setCell copies r's non-empty value of field into dst, telling whether it
// changed it.
func setCell(dst *string, r *ImportRow, field string) bool {
	v, ok := r.Values[field]
	if !ok || v == "" || *dst == v {
		return false
	}
	*dst = v
	return true
}

// importedTime reads an imported creation time (RFC 3339, or a date).
func importedTime(v string) (string, string) {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339Nano), ""
		}
	}
	return "", "A date and time, RFC 3339 (2006-01-02T15:04:05Z), or a date."
}

// createdAt is r's imported creation time, or now.
func (w *importWriter) createdAt(r *ImportRow) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, r.Values["createdAt"]); err == nil && t.Before(w.now) {
		return t
	}
	return w.now
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
