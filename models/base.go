package models

import (
	"time"

	"github.com/google/uuid"
)

// NewID returns a new UUIDv7 string: unique, and ordered by creation time,
// which keeps B-tree inserts local and makes the id a good tie-breaker.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Now is the clock used for every stored timestamp: UTC, truncated to the
// microsecond precision PostgreSQL keeps, so a value reads back unchanged.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// ValidID tells whether s is a well-formed id; malformed ids are answered
// with 404 without touching the database.
func ValidID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}
