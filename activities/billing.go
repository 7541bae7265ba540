package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v76/client"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// Billing are the activities of the SubscriptionChange workflow. Every
// Stripe request that can create or change something carries an
// idempotency key derived from the change id and the step
// (IdempotencyKey), so a retried activity or a re-run change never creates
// a second customer, subscription or charge; every object the suite
// creates carries orgId and changeId in its metadata.
type Billing struct {
	DB *gorm.DB
	// Stripe is nil when billing is not configured.
	Stripe *client.API
	// Prices maps stripeconfig.PriceKey(plan, interval) to a Stripe price id.
	Prices map[string]string
}

// NewBilling builds the billing activities from the configuration.
func NewBilling(db *gorm.DB, cfg stripeconfig.Config) *Billing {
	return &Billing{DB: db, Stripe: cfg.NewClient(), Prices: cfg.Prices}
}

// IdempotencyKey is the Stripe idempotency key of one step of a change.
// Retries of the step, and re-runs of the change, send the same key.
func IdempotencyKey(changeID, step string) string { return "suite/change/" + changeID + "/" + step }

// CustomerIdempotencyKey is the key of an organization's customer creation:
// the customer belongs to the organization, not to one change, so two
// changes can never create two customers.
func CustomerIdempotencyKey(orgID string) string { return "suite/org/" + orgID + "/customer" }

// Idempotency-key steps.
const (
	keySubscriptionCreate    = "subscription-create"
	keySubscriptionUpgrade   = "subscription-upgrade"
	keySubscriptionDowngrade = "subscription-downgrade"
	keySubscriptionCancel    = "subscription-cancel"
	keySubscriptionExpire    = "subscription-expire"
)

// invoicePayKey is the key of the payment attempt of retry n: a retry asks
// Stripe to charge again, which an earlier attempt's key would only answer
// with the earlier decline. An invoice is paid at most once, so this cannot
// charge twice.
func invoicePayKey(retry int) string { return "invoice-pay/retry-" + strconv.Itoa(retry) }

// ChangeState is what the workflow needs to know of a change to run (or
// resume) it.
type ChangeState struct {
	ChangeID       string     `json:"changeId"`
	OrgID          string     `json:"orgId"`
	Kind           string     `json:"kind"`
	Status         string     `json:"status"`
	Step           string     `json:"step"`
	ToPlan         string     `json:"toPlan"`
	CustomerID     string     `json:"customerId,omitempty"`
	SubscriptionID string     `json:"subscriptionId,omitempty"`
	InvoiceID      string     `json:"invoiceId,omitempty"`
	EffectiveAt    *time.Time `json:"effectiveAt,omitempty"`
}

// PaymentState is where the payment of a change stands after a step.
type PaymentState struct {
	SubscriptionID string `json:"subscriptionId"`
	InvoiceID      string `json:"invoiceId,omitempty"`
	// Paid: Stripe says the money is there.
	Paid bool `json:"paid"`
}

// storedPayment is the payment state a change records (zero for nil).
func storedPayment(c *models.SubscriptionChange) PaymentState {
	if c == nil {
		return PaymentState{}
	}
	return PaymentState{SubscriptionID: c.StripeSubscriptionID, InvoiceID: c.StripeInvoiceID}
}

// LoadChange reads the change's state.
func (a *Billing) LoadChange(ctx context.Context, changeID string) (ChangeState, error) {
	c, err := a.change(ctx, changeID, false)
	if err != nil {
		return ChangeState{}, err
	}
	return ChangeState{ChangeID: c.ID, OrgID: c.OrgID, Kind: c.Kind, Status: c.Status, Step: c.Step, ToPlan: c.ToPlan,
		CustomerID: c.StripeCustomerID, SubscriptionID: c.StripeSubscriptionID, InvoiceID: c.StripeInvoiceID, EffectiveAt: c.EffectiveAt}, nil
}

// change loads a change; with open, a change that is no longer open is a
// non-retryable ChangeClosed.
func (a *Billing) change(ctx context.Context, changeID string, open bool) (*models.SubscriptionChange, error) {
	c, err := models.FindSubscriptionChange(ctx, a.DB, "", changeID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("subscription change "+changeID+" does not exist", ErrTypeNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	if open && !models.IsOpenChange(c.Status) {
		return nil, changeClosed(c)
	}
	return c, nil
}

func changeClosed(c *models.SubscriptionChange) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("subscription change %s is %s", c.ID, c.Status), ErrTypeChangeClosed, nil)
}

// progress records a step's outcome on the change.
func (a *Billing) progress(ctx context.Context, changeID string, p models.ChangeProgress) error {
	_, err := models.RecordChangeProgress(ctx, a.DB, changeID, p)
	var de *models.DomainError
	if errors.As(err, &de) && de.Code == "change_closed" {
		return temporal.NewNonRetryableApplicationError(de.Message, ErrTypeChangeClosed, err)
	}
	return err
}

// begin starts a Stripe step of an open change: nothing is sent when done
// says the change already has the step's result (sc is nil then);
// otherwise the step (as p) is recorded on the change as under way.
func (a *Billing) begin(ctx context.Context, changeID string, p models.ChangeProgress, done func(*models.SubscriptionChange) bool) (*models.SubscriptionChange, *client.API, error) {
	c, err := a.change(ctx, changeID, true)
	if err != nil || (done != nil && done(c)) {
		return c, nil, err
	}
	sc, err := a.stripe()
	if err != nil {
		return nil, nil, err
	}
	return c, sc, a.progress(ctx, c.ID, p)
}
