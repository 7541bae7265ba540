package models

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
)

// Organization states. An organization leaves provisioning for active or
// failed and never leaves active (ActiveOrgs relies on it).
const (
	OrgProvisioning = "provisioning"
	OrgActive       = "active"
	OrgFailed       = "failed"
)

// Organization is a workspace: the CRM's orgId and the Helpdesk's
// x-workspace-id.
type Organization struct {
	ID            string `gorm:"primaryKey"`
	Name          string
	Status        string
	FailureReason string
	Plan          string
	Timezone      string
	Currency      string
	Website       string
	Industry      string
	Phone         string
	Address       string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// AutomationsRevision names the state of the organization's automation
	// rules: a database trigger sets a new one with every change of a rule
	// (migration 00038), and nil means it never had one. The program only
	// reads it (AutomationsRevision).
	AutomationsRevision *string `gorm:"->"`
}

// NormalizeEmail lowercases and trims an e-mail address for storage and lookup.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// LockForUpdate adds FOR UPDATE on PostgreSQL. SQLite needs none: its
// IMMEDIATE transactions already serialise writers.
func LockForUpdate(tx *gorm.DB) *gorm.DB {
	if database.DialectFor(tx) == database.Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// WithinOrgLimit refuses a new row of model in the organization once it
// has max of them: a 409 with code and message (a format of the limit,
// %d). It locks the organization's row first (PostgreSQL; SQLite's
// writers take turns anyway), so two requests cannot both take the last
// place.
func WithinOrgLimit(tx *gorm.DB, model any, orgID string, max int, code, message string) error {
	var org Organization
	if err := LockForUpdate(tx).Select("id").Take(&org, "id = ?", orgID).Error; err != nil {
		return err
	}
	var n int64
	if err := tx.Model(model).Where("org_id = ?", orgID).Count(&n).Error; err != nil {
		return err
	}
	if n >= int64(max) {
		return Err(ErrConflict, code, message, max)
	}
	return nil
}

// FindOrg loads an organization.
func FindOrg(ctx context.Context, db *gorm.DB, id string) (*Organization, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	var org Organization
	if err := db.WithContext(ctx).Take(&org, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &org, nil
}

// ActiveOrgs answers whether an organization is active, remembering the
// ones it has seen active: active is final (MarkOrgActive and MarkOrgFailed
// only move an organization out of provisioning; none is deleted), so one
// lookup per organization and process is enough. The public lead intake
// asks on every submission. Only active organizations are kept, so the set
// is bounded by the organizations in the database.
type ActiveOrgs struct{ seen sync.Map }

// Active reports whether organization id exists and is active; an unknown
// or malformed id is simply not active. The id is taken in lower case, the
// form ids are stored in: a UUID in capitals names the same organization on
// PostgreSQL, and must not make the set grow by one entry per spelling.
func (a *ActiveOrgs) Active(ctx context.Context, db *gorm.DB, id string) (bool, error) {
	id = strings.ToLower(id)
	if _, ok := a.seen.Load(id); ok {
		return true, nil
	}
	org, err := FindOrg(ctx, db, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil || org.Status != OrgActive {
		return false, err
	}
	a.seen.Store(strings.Clone(id), struct{}{}) // ToLower returns its argument when it has no capitals
	return true, nil
}

// Location is the organization's time zone (UTC when unset or unknown to
// this system's time zone database).
func (o *Organization) Location() *time.Location {
	if o.Timezone != "" {
		if loc, err := time.LoadLocation(o.Timezone); err == nil {
			return loc
		}
	}
	return time.UTC
}

// Month is the calendar month (YYYY-MM) of t in the organization's time
// zone: the month a limited plan's ticket allowance and the AI usage count.
func (o *Organization) Month(t time.Time) string { return t.In(o.Location()).Format("2006-01") }
