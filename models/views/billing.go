package views

import (
	"time"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// SubscriptionChangeFields are the parts of a change of plan that both the
// Helpdesk (GET /helpdesk/payments/changes/:id) and the operator API show.
type SubscriptionChangeFields struct {
	Kind        string                   `json:"kind"`
	FromPlan    string                   `json:"fromPlan"`
	ToPlan      string                   `json:"toPlan"`
	Interval    string                   `json:"interval"`
	Status      string                   `json:"status"`
	Step        string                   `json:"step"`
	Attempts    int                      `json:"attempts"`
	LastError   *SubscriptionChangeError `json:"lastError"`
	Stripe      StripeIDs                `json:"stripe"`
	EffectiveAt *time.Time               `json:"effectiveAt"`
	RequestedBy string                   `json:"requestedBy"`
	WorkflowID  string                   `json:"workflowId"`
	CompletedAt *time.Time               `json:"completedAt"`
	CreatedAt   time.Time                `json:"createdAt"`
	UpdatedAt   time.Time                `json:"updatedAt"`
}

type SubscriptionChangeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type StripeIDs struct {
	CustomerID      *string `json:"customerId"`
	SubscriptionID  *string `json:"subscriptionId"`
	PriceID         *string `json:"priceId"`
	InvoiceID       *string `json:"invoiceId"`
	PaymentIntentID *string `json:"paymentIntentId"`
}

// SubscriptionChange is a change of plan as the workspace's administrators
// see it, with what paying needs.
type SubscriptionChange struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	SubscriptionChangeFields
	// ClientSecret confirms the payment intent with Stripe.js.
	ClientSecret     *string `json:"clientSecret"`
	HostedInvoiceURL *string `json:"hostedInvoiceUrl"`
}

func ToSubscriptionChangeFields(c *models.SubscriptionChange) SubscriptionChangeFields {
	f := SubscriptionChangeFields{Kind: c.Kind, FromPlan: c.FromPlan, ToPlan: c.ToPlan, Interval: c.Interval, Status: c.Status,
		Step: c.Step, Attempts: c.Attempts, EffectiveAt: c.EffectiveAt, RequestedBy: c.RequestedBy, WorkflowID: names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()),
		CompletedAt: c.CompletedAt, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Stripe: StripeIDs{CustomerID: optionalText(c.StripeCustomerID), SubscriptionID: optionalText(c.StripeSubscriptionID),
			PriceID: optionalText(c.StripePriceID), InvoiceID: optionalText(c.StripeInvoiceID),
			PaymentIntentID: optionalText(c.StripePaymentIntentID)}}
	if c.LastErrorCode != "" || c.LastErrorMessage != "" {
		f.LastError = &SubscriptionChangeError{Code: c.LastErrorCode, Message: c.LastErrorMessage}
	}
	return f
}

func ToSubscriptionChange(c *models.SubscriptionChange) SubscriptionChange {
	r := SubscriptionChange{ID: c.ID, WorkspaceID: c.OrgID, SubscriptionChangeFields: ToSubscriptionChangeFields(c)}
	if c.Status == models.ChangeAwaitingPayment {
		// Only while paying is possible: a closed change's secret is no use.
		r.ClientSecret, r.HostedInvoiceURL = optionalText(c.ClientSecret), optionalText(c.HostedInvoiceURL)
	}
	return r
}

// Subscription is a workspace's plan, its Stripe subscription and the
// change of plan under way: GET /helpdesk/payments/subscription, and the
// object of a subscription.changed event.
type Subscription struct {
	WorkspaceID string `json:"workspaceId"`
	Plan        string `json:"plan"`
	// Subscription is the Stripe subscription (null: never subscribed).
	Subscription  *SubscriptionState  `json:"subscription"`
	PendingChange *SubscriptionChange `json:"pendingChange"`
}

type SubscriptionState struct {
	CustomerID        *string    `json:"customerId"`
	SubscriptionID    *string    `json:"subscriptionId"`
	Status            *string    `json:"status"`
	Plan              *string    `json:"plan"`
	Interval          *string    `json:"interval"`
	CurrentPeriodEnd  *time.Time `json:"currentPeriodEnd"`
	CancelAtPeriodEnd bool       `json:"cancelAtPeriodEnd"`
}

func ToSubscription(o *models.BillingOverview) Subscription {
	out := Subscription{WorkspaceID: o.OrgID, Plan: o.Plan}
	if a := o.Account; a != nil {
		out.Subscription = &SubscriptionState{CustomerID: optionalText(a.StripeCustomerID),
			SubscriptionID: optionalText(a.StripeSubscriptionID), Status: optionalText(a.SubscriptionStatus),
			Plan: optionalText(a.Plan), Interval: optionalText(a.Interval), CurrentPeriodEnd: a.CurrentPeriodEnd,
			CancelAtPeriodEnd: a.CancelAtPeriodEnd}
	}
	if o.Pending != nil {
		pc := ToSubscriptionChange(o.Pending)
		out.PendingChange = &pc
	}
	return out
}
