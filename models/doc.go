// Package models holds the persistent domain of Business Suite: GORM entities,
// versioned migrations for PostgreSQL and SQLite, queries, and the domain rules
// (state transitions, limits, scoring) that handlers and activities share.
//
// Nothing in this package knows about HTTP or Temporal; callers translate the
// sentinel errors in errors.go into their own vocabulary.
package models
