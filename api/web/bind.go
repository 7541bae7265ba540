package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"
	"github.com/go-playground/validator/v10/non-standard/validators"
	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/models"
)

var validate = newValidator()

// embedded names an embedded struct in validation paths; fieldPath drops it,
// so a rule on an embedded struct's field reports the JSON field name alone.
const embedded = "~"

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		if f.Anonymous && f.Tag.Get("json") == "" {
			return embedded
		}
		return jsonName(f)
	})
	// notblank: not only spaces (required alone accepts "   ").
	_ = v.RegisterValidation("notblank", validators.NotBlank)
	// url_or_empty: an http(s) URL, or "" to clear the field.
	_ = v.RegisterValidation("url_or_empty", func(fl validator.FieldLevel) bool {
		s := fl.Field().String()
		return s == "" || v.Var(s, "http_url") == nil
	})
	return v
}

// Validator exposes the shared validator so packages can register rules.
func Validator() *validator.Validate { return validate }

// Decode reads the JSON request body into dst strictly: malformed JSON is a
// 400; unknown fields, values of the wrong type and failed `validate` rules
// are one 422 that lists every bad field, so a client fixes all at once.
// checks are further rules (formats, cross-field rules, references) run on
// what decoded; their findings join the same 422. A field that had the
// wrong type is left at its zero value for them, and each field is named
// once (the first finding wins).
func Decode(c *fiber.Ctx, dst any, checks ...func() error) error {
	ct := strings.ToLower(strings.TrimSpace(strings.SplitN(c.Get(fiber.HeaderContentType), ";", 2)[0]))
	if ct != fiber.MIMEApplicationJSON && !strings.HasSuffix(ct, "+json") {
		return NewProblem(fiber.StatusUnsupportedMediaType, "unsupported_media_type", "Send the body as application/json.")
	}
	return DecodeBytes(c.Body(), dst, checks...)
}

// DecodeBytes is Decode for a body already in hand.
func DecodeBytes(body []byte, dst any, checks ...func() error) error {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return NewProblem(fiber.StatusBadRequest, "malformed_json", "The body must be one JSON object.")
	}
	if dec.More() {
		return NewProblem(fiber.StatusBadRequest, "malformed_json", "The body must hold exactly one JSON object.")
	}

	fields := fieldsOf(reflect.TypeOf(dst).Elem())
	target := reflect.ValueOf(dst).Elem()
	var bad []models.FieldError
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		idx, ok := fields[k]
		if !ok {
			bad = append(bad, models.FieldError{Field: k, Code: "unknown_field", Message: "This field is not accepted here."})
			continue
		}
		if containsNUL(raw[k]) {
			bad = append(bad, models.FieldError{Field: k, Code: "invalid_character", Message: "Must not contain NUL (\\u0000) characters."})
			continue
		}
		field := target.FieldByIndex(idx)
		if err := json.Unmarshal(raw[k], field.Addr().Interface()); err != nil {
			bad = append(bad, models.FieldError{Field: k, Code: "invalid_type", Message: typeMessage(err)})
			field.SetZero() // a half-decoded value must not reach the rules
		}
	}
	errs := make([]error, 0, 2+len(checks))
	if len(bad) > 0 {
		errs = append(errs, models.Invalid(bad...))
	}
	errs = append(errs, Validate(dst))
	for _, check := range checks {
		errs = append(errs, check())
	}
	return MergeInvalid(errs...)
}

// Validate runs the `validate` struct tags of v and reports every failure.
func Validate(v any) error {
	err := validate.Struct(v)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	out := make([]models.FieldError, 0, len(verrs))
	for _, fe := range verrs {
		code, msg := fe.Tag(), ruleMessage(fe)
		// "eq=|rule" reads "rule, or empty to clear".
		if inner, ok := strings.CutPrefix(code, "eq=|"); ok {
			code, _, _ = strings.Cut(inner, "=")
			msg = strings.TrimSuffix(ruleMessage(innerError{fe, code, inner}), ".") + ", or empty to clear it."
		}
		out = append(out, models.FieldError{Field: fieldPath(fe), Code: code, Message: msg})
	}
	return models.Invalid(out...)
}

// fieldPath drops the struct name the validator puts first and embedded
// struct names: "Req.~.items[0].name" → "items[0].name".
func fieldPath(fe validator.FieldError) string {
	parts := strings.Split(fe.Namespace(), ".")
	out := parts[:0]
	for _, p := range parts[1:] {
		if p != embedded {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return fe.Field()
	}
	return strings.Join(out, ".")
}

// innerError presents one alternative of an OR rule to ruleMessage.
type innerError struct {
	validator.FieldError
	tag, full string
}

func (e innerError) Tag() string { return e.tag }
func (e innerError) Param() string {
	_, param, _ := strings.Cut(e.full, "=")
	return param
}

// ruleFailure is what ruleMessage needs of a validation failure.
type ruleFailure interface {
	Tag() string
	Param() string
	Kind() reflect.Kind
}

func ruleMessage(fe ruleFailure) string {
	switch fe.Tag() {
	case "required", "notblank":
		return "This field is required."
	case "url_or_empty":
		return "Must be an http(s) URL, or empty."
	case "email":
		return "Must be a valid e-mail address."
	case "min":
		if fe.Kind() == reflect.String {
			return fmt.Sprintf("Must be at least %s characters long.", fe.Param())
		}
		return "Must be at least " + fe.Param() + "."
	case "max":
		if fe.Kind() == reflect.String {
			return fmt.Sprintf("Must be at most %s characters long.", fe.Param())
		}
		return "Must be at most " + fe.Param() + "."
	case "gte":
		return "Must be greater than or equal to " + fe.Param() + "."
	case "lte":
		return "Must be less than or equal to " + fe.Param() + "."
	case "gt":
		return "Must be greater than " + fe.Param() + "."
	case "oneof":
		return "Must be one of: " + strings.ReplaceAll(fe.Param(), " ", ", ") + "."
	case "url", "http_url":
		return "Must be a valid URL."
	case "uuid", "uuid4", "uuid7":
		return "Must be a valid id."
	case "datetime":
		return "Must be a date in the form " + fe.Param() + "."
	}
	return "Failed the " + fe.Tag() + " rule."
}

func typeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "Must be a JSON " + jsonKind(te.Type) + "."
	}
	return "Has an invalid value."
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

var fieldCache sync.Map // reflect.Type → map[string][]int

// fieldsOf maps the JSON names of a struct's fields (embedded ones included)
// to their field indexes; computed once per type.
func fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	collectFields(t, nil, m)
	fieldCache.Store(t, m)
	return m
}

func collectFields(t reflect.Type, prefix []int, m map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int{}, prefix...), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			collectFields(f.Type, idx, m)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name := jsonName(f); name != "" {
			m[name] = idx
		}
	}
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name := strings.SplitN(tag, ",", 2)[0]
	if name == "" {
		return f.Name
	}
	return name
}

// MergeInvalid merges validation errors into one 422 naming each bad field
// once (the first report wins); any other error, or a 422 that names no
// field, is returned as is.
func MergeInvalid(errs ...error) error {
	var fields []models.FieldError
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		var de *models.DomainError
		if !errors.As(err, &de) || !errors.Is(de.Kind, models.ErrInvalid) || len(de.Fields) == 0 {
			return err
		}
		for _, f := range de.Fields {
			if !seen[f.Field] {
				seen[f.Field] = true
				fields = append(fields, f)
			}
		}
	}
	if len(fields) > 0 {
		return models.Invalid(fields...)
	}
	return nil
}
