package models

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer. The HTTP layer maps them to status
// codes and problem codes in one table (api/web/errors.go).
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrForbidden    = errors.New("forbidden")
	ErrUnauthorized = errors.New("unauthorized")
	ErrLimit        = errors.New("plan limit reached")
	ErrInvalid      = errors.New("invalid")
	ErrUnavailable  = errors.New("dependency unavailable")
	// ErrGone: the thing existed but can no longer be used (an expired or
	// withdrawn invitation).
	ErrGone = errors.New("gone")
)

// DomainError carries a machine-readable code and a human message next to one
// of the sentinels above, e.g. Err(ErrLimit, "seat_limit_reached", "...").
type DomainError struct {
	Kind    error
	Code    string
	Message string
	// Fields lists field-level problems for ErrInvalid.
	Fields []FieldError
}

// FieldError is one invalid field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *DomainError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }
func (e *DomainError) Unwrap() error { return e.Kind }

// Err builds a DomainError.
func Err(kind error, code, format string, args ...any) *DomainError {
	return &DomainError{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the 404 of a thing the caller may not see, or that does not
// exist (the two are never told apart): what names it, "The contact".
func NotFound(what string) *DomainError {
	return Err(ErrNotFound, "not_found", "%s was not found.", what)
}

// Unauthorized is the 401 of a request without a credential this route
// takes; detail says which one to send.
func Unauthorized(detail string) *DomainError {
	return Err(ErrUnauthorized, "unauthorized", "%s", detail)
}

// Invalid builds a validation error listing the bad fields.
func Invalid(fields ...FieldError) *DomainError {
	return &DomainError{Kind: ErrInvalid, Code: "validation_failed", Message: "The request has invalid fields.", Fields: fields}
}
