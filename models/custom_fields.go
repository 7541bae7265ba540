package models

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// Custom fields (issue 47): an organization's own fields on its contacts,
// deals, leads, tickets and customers. A CustomField defines one; the
// values are in each object's Fields, a JSON object keyed by the fields'
// keys, checked against the definitions when a create or an update sends
// them (CheckFieldValues).

// The types a custom field takes.
const (
	FieldText        = "text"
	FieldLongText    = "long_text"
	FieldNumber      = "number"
	FieldDecimal     = "decimal"
	FieldBool        = "bool"
	FieldDate        = "date"
	FieldDateTime    = "datetime"
	FieldSelect      = "select"
	FieldMultiSelect = "multiselect"
	FieldURL         = "url"
	FieldEmail       = "email"
	FieldPhone       = "phone"
	FieldMember      = "member"
)

// FieldTypes are the types a custom field takes.
var FieldTypes = []string{FieldText, FieldLongText, FieldNumber, FieldDecimal, FieldBool, FieldDate, FieldDateTime, FieldSelect,
	FieldMultiSelect, FieldURL, FieldEmail, FieldPhone, FieldMember}

// FieldObjects are the objects that take custom fields.
var FieldObjects = []string{AutomationContact, AutomationDeal, AutomationLead, AutomationTicket, AutomationCustomer}

// A definition's status: active, or being deleted (its values are removed
// by its FieldChange workflow; until then they show, and no write may set
// them).
const (
	FieldActive   = "active"
	FieldDeleting = "deleting"
)

// CustomField is the definition of an organization's custom field.
type CustomField struct {
	ID     string `gorm:"primaryKey"`
	OrgID  string
	Object string
	Key    string
	Label  string
	Type   string
	// Options are a select's choices, a JSON array of strings.
	Options  string
	Required bool
	// DefaultValue is the JSON value a new object gets (nil: none).
	DefaultValue *string
	Description  string
	Status       string
	// Progress is a FieldChange's progress, JSON (FieldProgress), "" when
	// none runs.
	Progress  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FieldChangeInput names the field whose values are rewritten.
type FieldChangeInput struct {
	OrgID   string `json:"orgId"`
	FieldID string `json:"fieldId"`
	Object  string `json:"object"`
	Key     string `json:"key"`
	// After is the id the next batch starts after ("" at the start), and
	// Rewritten how many objects the batches before it rewrote: a run
	// continued as new goes on from there.
	After     string `json:"after"`
	Rewritten int    `json:"rewritten"`
}

// FieldProgress is how far a FieldChange has rewritten the stored values.
type FieldProgress struct {
	Rewritten int    `json:"rewritten"`
	Change    string `json:"change"`
}

// OptionList is the definition's options.
func (f *CustomField) OptionList() []string {
	var out []string
	_ = json.Unmarshal([]byte(f.Options), &out)
	return out
}

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
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}

// fieldKey is the form of a field's key.
var fieldKey = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// Custom field limits: definitions an organization may have, by plan.
var fieldLimits = map[string]int{PlanFree: 10, PlanStarter: 50, PlanBusiness: 200, PlanEnterprise: 500}

// FieldLimit is how many custom fields an organization on plan may define.
func FieldLimit(plan string) int {
	if n, ok := fieldLimits[plan]; ok {
		return n
	}
	return fieldLimits[PlanFree]
}

// FieldDefinition is a definition as the API takes it.
type FieldDefinition struct {
	Object      string          `json:"object"`
	Key         string          `json:"key"`
	Label       string          `json:"label"`
	Type        string          `json:"type"`
	Options     []string        `json:"options"`
	Required    bool            `json:"required"`
	Default     json.RawMessage `json:"default"`
	Description string          `json:"description"`
}

// Validate checks d (a new field, or an edit when existing is set: its
// object, key and type stay; options may be added, not taken away),
// naming each bad field.
func (d *FieldDefinition) Validate(existing *CustomField) []FieldError {
	var bad []FieldError
	add := func(field, code, format string, args ...any) {
		bad = append(bad, FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if existing == nil {
		if !slices.Contains(FieldObjects, d.Object) {
			add("object", "oneof", "One of %s.", strings.Join(FieldObjects, ", "))
		}
		if !fieldKey.MatchString(d.Key) {
			add("key", "pattern", "A key of 1 to 40 lowercase letters, digits and underscores, starting with a letter.")
		}
		if !slices.Contains(FieldTypes, d.Type) {
			add("type", "oneof", "One of %s.", strings.Join(FieldTypes, ", "))
		}
	}
	if l := strings.TrimSpace(d.Label); l == "" || utf8.RuneCountInString(l) > 100 {
		add("label", "required", "A label of 1 to 100 characters.")
	}
	if utf8.RuneCountInString(d.Description) > 500 {
		add("description", "max", "At most 500 characters.")
	}
	selects := d.Type == FieldSelect || d.Type == FieldMultiSelect
	switch {
	case selects && (len(d.Options) == 0 || len(d.Options) > 200):
		add("options", "required", "A select takes 1 to 200 options.")
	case !selects && len(d.Options) > 0:
		add("options", "not_allowed", "Only a select or a multiselect takes options.")
	}
	for i, o := range d.Options {
		if strings.TrimSpace(o) == "" || utf8.RuneCountInString(o) > 100 || slices.Index(d.Options, o) != i {
			add(fmt.Sprintf("options[%d]", i), "option", "Options of 1 to 100 characters, each once.")
		}
	}
	if existing != nil {
		for _, o := range existing.OptionList() {
			if !slices.Contains(d.Options, o) {
				add("options", "option_removed", "Option %q is kept: options may be added to a field, not taken away (a value may hold it).", o)
			}
		}
	}
	if len(bad) == 0 && len(d.Default) > 0 && string(d.Default) != "null" {
		def := CustomField{Key: d.Key, Type: d.Type, Options: jsonString(d.Options)}
		if _, why := def.check(d.Default); why != "" {
			add("default", "invalid", "%s", why)
		}
	}
	return bad
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Definition is f as the API takes it (an edit starts from it).
func (f *CustomField) Definition() FieldDefinition {
	d := FieldDefinition{Object: f.Object, Key: f.Key, Label: f.Label, Type: f.Type, Options: f.OptionList(), Required: f.Required,
		Description: f.Description}
	if f.DefaultValue != nil {
		d.Default = json.RawMessage(*f.DefaultValue)
	}
	return d
}

// Apply sets f from d (its options, default and the rest).
func (d *FieldDefinition) Apply(f *CustomField) {
	f.Label, f.Description, f.Required = strings.TrimSpace(d.Label), d.Description, d.Required
	f.Options = jsonString(append([]string{}, d.Options...))
	f.DefaultValue = nil
	if len(d.Default) > 0 && string(d.Default) != "null" {
		v, _ := f.check(d.Default)
		s := jsonString(v)
		f.DefaultValue = &s
	}
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

// FieldDefinitions are orgID's active custom fields of object.
func FieldDefinitions(tx *gorm.DB, orgID, object string) ([]CustomField, error) {
	var defs []CustomField
	err := tx.Where("org_id = ? AND object = ?", orgID, object).Order("created_at, id").Find(&defs).Error
	return defs, err
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
			if f.DefaultValue != nil {
				var v any
				_ = json.Unmarshal([]byte(*f.DefaultValue), &v)
				out[f.Key] = v
			}
		}
	}
	for _, key := range sortedKeys(sent) {
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
	for _, key := range sortedKeys(byKey) {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
		var v any
		if json.Unmarshal([]byte(*f.DefaultValue), &v) == nil {
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

// fieldFilter is the form of a list's custom field filter parameter:
// fields.<key>, or fields.<key>[op] for a range.
var fieldFilter = regexp.MustCompile(`^fields\.([a-z][a-z0-9_]{0,39})(?:\[(gte|lte|gt|lt)\])?$`)

// rangeOps are the range filters' operators, as SQL.
var rangeOps = map[string]string{"gte": ">=", "lte": "<=", "gt": ">", "lt": "<"}

// FieldFilters narrows a list of object to the custom field filters among
// params (a list's query parameters): fields.<key>=v (equality; for a
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
	case sqlite:
		sqlOp := "="
		if op != "" {
			sqlOp = rangeOps[op]
		}
		if b, ok := value.(bool); ok {
			value = map[bool]int{false: 0, true: 1}[b]
		}
		return func(q *gorm.DB) *gorm.DB { return q.Where("json_extract(fields, ?) "+sqlOp+" ?", "$."+f.Key, value) }
	case op == "":
		doc := map[string]any{f.Key: value}
		if f.Type == FieldMultiSelect {
			doc[f.Key] = []any{value}
		}
		return func(q *gorm.DB) *gorm.DB { return q.Where("fields @> CAST(? AS jsonb)", jsonString(doc)) }
	case numeric:
		return func(q *gorm.DB) *gorm.DB {
			return q.Where("CAST(fields ->> CAST(? AS text) AS numeric) "+rangeOps[op]+" ?", f.Key, value)
		}
	}
	return func(q *gorm.DB) *gorm.DB {
		return q.Where("fields ->> CAST(? AS text) "+rangeOps[op]+" ?", f.Key, value)
	}
}
