package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// Kinds of subscription change.
const (
	// ChangeCreate starts a paid subscription (the organization has none).
	ChangeCreate = "create"
	// ChangeUpgrade moves an active subscription to a higher plan at once,
	// with proration, once the prorated invoice is paid.
	ChangeUpgrade = "upgrade"
	// ChangeDowngrade moves an active subscription to a lower paid plan at
	// the end of the current period.
	ChangeDowngrade = "downgrade"
	// ChangeCancel ends the subscription at the end of the current period;
	// the organization then returns to free.
	ChangeCancel = "cancel"
)

// Subscription change states. The state machine (docs/decisions.md):
//
//	create, upgrade:    pending → awaiting_payment → applied
//	downgrade, cancel:  pending → scheduled → applied (at the period end)
//	any open state      → failed   (Stripe refused, or the payment failed)
//	pending, awaiting_payment → expired (no payment within the window)
//	any open state      → canceled (the subscription was deleted in Stripe)
//	failed              → pending  (a billing-staff retry)
//
// pending, awaiting_payment and scheduled are open: an organization has at
// most one open change. applied, expired and canceled are final.
const (
	ChangePending         = "pending"
	ChangeAwaitingPayment = "awaiting_payment"
	ChangeScheduled       = "scheduled"
	ChangeApplied         = "applied"
	ChangeFailed          = "failed"
	ChangeExpired         = "expired"
	ChangeCanceled        = "canceled"
)

// OpenChangeStatuses are the states in which a change is under way.
var OpenChangeStatuses = []string{ChangePending, ChangeAwaitingPayment, ChangeScheduled}

// ChangeStatuses lists every state (for filters).
var ChangeStatuses = []string{ChangePending, ChangeAwaitingPayment, ChangeScheduled, ChangeApplied, ChangeFailed, ChangeExpired, ChangeCanceled}

// changeTransitions is the state machine above; a transition not listed is
// refused.
var changeTransitions = map[string][]string{
	ChangePending:         {ChangeAwaitingPayment, ChangeScheduled, ChangeApplied, ChangeFailed, ChangeExpired, ChangeCanceled},
	ChangeAwaitingPayment: {ChangeApplied, ChangeFailed, ChangeExpired, ChangeCanceled},
	ChangeScheduled:       {ChangeApplied, ChangeFailed, ChangeCanceled},
	ChangeFailed:          {ChangePending},
}

// CanChangeTransition tells whether a change may move from one state to another.
func CanChangeTransition(from, to string) bool { return slices.Contains(changeTransitions[from], to) }

// IsOpenChange tells whether a change in status is under way.
func IsOpenChange(status string) bool { return slices.Contains(OpenChangeStatuses, status) }

// Steps of a change, recorded as the workflow reaches them. A failed change
// keeps the step that failed; a retry resumes there.
const (
	StepCustomer     = "customer"     // ensure the organization's Stripe customer
	StepSubscription = "subscription" // create or update the Stripe subscription
	StepPayment      = "payment"      // wait for Stripe to say the money is there
	StepSchedule     = "schedule"     // schedule a downgrade or cancellation at period end
	StepPeriodEnd    = "period_end"   // wait for the period to end
	StepExpire       = "expire"       // cancel the unpaid subscription
	StepApply        = "apply"        // apply the plan's limits
)

// Billing intervals.
const (
	IntervalMonth = "month"
	IntervalYear  = "year"
)

// planRank orders the built-in plans from cheapest to dearest; only these
// can be bought (each needs a Stripe price).
var planRank = map[string]int{PlanFree: 0, PlanStarter: 1, PlanBusiness: 2, PlanEnterprise: 3}

// PaidPlans are the plans that have a Stripe price.
var PaidPlans = []string{PlanStarter, PlanBusiness, PlanEnterprise}

// SubscriptionChange is one requested change of an organization's plan and
// its progress through Stripe and the SubscriptionChange workflow.
type SubscriptionChange struct {
	ID       string `gorm:"primaryKey"`
	OrgID    string
	Kind     string
	FromPlan string
	ToPlan   string
	Interval string `gorm:"column:billing_interval"`
	Status   string
	// Step is the step under way, or the step that failed.
	Step string
	// Attempts counts workflow runs: 1, plus one per retry.
	Attempts         int
	LastErrorCode    string
	LastErrorMessage string

	StripeRefs `gorm:"embedded"`

	// EffectiveAt is when a scheduled change takes effect (period end).
	EffectiveAt *time.Time
	RequestedBy string
	CompletedAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// StripeRefs are a change's Stripe objects and what paying needs.
type StripeRefs struct {
	StripeCustomerID      string
	StripeSubscriptionID  string
	StripePriceID         string
	StripeInvoiceID       string
	StripePaymentIntentID string
	// ClientSecret confirms the payment intent in the browser (Stripe.js);
	// shown only to the organization's administrators.
	ClientSecret     string
	HostedInvoiceURL string
}

// Retry is the number of the current run's retry (0 for the first run).
func (c *SubscriptionChange) Retry() int { return max(c.Attempts-1, 0) }

// WorkflowID is the ID of the change's current workflow run (the first
// run, or the latest retry): what the Temporal UI shows.
func (c *SubscriptionChange) WorkflowID() string {
	return SubscriptionChangeWorkflowID(c.OrgID, c.ID, c.Retry())
}

// SubscriptionChangeWorkflowID is the ID of one run of a change
// (workflows.SubscriptionChangeID), named here for the change's view
// (models/views), which activities build too: the first run is
// subscription/<org>/<change>; billing-staff retry n runs as
// subscription/<org>/<change>/retry-<n> (each ID runs once, ever).
func SubscriptionChangeWorkflowID(orgID, changeID string, retry int) string {
	id := "subscription/" + orgID + "/" + changeID
	if retry > 0 {
		id += "/retry-" + strconv.Itoa(retry)
	}
	return id
}

// SubscriptionChangeRetry records one billing-staff re-run of a failed
// change: who asked, when, from which step, and how it ended.
type SubscriptionChangeRetry struct {
	ID       string `gorm:"primaryKey"`
	ChangeID string
	OrgID    string
	// Number is 1 for the first retry of the change.
	Number      int
	RequestedBy string
	FromStep    string
	// ErrorCode is the failure being retried.
	ErrorCode string
	// Outcome is pending until the run ends, then the change's final state.
	Outcome     string
	OutcomeCode string
	OutcomeAt   *time.Time
	CreatedAt   time.Time
}

// BillingAccount is an organization's standing with Stripe: its one Stripe
// customer (created once, never replaced) and its current subscription.
type BillingAccount struct {
	OrgID                string `gorm:"primaryKey"`
	StripeCustomerID     string
	StripeSubscriptionID string
	// SubscriptionStatus is Stripe's status of the subscription
	// (active, past_due, canceled, …); empty before the first one.
	SubscriptionStatus string
	Plan               string
	Interval           string `gorm:"column:billing_interval"`
	StripePriceID      string
	CurrentPeriodEnd   *time.Time
	CancelAtPeriodEnd  bool
	// LastEventAt is the creation time of the newest Stripe event applied,
	// so that an older event arriving late cannot undo a newer one.
	LastEventAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// HasActiveSubscription tells whether the account pays for a plan now.
func (a *BillingAccount) HasActiveSubscription() bool {
	if a == nil || a.StripeSubscriptionID == "" {
		return false
	}
	switch a.SubscriptionStatus {
	case "active", "trialing", "past_due":
		return true
	}
	return false
}

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

// SubscriptionChangeRetries lists a change's retries, oldest first.
func SubscriptionChangeRetries(ctx context.Context, db *gorm.DB, changeID string) ([]SubscriptionChangeRetry, error) {
	retries, err := RetriesOfChanges(ctx, db, []string{changeID})
	return retries[changeID], err
}

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
