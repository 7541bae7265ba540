package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Plan names.
const (
	PlanFree       = "free"
	PlanStarter    = "starter"
	PlanBusiness   = "business"
	PlanEnterprise = "enterprise"
)

// Plan holds the limits of a subscription plan; nil limits are unlimited.
type Plan struct {
	Name            string `gorm:"primaryKey"`
	Seats           *int
	TicketsPerMonth *int
	AI              bool `gorm:"column:ai"`
	// AITokensPerMonth is the monthly AI token quota (nil: unlimited).
	AITokensPerMonth *int64 `gorm:"column:ai_tokens_per_month"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// FindPlan loads a plan by name.
func FindPlan(ctx context.Context, db *gorm.DB, name string) (*Plan, error) {
	var p Plan
	if err := db.WithContext(ctx).Take(&p, "name = ?", name).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &p, nil
}

// SetOrgPlan moves an organization to another plan (operators and billing).
func SetOrgPlan(ctx context.Context, db *gorm.DB, orgID, plan string) error {
	if _, err := FindPlan(ctx, db, plan); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Invalid(FieldError{Field: "plan", Code: "oneof", Message: "Unknown plan " + plan + "."})
		}
		return err
	}
	if !ValidID(orgID) {
		return ErrNotFound
	}
	res := db.WithContext(ctx).Model(&Organization{}).Where("id = ?", orgID).Updates(map[string]any{"plan": plan, "updated_at": Now()})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
