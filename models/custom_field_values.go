package models

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Custom field values: an object's Fields, their check by type, and the
// values a create or an update leaves (the definitions are in
// custom_fields.go, the lists' filters in custom_field_filters.go).

// FieldValues are an object's custom field values by key, stored as a
// JSON object ({} when none).
type FieldValues map[string]any

// Value stores v as JSON.
func (v FieldValues) Value() (driver.Value, error) {
	if v == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]any(v))
	return string(b), err
}

// Scan reads the stored JSON.
func (v *FieldValues) Scan(src any) error {
	var raw []byte
	switch s := src.(type) {
	case nil:
		*v = FieldValues{}
		return nil
	case string:
		raw = []byte(s)
	case []byte:
		raw = s
	default:
		return fmt.Errorf("FieldValues: cannot scan %T", src)
	}
	// Most objects have no custom fields: their stored {} needs no
	// decoding (encoding/json's was 8 % of a list page's CPU, 25 rows).
	if string(raw) == "{}" {
		*v = FieldValues{}
		return nil
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	*v = m
	return nil
}

// Clone is a copy of v (never nil): a view's values, which an update of
// the object must not change.
func (v FieldValues) Clone() map[string]any {
	if v == nil {
		return map[string]any{}
	}
	return maps.Clone(map[string]any(v))
}

// Equal tells whether v and o hold the same values (as JSON: a list read
// back from the database equals the one it was written as).
func (v FieldValues) Equal(o FieldValues) bool {
	if len(v) != len(o) {
		return false
	}
	a, errA := json.Marshal(v)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && string(a) == string(b)
}

// check reads raw, a value of f, in its stored form; why says what is
// wrong with it ("" when nothing is).
func (f *CustomField) check(raw json.RawMessage) (any, string) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, "Not a JSON value."
	}
	str, isString := v.(string)
	num, isNumber := v.(float64)
	switch f.Type {
	case FieldText, FieldLongText:
		limit := 1000
		if f.Type == FieldLongText {
			limit = 65_535
		}
		if !isString || utf8.RuneCountInString(str) > limit {
			return nil, fmt.Sprintf("A string of at most %d characters.", limit)
		}
		return str, ""
	case FieldNumber:
		if !isNumber || num != math.Trunc(num) || math.Abs(num) > 1<<53 {
			return nil, "A whole number."
		}
		return num, ""
	case FieldDecimal:
		if !isNumber {
			return nil, "A number."
		}
		return num, ""
	case FieldBool:
		if _, ok := v.(bool); !ok {
			return nil, "true or false."
		}
		return v, ""
	case FieldDate:
		if _, err := time.Parse(time.DateOnly, str); !isString || err != nil {
			return nil, "A date, 2006-01-02."
		}
		return str, ""
	case FieldDateTime:
		t, err := time.Parse(time.RFC3339, str)
		if !isString || err != nil {
			return nil, "A date and time, RFC 3339 (2006-01-02T15:04:05Z)."
		}
		// Stored in UTC to the second: stored values sort as strings.
		return t.UTC().Format("2006-01-02T15:04:05Z"), ""
	case FieldSelect:
		if !isString || !slices.Contains(f.OptionList(), str) {
			return nil, "One of " + strings.Join(f.OptionList(), ", ") + "."
		}
		return str, ""
	case FieldMultiSelect:
		list, ok := v.([]any)
		if !ok {
			return nil, "A list of options: " + strings.Join(f.OptionList(), ", ") + "."
		}
		var out []string
		for _, x := range list {
			s, ok := x.(string)
			if !ok || !slices.Contains(f.OptionList(), s) {
				return nil, "A list of options: " + strings.Join(f.OptionList(), ", ") + "."
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out, ""
	case FieldURL:
		u, err := url.Parse(str)
		if !isString || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(str) > 2000 {
			return nil, "An http or https URL."
		}
		return str, ""
	case FieldEmail:
		a, err := mail.ParseAddress(str)
		if !isString || err != nil || a.Name != "" || len(str) > 254 {
			return nil, "An e-mail address."
		}
		return NormalizeEmail(a.Address), ""
	case FieldPhone:
		n := NormalizePhone(str)
		if !isString || n == "" {
			return nil, "A phone number (stored in E.164: +14155550100)."
		}
		return n, ""
	case FieldMember:
		if !isString || !ValidID(str) {
			return nil, "A member's id."
		}
		return str, ""
	}
	return nil, "Unknown type " + f.Type + "."
}

// defaultValue is f's default as a value (ok false: it has none).
func (f *CustomField) defaultValue() (any, bool) {
	if f.DefaultValue == nil {
		return nil, false
	}
	var v any
	return v, json.Unmarshal([]byte(*f.DefaultValue), &v) == nil
}

// CheckFieldValues applies sent — a create's or an update's "fields": key
// to value, null clearing one — to current, an object's values, against
// defs, its object's definitions: a new object (creating) gets each
// field's default and must have each required one. It returns the new
// values, or a 422 naming each bad "fields.<key>". A member field's member
// is looked up in tx.
func CheckFieldValues(tx *gorm.DB, orgID string, defs []CustomField, current FieldValues, sent map[string]json.RawMessage, creating bool) (FieldValues, error) {
	out := FieldValues(current.Clone())
	var bad []FieldError
	byKey := map[string]*CustomField{}
	for i := range defs {
		if defs[i].Status == FieldActive {
			byKey[defs[i].Key] = &defs[i]
		}
	}
	if creating {
		for _, f := range byKey {
			if v, ok := f.defaultValue(); ok {
				out[f.Key] = v
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(sent)) {
		raw := sent[key]
		f, ok := byKey[key]
		if !ok {
			bad = append(bad, FieldError{Field: "fields." + key, Code: "unknown_field", Message: "No custom field " + key + " on this object."})
			continue
		}
		if string(raw) == "null" {
			delete(out, key)
			continue
		}
		v, why := f.check(raw)
		if why != "" {
			bad = append(bad, FieldError{Field: "fields." + key, Code: "invalid", Message: why})
			continue
		}
		if f.Type == FieldMember {
			id := v.(string)
			var domain *DomainError
			err := CheckMember(tx, orgID, "fields."+key, &id)
			switch {
			case errors.As(err, &domain) && errors.Is(domain.Kind, ErrInvalid):
				bad = append(bad, domain.Fields...)
			case err != nil:
				return nil, err
			}
		}
		out[key] = v
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		f := byKey[key]
		_, set := out[key]
		_, sentNow := sent[key]
		if f.Required && !set && (creating || sentNow) {
			bad = append(bad, FieldError{Field: "fields." + key, Code: "required", Message: f.Label + " is required."})
		}
	}
	if len(bad) > 0 {
		return nil, Invalid(bad...)
	}
	return out, nil
}

// ApplyFields is an object's custom field values after a create or an
// update that sent sent (nil: none) — checked against orgID's definitions
// of object, with the defaults and the required fields of a new object
// (creating; CheckFieldValues). An update that sent none keeps current
// and reads nothing.
func ApplyFields(tx *gorm.DB, orgID, object string, current FieldValues, sent map[string]json.RawMessage, creating bool) (FieldValues, error) {
	if sent == nil && !creating {
		return current, nil
	}
	defs, err := FieldDefinitions(tx, orgID, object)
	if err != nil {
		return nil, err
	}
	return CheckFieldValues(tx, orgID, defs, current, sent, creating)
}

// FieldDefaults are the default values of orgID's custom fields of object:
// what an object the suite creates itself (a ticket from an e-mail, its
// requester's customer) starts with.
func FieldDefaults(tx *gorm.DB, orgID, object string) (FieldValues, error) {
	var defs []CustomField
	err := tx.Where("org_id = ? AND object = ? AND status = ? AND default_value IS NOT NULL", orgID, object, FieldActive).Find(&defs).Error
	out := FieldValues{}
	for _, f := range defs {
		if v, ok := f.defaultValue(); ok {
			out[f.Key] = v
		}
	}
	return out, err
}

// AnyFieldRule is a query, on an organization's id and an object, that
// finds a row when the organization has a custom field of the object
// with a default or required: a create in one statement
// (database.InsertUnless) without one needs no definition read.
const AnyFieldRule = "SELECT 1 FROM custom_fields WHERE org_id = ? AND object = ? AND status = 'active' AND (required OR default_value IS NOT NULL)"
