package models

import (
	"slices"
	"time"
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
