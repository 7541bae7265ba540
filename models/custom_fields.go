package models

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Custom fields (issue 47): an organization's own fields on its contacts,
// deals, leads, tickets and customers. A CustomField defines one; the
// values are in each object's Fields, a JSON object keyed by the fields'
// keys, checked against the definitions when a create or an update sends
// them (custom_field_values.go), and lists filter by them
// (custom_field_filters.go). This file is the definitions.

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
	// Change is what is rewritten: FieldChangeDelete ("" in a change
	// started before option removal existed), FieldChangeRemoveOptions,
	// of Options, or FieldChangeConvert, from type From to the
	// definition's type.
	Change  string   `json:"change,omitempty"`
	Options []string `json:"options,omitempty"`
	From    string   `json:"from,omitempty"`
	// Cleared is how many values the batches before After cleared
	// (FieldChangeConvert: no reading of them fit the new type).
	Cleared int `json:"cleared,omitempty"`
}

// What a FieldChange rewrites: a deleted field's values, the removed
// options of a select's or multiselect's values, or every value of a
// field whose type changed.
const (
	FieldChangeDelete        = "delete"
	FieldChangeRemoveOptions = "remove_options"
	FieldChangeConvert       = "convert"
)

// FieldProgress is how far a FieldChange has rewritten the stored values.
type FieldProgress struct {
	Rewritten int    `json:"rewritten"`
	Change    string `json:"change"`
	// Options are the options being removed (remove_options); From and To
	// the types a convert changes between, and Cleared how many values
	// fit no reading of the new type. Done tells whether the change has
	// ended (a deletion ends with the definition gone).
	Options []string `json:"options,omitempty"`
	From    string   `json:"from,omitempty"`
	To      string   `json:"to,omitempty"`
	Cleared int      `json:"cleared,omitempty"`
	Done    bool     `json:"done,omitempty"`
}

// Progress is in's progress after rewritten values (cleared of them
// emptied), on a field of type to.
func (in FieldChangeInput) Progress(rewritten, cleared int, to string, done bool) string {
	p := FieldProgress{Change: in.Change, Rewritten: rewritten, Options: in.Options, Done: done}
	if p.Change == "" {
		p.Change = FieldChangeDelete
	}
	if in.Change == FieldChangeConvert {
		p.From, p.To, p.Cleared = in.From, to, cleared
	}
	return jsonString(p)
}

// Changing tells whether a FieldChange of f's options or type runs:
// another change of the field waits for it (409 field_changing).
func (f *CustomField) Changing() bool {
	var p FieldProgress
	return f.Progress != "" && json.Unmarshal([]byte(f.Progress), &p) == nil &&
		(p.Change == FieldChangeRemoveOptions || p.Change == FieldChangeConvert) && !p.Done
}

// RemovedOptions are the options of f that d no longer has.
func (f *CustomField) RemovedOptions(d *FieldDefinition) []string {
	var out []string
	for _, o := range f.OptionList() {
		if !slices.Contains(d.Options, o) {
			out = append(out, o)
		}
	}
	return out
}

// OptionList is the definition's options.
func (f *CustomField) OptionList() []string {
	var out []string
	_ = json.Unmarshal([]byte(f.Options), &out)
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
// object, key and type stay; options removed are taken out of the stored
// values by a FieldChange), naming each bad field.
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
	}
	if !slices.Contains(FieldTypes, d.Type) {
		add("type", "oneof", "One of %s.", strings.Join(FieldTypes, ", "))
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

// FieldDefinitions are orgID's custom fields of object, those being
// deleted too (FieldDeleting: ApplyFields refuses their keys, and lists
// filter by them until their values are gone).
func FieldDefinitions(tx *gorm.DB, orgID, object string) ([]CustomField, error) {
	var defs []CustomField
	err := tx.Where("org_id = ? AND object = ?", orgID, object).Order("created_at, id").Find(&defs).Error
	return defs, err
}
