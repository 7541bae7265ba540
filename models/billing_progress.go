package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ChangeProgress is what a workflow step learned, written on the change.
// Empty fields leave the stored value alone.
type ChangeProgress struct {
	Step   string
	Status string
	StripeRefs
	EffectiveAt *time.Time
}

// RecordChangeProgress writes a step's progress on an open change. It fails
// with ErrConflict (change_closed) when the change is no longer open — a
// late activity retry must not revive it — and refuses a status the state
// machine does not allow.
func RecordChangeProgress(ctx context.Context, db *gorm.DB, changeID string, p ChangeProgress) (*SubscriptionChange, error) {
	var out *SubscriptionChange
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		change, err := lockChange(tx, changeID)
		if err != nil {
			return err
		}
		if !IsOpenChange(change.Status) {
			return Err(ErrConflict, "change_closed", "Subscription change %s is %s.", change.ID, change.Status)
		}
		if p.Status != "" && p.Status != change.Status && !CanChangeTransition(change.Status, p.Status) {
			return Err(ErrConflict, "invalid_transition", "Subscription change %s cannot move from %s to %s.", change.ID, change.Status, p.Status)
		}
		// Updates with a struct writes its non-zero fields only.
		set := SubscriptionChange{Step: p.Step, Status: p.Status, StripeRefs: p.StripeRefs, UpdatedAt: Now()}
		if p.EffectiveAt != nil {
			at := p.EffectiveAt.UTC().Truncate(time.Microsecond)
			set.EffectiveAt = &at
		}
		if err := tx.Model(&SubscriptionChange{}).Where("id = ?", change.ID).Updates(&set).Error; err != nil {
			return err
		}
		out = &SubscriptionChange{}
		return tx.Take(out, "id = ?", change.ID).Error
	})
	return out, err
}

// SetStripeCustomer records the organization's Stripe customer. The first
// one recorded stays the organization's customer for ever: when one is
// already stored, that one is returned and customerID is not kept.
func SetStripeCustomer(ctx context.Context, db *gorm.DB, orgID, customerID string) (string, error) {
	var stored string
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := lockOrg(tx, orgID); err != nil {
			return err
		}
		account, err := findAccount(tx, orgID)
		if err != nil {
			return err
		}
		now := Now()
		switch {
		case account == nil:
			stored = customerID
			return tx.Create(&BillingAccount{OrgID: orgID, StripeCustomerID: customerID, CreatedAt: now, UpdatedAt: now}).Error
		case account.StripeCustomerID != "":
			stored = account.StripeCustomerID
			return nil
		}
		stored = customerID
		return tx.Model(&BillingAccount{}).Where("org_id = ? AND stripe_customer_id = ''", orgID).
			Updates(map[string]any{"stripe_customer_id": customerID, "updated_at": now}).Error
	})
	return stored, err
}

// ApplySubscriptionChange puts the change's plan (seats, tickets, AI — the
// plans table) into effect for the organization and marks the change
// applied. Call it only when Stripe says the money is there, or when a
// scheduled change's period has ended. Applying an applied change again is
// a no-op; a closed change is a 409 change_closed.
func ApplySubscriptionChange(ctx context.Context, db *gorm.DB, changeID string) (*SubscriptionChange, error) {
	var out *SubscriptionChange
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		change, err := lockChange(tx, changeID)
		if err != nil {
			return err
		}
		if change.Status == ChangeApplied {
			out = change
			return nil
		}
		if !CanChangeTransition(change.Status, ChangeApplied) {
			return Err(ErrConflict, "change_closed", "Subscription change %s is %s.", change.ID, change.Status)
		}
		if _, err := lockOrg(tx, change.OrgID); err != nil {
			return err
		}
		now := Now()
		if err := tx.Model(&Organization{}).Where("id = ?", change.OrgID).Updates(map[string]any{"plan": change.ToPlan, "updated_at": now}).Error; err != nil {
			return err
		}
		if err := applyToAccount(tx, change, now); err != nil {
			return err
		}
		if err := tx.Model(&SubscriptionChange{}).Where("id = ?", change.ID).Updates(map[string]any{
			"status": ChangeApplied, "step": StepApply, "last_error_code": "", "last_error_message": "",
			"completed_at": now, "updated_at": now}).Error; err != nil {
			return err
		}
		if err := recordRetryOutcome(tx, change.ID, ChangeApplied, "", now); err != nil {
			return err
		}
		out = &SubscriptionChange{}
		return tx.Take(out, "id = ?", change.ID).Error
	})
	return out, err
}

// applyToAccount records on the billing account what an applied change
// means for the subscription.
func applyToAccount(tx *gorm.DB, change *SubscriptionChange, now time.Time) error {
	set := map[string]any{"plan": change.ToPlan, "updated_at": now}
	switch change.Kind {
	case ChangeCancel:
		// The subscription ends now (Stripe deletes it at the period end and
		// tells us with customer.subscription.deleted).
		set["subscription_status"] = "canceled"
	default:
		set["subscription_status"] = "active"
		if change.StripeSubscriptionID != "" {
			set["stripe_subscription_id"] = change.StripeSubscriptionID
		}
		if change.StripePriceID != "" {
			set["stripe_price_id"] = change.StripePriceID
		}
		set["billing_interval"] = change.Interval
		set["cancel_at_period_end"] = false
	}
	res := tx.Model(&BillingAccount{}).Where("org_id = ?", change.OrgID).Updates(set)
	if res.Error != nil || res.RowsAffected == 1 {
		return res.Error
	}
	return tx.Create(&BillingAccount{OrgID: change.OrgID, StripeCustomerID: change.StripeCustomerID,
		StripeSubscriptionID: change.StripeSubscriptionID, SubscriptionStatus: set["subscription_status"].(string),
		Plan: change.ToPlan, Interval: change.Interval, StripePriceID: change.StripePriceID, CreatedAt: now, UpdatedAt: now}).Error
}

// CloseSubscriptionChange ends an open change as failed, expired or
// canceled, with a machine-readable code and a message (Stripe's, for a
// refusal). Closing it again with the same status is a no-op.
func CloseSubscriptionChange(ctx context.Context, db *gorm.DB, changeID, status, code, message string) (*SubscriptionChange, error) {
	if status != ChangeFailed && status != ChangeExpired && status != ChangeCanceled {
		return nil, fmt.Errorf("close subscription change: %q is not a closing status", status)
	}
	var out *SubscriptionChange
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		change, err := lockChange(tx, changeID)
		if err != nil {
			return err
		}
		if change.Status == status {
			out = change
			return nil
		}
		if !CanChangeTransition(change.Status, status) {
			return Err(ErrConflict, "change_closed", "Subscription change %s is %s.", change.ID, change.Status)
		}
		now := Now()
		if err := tx.Model(&SubscriptionChange{}).Where("id = ?", change.ID).Updates(map[string]any{
			"status": status, "last_error_code": Truncate(code, 100), "last_error_message": Truncate(message, 1000),
			"completed_at": now, "updated_at": now}).Error; err != nil {
			return err
		}
		if err := recordRetryOutcome(tx, change.ID, status, code, now); err != nil {
			return err
		}
		out = &SubscriptionChange{}
		return tx.Take(out, "id = ?", change.ID).Error
	})
	return out, err
}

// recordRetryOutcome closes the change's retry under way, if any.
func recordRetryOutcome(tx *gorm.DB, changeID, outcome, code string, at time.Time) error {
	return tx.Model(&SubscriptionChangeRetry{}).Where("change_id = ? AND outcome = ?", changeID, ChangePending).
		Updates(map[string]any{"outcome": outcome, "outcome_code": Truncate(code, 100), "outcome_at": at}).Error
}
