package models

import "time"

// Idempotency key states.
const (
	IdemInFlight = "in_flight"
	IdemDone     = "done"
)

// IdempotencyKey stores the outcome of a POST sent with an Idempotency-Key
// header so that a retry replays it. It lives in the database, not in process
// memory, so every API replica sees the same keys.
type IdempotencyKey struct {
	Scope       string `gorm:"primaryKey"`
	Key         string `gorm:"primaryKey"`
	RequestHash string
	State       string
	StatusCode  int
	ContentType string
	Location    string
	Body        []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// LockedUntil is when an in-flight claim lapses unless its request,
	// still running, renews it.
	LockedUntil time.Time
}
