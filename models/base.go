package models

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// NewID returns a new UUIDv7 string: unique, and ordered by creation time,
// which keeps B-tree inserts local and makes the id a good tie-breaker.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Now is the clock used for every stored timestamp (database.Now: UTC,
// truncated to the microsecond precision PostgreSQL keeps).
func Now() time.Time { return database.Now() }

// ValidID tells whether s is a well-formed id; malformed ids are answered
// with 404 without touching the database.
func ValidID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// CheckReference fails with a 422 on field (not_found, "Must be the id of
// " + what) unless id names a row of model in orgID; nil or "" passes. A
// malformed id and another organization's row get the same answer. It is
// how a request's reference to another object is checked, e.g.
// CheckReference(tx, &Contact{}, orgID, "contactId", req.ContactID,
// "a contact of this organization").
func CheckReference(db *gorm.DB, model any, orgID, field string, id *string, what string) error {
	return checkReference(db, model, orgID, id, FieldError{Field: field, Code: "not_found", Message: "Must be the id of " + what + "."})
}

// checkReference fails with refused unless id names a row of model in
// orgID through q (a query that may narrow further); nil or "" passes.
func checkReference(q *gorm.DB, model any, orgID string, id *string, refused FieldError) error {
	if id == nil || *id == "" {
		return nil
	}
	if ValidID(*id) {
		var n int64
		if err := q.Model(model).Where("id = ? AND org_id = ?", *id, orgID).Count(&n).Error; err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
	}
	return Invalid(refused)
}

// FindInOrg loads the row of T with id in organization orgID through q (a
// query that may narrow further, e.g. to the caller's own rows); a
// malformed id, another organization's row or a missing one are the same
// NotFound(what), never told apart.
func FindInOrg[T any](q *gorm.DB, orgID, id, what string) (*T, error) {
	if !ValidID(id) {
		return nil, NotFound(what)
	}
	var row T
	if err := q.Where("id = ? AND org_id = ?", id, orgID).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, NotFound(what)
		}
		return nil, err
	}
	return &row, nil
}
