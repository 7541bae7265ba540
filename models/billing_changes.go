package models

import (
	"errors"
	"slices"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// DowngradeBlocked refuses a downgrade while more seats are in use than the
// target plan has. It is a 409 downgrade_blocked (errors.As finds the
// *DomainError) and carries the numbers for the response.
type DowngradeBlocked struct {
	Plan       string
	Seats      int
	SeatsInUse int
	domain     *DomainError
}

func (e *DowngradeBlocked) Error() string { return e.domain.Error() }
func (e *DowngradeBlocked) Unwrap() error { return e.domain }

func downgradeBlocked(plan string, seats int, inUse int64) *DowngradeBlocked {
	return &DowngradeBlocked{Plan: plan, Seats: seats, SeatsInUse: int(inUse), domain: Err(ErrConflict, "downgrade_blocked",
		"%d seats are in use (members and pending invites) but the %s plan has %d: remove %d before downgrading.",
		inUse, plan, seats, inUse-int64(seats))}
}

// OpenChange asks for a change of plan.
type OpenChange struct {
	OrgID string
	// Plan is the target plan.
	Plan string
	// Interval is month or year ("" = month); ignored for downgrades,
	// which keep the subscription's interval.
	Interval string
	// Downgrade selects the downgrade rules (lower plan or free at the
	// period end); otherwise the order rules apply (create or upgrade).
	Downgrade   bool
	RequestedBy string
}

// OpenSubscriptionChange records a new change after checking its rules:
// one open change per organization (409 change_in_progress); an order
// names a known paid plan other than the current one (else 422), creating
// a subscription when the organization has none and upgrading it
// otherwise; a downgrade names a lower plan or free, needs a subscription
// (409 no_subscription) and the members and pending invites must fit the
// target plan's seats (409 downgrade_blocked). Call it in the transaction
// that records the change's workflow start.
func OpenSubscriptionChange(tx *gorm.DB, req OpenChange) (*SubscriptionChange, error) {
	org, err := lockOrg(tx, req.OrgID)
	if err != nil {
		return nil, err
	}
	interval := req.Interval
	var fields []FieldError
	if interval == "" {
		interval = IntervalMonth
	} else if interval != IntervalMonth && interval != IntervalYear {
		fields = append(fields, FieldError{Field: "interval", Code: "oneof", Message: "Must be one of: month, year."})
	}
	plan, err := FindPlan(tx.Statement.Context, tx, req.Plan)
	switch {
	case errors.Is(err, ErrNotFound) || (err == nil && !slices.Contains(append([]string{PlanFree}, PaidPlans...), plan.Name)):
		fields = append(fields, FieldError{Field: "plan", Code: "oneof", Message: "Must be one of: free, starter, business, enterprise."})
	case err != nil:
		return nil, err
	}
	if len(fields) > 0 {
		return nil, Invalid(fields...)
	}
	account, err := findAccount(tx, org.ID)
	if err != nil {
		return nil, err
	}
	change := &SubscriptionChange{ID: NewID(), OrgID: org.ID, FromPlan: org.Plan, ToPlan: plan.Name, Interval: interval,
		Status: ChangePending, Attempts: 1, RequestedBy: req.RequestedBy}
	if req.Downgrade {
		if err := downgradeRules(tx, org, plan, account, change); err != nil {
			return nil, err
		}
	} else if err := orderRules(org, plan, account, change); err != nil {
		return nil, err
	}
	if err := checkNoOpenChange(tx, org.ID, ""); err != nil {
		return nil, err
	}
	if err := tx.Create(change).Error; err != nil {
		if database.IsUniqueViolation(err) { // a concurrent change won the race
			return nil, changeInProgress(nil)
		}
		return nil, err
	}
	return change, nil
}

func orderRules(org *Organization, plan *Plan, account *BillingAccount, change *SubscriptionChange) error {
	switch {
	case plan.Name == PlanFree:
		return Invalid(FieldError{Field: "plan", Code: "free_not_orderable", Message: "The free plan is not bought; cancel the subscription with a downgrade to free."})
	case plan.Name == org.Plan:
		return Invalid(FieldError{Field: "plan", Code: "current_plan", Message: "The organization is already on the " + plan.Name + " plan."})
	case !account.HasActiveSubscription():
		change.Kind = ChangeCreate
	case planRank[plan.Name] > planRank[org.Plan]:
		change.Kind = ChangeUpgrade
		change.StripeCustomerID, change.StripeSubscriptionID = account.StripeCustomerID, account.StripeSubscriptionID
	default:
		return Invalid(FieldError{Field: "plan", Code: "lower_plan", Message: "The " + plan.Name + " plan is lower than the current " + org.Plan + " plan: downgrade instead."})
	}
	return nil
}

func downgradeRules(tx *gorm.DB, org *Organization, plan *Plan, account *BillingAccount, change *SubscriptionChange) error {
	if plan.Name == org.Plan || planRank[plan.Name] > planRank[org.Plan] {
		return Invalid(FieldError{Field: "plan", Code: "not_lower", Message: "Must be a plan lower than the current " + org.Plan + " plan (free cancels the subscription)."})
	}
	if !account.HasActiveSubscription() {
		return Err(ErrConflict, "no_subscription", "The organization has no active subscription to downgrade; operators change plans with `suite admin set-plan`.")
	}
	if err := checkSeatsFit(tx, org.ID, plan); err != nil {
		return err
	}
	change.Kind = ChangeDowngrade
	if plan.Name == PlanFree {
		change.Kind = ChangeCancel
	}
	change.Interval = account.Interval
	change.StripeCustomerID, change.StripeSubscriptionID = account.StripeCustomerID, account.StripeSubscriptionID
	return nil
}

// checkSeatsFit refuses when the members and pending invites exceed plan's seats.
func checkSeatsFit(tx *gorm.DB, orgID string, plan *Plan) error {
	if plan.Seats == nil {
		return nil
	}
	used, err := SeatsInUse(tx, orgID)
	if err != nil {
		return err
	}
	if used > int64(*plan.Seats) {
		return downgradeBlocked(plan.Name, *plan.Seats, used)
	}
	return nil
}

func changeInProgress(open *SubscriptionChange) error {
	if open == nil {
		return Err(ErrConflict, "change_in_progress", "Another subscription change of this organization is under way.")
	}
	return Err(ErrConflict, "change_in_progress", "Subscription change %s of this organization is %s; wait for it to finish.", open.ID, open.Status)
}

// checkNoOpenChange fails with change_in_progress when the organization has
// an open change other than except.
func checkNoOpenChange(tx *gorm.DB, orgID, except string) error {
	var open SubscriptionChange
	q := tx.Where("org_id = ? AND status IN ?", orgID, OpenChangeStatuses)
	if except != "" {
		q = q.Where("id <> ?", except)
	}
	err := q.Take(&open).Error
	switch {
	case err == nil:
		return changeInProgress(&open)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil
	}
	return err
}

func lockOrg(tx *gorm.DB, orgID string) (*Organization, error) {
	if !ValidID(orgID) {
		return nil, ErrNotFound
	}
	var org Organization
	if err := LockForUpdate(tx).Take(&org, "id = ?", orgID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &org, nil
}

// lockChange loads a change for update.
func lockChange(tx *gorm.DB, changeID string) (*SubscriptionChange, error) {
	if !ValidID(changeID) {
		return nil, ErrNotFound
	}
	var c SubscriptionChange
	if err := LockForUpdate(tx).Take(&c, "id = ?", changeID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &c, nil
}

// RetrySubscriptionChange re-opens a failed change for another run of its
// workflow, which resumes from the step that failed. Only failed changes
// are retried: an applied one is a 409 change_applied, an open one a 409
// change_in_progress, an expired or canceled one a 409
// change_not_retryable. The organization must still be on the plan the
// change started from (else 409 change_superseded), have no other open
// change, and — for a downgrade — still fit the target plan's seats. The
// retry is recorded (who, when, from which step). Call it in the
// transaction that records the retry's workflow start.
func RetrySubscriptionChange(tx *gorm.DB, changeID, requestedBy string) (*SubscriptionChange, *SubscriptionChangeRetry, error) {
	change, err := lockChange(tx, changeID)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case change.Status == ChangeApplied:
		return nil, nil, Err(ErrConflict, "change_applied", "Subscription change %s is already applied.", change.ID)
	case IsOpenChange(change.Status):
		return nil, nil, Err(ErrConflict, "change_in_progress", "Subscription change %s is %s; only failed changes are retried.", change.ID, change.Status)
	case change.Status != ChangeFailed:
		return nil, nil, Err(ErrConflict, "change_not_retryable", "Subscription change %s is %s; only failed changes are retried (the organization may request a new change).", change.ID, change.Status)
	}
	org, err := lockOrg(tx, change.OrgID)
	if err != nil {
		return nil, nil, err
	}
	if org.Plan != change.FromPlan {
		return nil, nil, Err(ErrConflict, "change_superseded", "The organization is now on the %s plan, not %s as when change %s was requested.", org.Plan, change.FromPlan, change.ID)
	}
	if err := checkNoOpenChange(tx, org.ID, change.ID); err != nil {
		return nil, nil, err
	}
	if change.Kind == ChangeDowngrade || change.Kind == ChangeCancel {
		plan, err := FindPlan(tx.Statement.Context, tx, change.ToPlan)
		if err != nil {
			return nil, nil, err
		}
		if err := checkSeatsFit(tx, org.ID, plan); err != nil {
			return nil, nil, err
		}
	}
	now := Now()
	retry := &SubscriptionChangeRetry{ID: NewID(), ChangeID: change.ID, OrgID: change.OrgID, Number: change.Attempts,
		RequestedBy: requestedBy, FromStep: change.Step, ErrorCode: change.LastErrorCode, Outcome: ChangePending, CreatedAt: now}
	res := tx.Model(&SubscriptionChange{}).Where("id = ? AND status = ?", change.ID, ChangeFailed).
		Updates(map[string]any{"status": ChangePending, "attempts": change.Attempts + 1, "completed_at": nil, "updated_at": now})
	if res.Error != nil {
		if database.IsUniqueViolation(res.Error) {
			return nil, nil, changeInProgress(nil)
		}
		return nil, nil, res.Error
	}
	if err := tx.Create(retry).Error; err != nil {
		return nil, nil, err
	}
	change.Status, change.Attempts, change.CompletedAt, change.UpdatedAt = ChangePending, change.Attempts+1, nil, now
	return change, retry, nil
}
