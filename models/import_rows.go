package models

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Writing an import's rows: a batch checked row by row and handed to its
// object's writer (WriteImportRows), and what the writers share.

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
	erased, err := erasedAddresses(tx, imp.OrgID)
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
		problems := o.checkValues(&r)
		if len(problems) == 0 && len(erased) > 0 {
			problems = o.checkErased(imp.OrgID, &r, erased)
		}
		if len(problems) > 0 {
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

// erasedAddresses are the hashes (EmailHash) of orgID's addresses that
// intake refuses now; none, for nearly every organization.
func erasedAddresses(tx *gorm.DB, orgID string) (map[string]bool, error) {
	var hashes []string
	err := tx.Model(&Erasure{}).Where("org_id = ? AND blocked_until > ?", orgID, Now()).Pluck("email_hash", &hashes).Error
	return set(hashes...), err
}

// checkErased refuses r when an address of it was erased on request.
func (o *ImportObject) checkErased(orgID string, r *ImportRow, erased map[string]bool) []FieldError {
	var bad []FieldError
	for _, c := range o.Columns {
		if v := r.Values[c.Field]; c.Address && v != "" && erased[EmailHash(orgID, v)] {
			bad = append(bad, FieldError{Field: c.Field, Code: "address_erased", Message: "This address was erased on request."})
		}
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

// createdAt is r's imported creation time, or now.
func (w *importWriter) createdAt(r *ImportRow) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, r.Values["createdAt"]); err == nil && t.Before(w.now) {
		return t
	}
	return w.now
}
