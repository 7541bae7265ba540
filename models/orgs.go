package models

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Organization states.
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
}

// NormalizeEmail lowercases and trims an e-mail address for storage and lookup.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// LockForUpdate adds FOR UPDATE on PostgreSQL. SQLite needs none: its
// IMMEDIATE transactions already serialise writers.
func LockForUpdate(tx *gorm.DB) *gorm.DB {
	if DialectFor(tx) == Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
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
