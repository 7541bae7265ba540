package models

import (
	"context"
	"errors"
	"slices"

	"gorm.io/gorm"
)

// findAccount loads an organization's billing account (nil when it has none).
func findAccount(tx *gorm.DB, orgID string) (*BillingAccount, error) {
	var a BillingAccount
	err := tx.Take(&a, "org_id = ?", orgID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// FindBillingAccount loads an organization's billing account (nil, nil when
// it never had one).
func FindBillingAccount(ctx context.Context, db *gorm.DB, orgID string) (*BillingAccount, error) {
	return findAccount(db.WithContext(ctx), orgID)
}

// FindSubscriptionChange loads a change of an organization; another
// organization's change is not found. orgID "" finds any change (billing
// staff, operators).
func FindSubscriptionChange(ctx context.Context, db *gorm.DB, orgID, changeID string) (*SubscriptionChange, error) {
	if !ValidID(changeID) || (orgID != "" && !ValidID(orgID)) {
		return nil, ErrNotFound
	}
	q := db.WithContext(ctx).Where("id = ?", changeID)
	if orgID != "" {
		q = q.Where("org_id = ?", orgID)
	}
	var c SubscriptionChange
	if err := q.Take(&c).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &c, nil
}

// ChangeFilter selects changes for a list.
type ChangeFilter struct {
	// OrgID "" lists every organization's changes (billing staff).
	OrgID  string
	Status string
}

// Validate reports a bad status filter as a 422.
func (f ChangeFilter) Validate() error {
	var fields []FieldError
	if f.Status != "" && !slices.Contains(ChangeStatuses, f.Status) {
		fields = append(fields, FieldError{Field: "status", Code: "oneof", Message: "Must be one of: pending, awaiting_payment, scheduled, applied, failed, expired, canceled."})
	}
	if f.OrgID != "" && !ValidID(f.OrgID) {
		fields = append(fields, FieldError{Field: "orgId", Code: "uuid", Message: "Must be an organization id."})
	}
	if len(fields) > 0 {
		return Invalid(fields...)
	}
	return nil
}

// SubscriptionChanges is the query behind change lists, newest first (a
// list helper adds the cursor and limit). Indexed by (org_id, created_at,
// id) and (status, created_at, id).
func SubscriptionChanges(db *gorm.DB, f ChangeFilter) *gorm.DB {
	q := db.Model(&SubscriptionChange{})
	if f.OrgID != "" {
		q = q.Where("org_id = ?", f.OrgID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	return q
}

// OpenSubscriptionChangeOf returns the organization's open change, or nil.
func OpenSubscriptionChangeOf(ctx context.Context, db *gorm.DB, orgID string) (*SubscriptionChange, error) {
	var c SubscriptionChange
	err := db.WithContext(ctx).Where("org_id = ? AND status IN ?", orgID, OpenChangeStatuses).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// BillingOverview is an organization's plan, its Stripe subscription and
// the change under way.
type BillingOverview struct {
	OrgID   string
	Plan    string
	Account *BillingAccount
	Pending *SubscriptionChange
}

// OrgBilling loads an organization's billing overview.
func OrgBilling(ctx context.Context, db *gorm.DB, orgID string) (*BillingOverview, error) {
	org, err := FindOrg(ctx, db, orgID)
	if err != nil {
		return nil, err
	}
	account, err := FindBillingAccount(ctx, db, orgID)
	if err != nil {
		return nil, err
	}
	pending, err := OpenSubscriptionChangeOf(ctx, db, orgID)
	if err != nil {
		return nil, err
	}
	return &BillingOverview{OrgID: orgID, Plan: org.Plan, Account: account, Pending: pending}, nil
}

// SubscriptionChangeRetries lists a change's retries, oldest first.
func SubscriptionChangeRetries(ctx context.Context, db *gorm.DB, changeID string) ([]SubscriptionChangeRetry, error) {
	retries, err := RetriesOfChanges(ctx, db, []string{changeID})
	return retries[changeID], err
}

// RetriesOfChanges loads the retries of several changes (one query), by
// change id, oldest first.
func RetriesOfChanges(ctx context.Context, db *gorm.DB, changeIDs []string) (map[string][]SubscriptionChangeRetry, error) {
	out := make(map[string][]SubscriptionChangeRetry, len(changeIDs))
	if len(changeIDs) == 0 {
		return out, nil
	}
	var rows []SubscriptionChangeRetry
	if err := db.WithContext(ctx).Where("change_id IN ?", changeIDs).Order("number").Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ChangeID] = append(out[r.ChangeID], r)
	}
	return out, nil
}
