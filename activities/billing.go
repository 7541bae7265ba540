package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// StripeFailure is why Stripe refused a request or a payment failed, as
// recorded on the change (last error code and message).
type StripeFailure struct {
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

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

func (a *Billing) stripe() (*client.API, error) {
	if a.Stripe == nil {
		return nil, temporal.NewNonRetryableApplicationError("Billing is not configured (STRIPE_SECRET_KEY is empty).", ErrTypeBillingNotConfigured, nil)
	}
	return a.Stripe, nil
}

// params prepares the common request parameters: the activity's context
// (its deadline bounds the request) and, for writes, the idempotency key.
func params(ctx context.Context, p *stripe.Params, key string, meta map[string]string) {
	p.Context = ctx
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	for k, v := range meta {
		p.AddMetadata(k, v)
	}
}

func metadata(c *models.SubscriptionChange) map[string]string {
	return map[string]string{"orgId": c.OrgID, "changeId": c.ID}
}

// stripeError turns a Stripe failure into an activity error: 4xx (other
// than 408, 409 and 429, which Stripe asks to retry) will not succeed by
// retrying, so it is non-retryable and carries Stripe's code and message;
// 5xx and network errors are retried by the activity's retry policy.
func stripeError(op string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		status := se.HTTPStatusCode
		if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusConflict && status != http.StatusTooManyRequests {
			f := StripeFailure{Status: status, Code: string(se.Code), Message: se.Msg}
			if se.DeclineCode != "" {
				f.Code = string(se.DeclineCode)
			}
			if f.Code == "" {
				f.Code = string(se.Type)
			}
			if f.Message == "" {
				f.Message = "Stripe answered " + strconv.Itoa(status) + "."
			}
			return temporal.NewNonRetryableApplicationError("Stripe refused to "+op+": "+f.Message, ErrTypeStripeRejected, err, f)
		}
		return fmt.Errorf("stripe: %s: %d %s: %w", op, status, se.Type, err)
	}
	return fmt.Errorf("stripe: %s: %w", op, err)
}

// EnsureCustomer makes sure the organization has its one Stripe customer
// and records it on the change. A customer already stored is reused; a new
// one is created with the organization's idempotency key.
func (a *Billing) EnsureCustomer(ctx context.Context, changeID string) (string, error) {
	c, err := a.change(ctx, changeID, true)
	if err != nil {
		return "", err
	}
	account, err := models.FindBillingAccount(ctx, a.DB, c.OrgID)
	if err != nil {
		return "", err
	}
	customerID := ""
	if account != nil {
		customerID = account.StripeCustomerID
	}
	if customerID == "" {
		sc, err := a.stripe()
		if err != nil {
			return "", err
		}
		org, err := models.FindOrg(ctx, a.DB, c.OrgID)
		if err != nil {
			return "", err
		}
		if err := a.progress(ctx, c.ID, models.ChangeProgress{Step: models.StepCustomer}); err != nil {
			return "", err
		}
		p := &stripe.CustomerParams{Name: stripe.String(org.Name)}
		params(ctx, &p.Params, CustomerIdempotencyKey(c.OrgID), map[string]string{"orgId": c.OrgID, "changeId": c.ID})
		cus, err := sc.Customers.New(p)
		if err != nil {
			return "", stripeError("create the customer", err)
		}
		if customerID, err = models.SetStripeCustomer(ctx, a.DB, c.OrgID, cus.ID); err != nil {
			return "", err
		}
	}
	return customerID, a.progress(ctx, c.ID, models.ChangeProgress{Step: models.StepCustomer, StripeRefs: models.StripeRefs{StripeCustomerID: customerID}})
}

// price resolves a plan's Stripe price: configured, else by lookup key.
func (a *Billing) price(ctx context.Context, sc *client.API, plan, interval string) (string, error) {
	if id := a.Prices[stripeconfig.PriceKey(plan, interval)]; id != "" {
		return id, nil
	}
	key := stripeconfig.PriceLookupKey(plan, interval)
	lp := &stripe.PriceListParams{LookupKeys: []*string{stripe.String(key)}, Active: stripe.Bool(true)}
	lp.Context = ctx
	lp.Limit = stripe.Int64(1)
	it := sc.Prices.List(lp)
	if it.Next() {
		return it.Price().ID, nil
	}
	if err := it.Err(); err != nil {
		return "", stripeError("look up the price "+key, err)
	}
	return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"No Stripe price for the %s plan billed per %s: set STRIPE_PRICE_* or give an active price the lookup key %s.", plan, interval, key),
		ErrTypePriceNotConfigured, nil, StripeFailure{Code: "price_not_configured", Message: "No Stripe price is configured for the " + plan + " plan (" + interval + "ly)."})
}

// invoiceProgress is what a subscription's latest invoice tells about
// paying for it.
func invoiceProgress(inv *stripe.Invoice, p *models.ChangeProgress) bool {
	if inv == nil {
		return false
	}
	p.StripeInvoiceID, p.HostedInvoiceURL = inv.ID, inv.HostedInvoiceURL
	if inv.PaymentIntent != nil {
		p.StripePaymentIntentID, p.ClientSecret = inv.PaymentIntent.ID, inv.PaymentIntent.ClientSecret
	}
	return inv.Status == stripe.InvoiceStatusPaid
}

// CreateSubscription creates the change's subscription in Stripe, unpaid
// (payment_behavior=default_incomplete), and records what the customer
// needs to pay: the payment intent's client secret and the hosted invoice
// URL. A change whose subscription exists already is not sent again.
func (a *Billing) CreateSubscription(ctx context.Context, changeID string) (PaymentState, error) {
	c, sc, err := a.begin(ctx, changeID, models.ChangeProgress{Step: models.StepSubscription}, func(c *models.SubscriptionChange) bool { return c.StripeSubscriptionID != "" })
	if err != nil || sc == nil {
		return storedPayment(c), err
	}
	if c.StripeCustomerID == "" {
		return PaymentState{}, temporal.NewNonRetryableApplicationError("subscription change "+c.ID+" has no customer yet", ErrTypeChangeClosed, nil)
	}
	price, err := a.price(ctx, sc, c.ToPlan, c.Interval)
	if err != nil {
		return PaymentState{}, err
	}
	p := &stripe.SubscriptionParams{
		Customer:        stripe.String(c.StripeCustomerID),
		Items:           []*stripe.SubscriptionItemsParams{{Price: stripe.String(price)}},
		PaymentBehavior: stripe.String("default_incomplete"),
		PaymentSettings: &stripe.SubscriptionPaymentSettingsParams{SaveDefaultPaymentMethod: stripe.String("on_subscription")},
	}
	params(ctx, &p.Params, IdempotencyKey(c.ID, keySubscriptionCreate), metadata(c))
	p.AddExpand("latest_invoice.payment_intent")
	sub, err := sc.Subscriptions.New(p)
	if err != nil {
		return PaymentState{}, stripeError("create the subscription", err)
	}
	prog := models.ChangeProgress{Step: models.StepPayment, Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeSubscriptionID: sub.ID, StripePriceID: price}}
	paid := invoiceProgress(sub.LatestInvoice, &prog)
	if err := a.progress(ctx, c.ID, prog); err != nil {
		return PaymentState{}, err
	}
	return PaymentState{SubscriptionID: sub.ID, InvoiceID: prog.StripeInvoiceID, Paid: paid}, nil
}

// firstItem is the subscription's (single) item, whose price changes.
func firstItem(sub *stripe.Subscription) (string, error) {
	if sub.Items == nil || len(sub.Items.Data) == 0 {
		return "", temporal.NewNonRetryableApplicationError("subscription "+sub.ID+" has no items", ErrTypeStripeRejected, nil,
			StripeFailure{Code: "subscription_without_items", Message: "The Stripe subscription has no items to change."})
	}
	return sub.Items.Data[0].ID, nil
}

// UpgradeSubscription moves the subscription to the higher plan's price at
// once with proration, invoiced immediately; with
// payment_behavior=pending_if_incomplete Stripe applies the new price only
// once that invoice is paid. A change whose invoice exists already is not
// sent again.
func (a *Billing) UpgradeSubscription(ctx context.Context, changeID string) (PaymentState, error) {
	c, sc, err := a.begin(ctx, changeID, models.ChangeProgress{Step: models.StepSubscription}, func(c *models.SubscriptionChange) bool { return c.StripeInvoiceID != "" })
	if err != nil || sc == nil {
		return storedPayment(c), err
	}
	sub, item, price, err := a.subscriptionAndPrice(ctx, sc, c)
	if err != nil {
		return PaymentState{}, err
	}
	p := &stripe.SubscriptionParams{
		Items:             []*stripe.SubscriptionItemsParams{{ID: stripe.String(item), Price: stripe.String(price)}},
		ProrationBehavior: stripe.String("always_invoice"),
		PaymentBehavior:   stripe.String("pending_if_incomplete"),
	}
	params(ctx, &p.Params, IdempotencyKey(c.ID, keySubscriptionUpgrade), nil)
	p.AddExpand("latest_invoice.payment_intent")
	updated, err := sc.Subscriptions.Update(sub.ID, p)
	if err != nil {
		return PaymentState{}, stripeError("upgrade the subscription", err)
	}
	prog := models.ChangeProgress{Step: models.StepPayment, Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeSubscriptionID: updated.ID, StripePriceID: price}}
	paid := invoiceProgress(updated.LatestInvoice, &prog)
	if err := a.progress(ctx, c.ID, prog); err != nil {
		return PaymentState{}, err
	}
	return PaymentState{SubscriptionID: updated.ID, InvoiceID: prog.StripeInvoiceID, Paid: paid}, nil
}

func (a *Billing) subscriptionAndPrice(ctx context.Context, sc *client.API, c *models.SubscriptionChange) (*stripe.Subscription, string, string, error) {
	gp := &stripe.SubscriptionParams{}
	gp.Context = ctx
	sub, err := sc.Subscriptions.Get(c.StripeSubscriptionID, gp)
	if err != nil {
		return nil, "", "", stripeError("read the subscription", err)
	}
	item, err := firstItem(sub)
	if err != nil {
		return nil, "", "", err
	}
	price, err := a.price(ctx, sc, c.ToPlan, c.Interval)
	return sub, item, price, err
}

// ScheduleChange arranges a downgrade or cancellation for the end of the
// current period and returns when that is: a downgrade changes the price
// without proration (the next period is billed at the lower price), a
// cancellation sets cancel_at_period_end. The organization keeps its
// current limits until then. A change already scheduled is not sent again.
func (a *Billing) ScheduleChange(ctx context.Context, changeID string) (time.Time, error) {
	c, sc, err := a.begin(ctx, changeID, models.ChangeProgress{Step: models.StepSchedule}, func(c *models.SubscriptionChange) bool { return c.EffectiveAt != nil })
	if err != nil {
		return time.Time{}, err
	}
	if sc == nil {
		return *c.EffectiveAt, nil
	}
	prog := models.ChangeProgress{Step: models.StepPeriodEnd, Status: models.ChangeScheduled}
	p := &stripe.SubscriptionParams{}
	switch c.Kind {
	case models.ChangeDowngrade:
		_, item, price, err := a.subscriptionAndPrice(ctx, sc, c)
		if err != nil {
			return time.Time{}, err
		}
		p.Items = []*stripe.SubscriptionItemsParams{{ID: stripe.String(item), Price: stripe.String(price)}}
		p.ProrationBehavior = stripe.String("none")
		params(ctx, &p.Params, IdempotencyKey(c.ID, keySubscriptionDowngrade), nil)
		prog.StripePriceID = price
	case models.ChangeCancel:
		p.CancelAtPeriodEnd = stripe.Bool(true)
		params(ctx, &p.Params, IdempotencyKey(c.ID, keySubscriptionCancel), nil)
	default:
		return time.Time{}, temporal.NewNonRetryableApplicationError("a "+c.Kind+" change is not scheduled", ErrTypeChangeClosed, nil)
	}
	sub, err := sc.Subscriptions.Update(c.StripeSubscriptionID, p)
	if err != nil {
		return time.Time{}, stripeError("schedule the "+c.Kind, err)
	}
	at := time.Unix(sub.CurrentPeriodEnd, 0).UTC()
	if sub.CurrentPeriodEnd == 0 {
		at = time.Now().UTC()
	}
	prog.EffectiveAt = &at
	return at, a.progress(ctx, c.ID, prog)
}

// RetryPayment is a billing-staff retry of a change whose payment failed:
// it reads the invoice and, if it is still open, asks Stripe to charge it
// again (retry's own idempotency key; an invoice is paid at most once). An
// invoice paid meanwhile (the hosted invoice page) is simply paid.
func (a *Billing) RetryPayment(ctx context.Context, changeID string, retry int) (PaymentState, error) {
	// Without an invoice there is nothing to charge: the run waits.
	c, sc, err := a.begin(ctx, changeID, models.ChangeProgress{Step: models.StepPayment, Status: models.ChangeAwaitingPayment}, func(c *models.SubscriptionChange) bool { return c.StripeInvoiceID == "" })
	if err != nil || sc == nil {
		return storedPayment(c), err
	}
	state := storedPayment(c)
	gp := &stripe.InvoiceParams{}
	gp.Context = ctx
	inv, err := sc.Invoices.Get(c.StripeInvoiceID, gp)
	if err != nil {
		return PaymentState{}, stripeError("read the invoice", err)
	}
	switch inv.Status {
	case stripe.InvoiceStatusPaid:
		state.Paid = true
		return state, nil
	case stripe.InvoiceStatusVoid, stripe.InvoiceStatusUncollectible:
		return PaymentState{}, temporal.NewNonRetryableApplicationError("invoice "+inv.ID+" is "+string(inv.Status), ErrTypeStripeRejected, nil,
			StripeFailure{Code: "invoice_" + string(inv.Status), Message: "The invoice is " + string(inv.Status) + " and can no longer be paid; request a new change."})
	case stripe.InvoiceStatusOpen:
		pp := &stripe.InvoicePayParams{}
		params(ctx, &pp.Params, IdempotencyKey(c.ID, invoicePayKey(retry)), nil)
		pp.AddExpand("payment_intent")
		paid, err := sc.Invoices.Pay(inv.ID, pp)
		if err != nil {
			return PaymentState{}, stripeError("charge the invoice", err)
		}
		prog := models.ChangeProgress{}
		state.Paid = invoiceProgress(paid, &prog)
		return state, a.progress(ctx, c.ID, prog)
	}
	return state, nil
}

// PaymentFailure reads why the payment of the change's invoice failed
// (the payment intent's last error), for the change's last error.
func (a *Billing) PaymentFailure(ctx context.Context, changeID string) (StripeFailure, error) {
	generic := StripeFailure{Code: "payment_failed", Message: "The payment failed."}
	c, err := a.change(ctx, changeID, false)
	if err != nil {
		return generic, err
	}
	sc, err := a.stripe()
	if err != nil || c.StripeInvoiceID == "" {
		return generic, err
	}
	gp := &stripe.InvoiceParams{}
	gp.Context = ctx
	gp.AddExpand("payment_intent")
	inv, err := sc.Invoices.Get(c.StripeInvoiceID, gp)
	if err != nil {
		return generic, stripeError("read the invoice", err)
	}
	if inv.PaymentIntent == nil || inv.PaymentIntent.LastPaymentError == nil {
		return generic, nil
	}
	e := inv.PaymentIntent.LastPaymentError
	f := StripeFailure{Code: string(e.Code), Message: e.Msg}
	if e.DeclineCode != "" {
		f.Code = string(e.DeclineCode)
	}
	if f.Code == "" {
		f.Code = generic.Code
	}
	if f.Message == "" {
		f.Message = generic.Message
	}
	return f, nil
}

// ExpireUnpaid ends a change whose payment did not arrive in time: a new
// subscription still incomplete is canceled in Stripe (an upgrade's pending
// update expires by itself). It reports true when the money did arrive
// after all (the subscription is active, the invoice paid): then the plan
// is applied instead.
func (a *Billing) ExpireUnpaid(ctx context.Context, changeID string) (bool, error) {
	c, sc, err := a.begin(ctx, changeID, models.ChangeProgress{Step: models.StepExpire}, nil)
	if err != nil {
		return false, err
	}
	if c.Kind != models.ChangeCreate || c.StripeSubscriptionID == "" {
		if c.StripeInvoiceID == "" {
			return false, nil
		}
		gp := &stripe.InvoiceParams{}
		gp.Context = ctx
		inv, err := sc.Invoices.Get(c.StripeInvoiceID, gp)
		if err != nil {
			return false, stripeError("read the invoice", err)
		}
		return inv.Status == stripe.InvoiceStatusPaid, nil
	}
	gp := &stripe.SubscriptionParams{}
	gp.Context = ctx
	sub, err := sc.Subscriptions.Get(c.StripeSubscriptionID, gp)
	if err != nil {
		return false, stripeError("read the subscription", err)
	}
	switch sub.Status {
	case stripe.SubscriptionStatusActive, stripe.SubscriptionStatusTrialing:
		return true, nil
	case stripe.SubscriptionStatusIncomplete:
		cp := &stripe.SubscriptionCancelParams{}
		params(ctx, &cp.Params, IdempotencyKey(c.ID, keySubscriptionExpire), nil)
		if _, err := sc.Subscriptions.Cancel(sub.ID, cp); err != nil {
			return false, stripeError("cancel the unpaid subscription", err)
		}
	}
	return false, nil
}

// SyncSubscription records Stripe's view of the change's subscription
// (status, current period end) on the organization's billing account once
// the change is applied, so the account shows the new period without
// waiting for the next event. A cancellation has nothing to read.
func (a *Billing) SyncSubscription(ctx context.Context, changeID string) error {
	c, err := a.change(ctx, changeID, false)
	if err != nil || c.Kind == models.ChangeCancel || c.StripeSubscriptionID == "" {
		return err
	}
	sc, err := a.stripe()
	if err != nil {
		return err
	}
	gp := &stripe.SubscriptionParams{}
	gp.Context = ctx
	at := time.Now()
	sub, err := sc.Subscriptions.Get(c.StripeSubscriptionID, gp)
	if err != nil {
		return stripeError("read the subscription", err)
	}
	st := models.SubscriptionState{Status: string(sub.Status), CancelAtPeriodEnd: sub.CancelAtPeriodEnd}
	if sub.CurrentPeriodEnd > 0 {
		end := time.Unix(sub.CurrentPeriodEnd, 0).UTC()
		st.CurrentPeriodEnd = &end
	}
	return a.changeBilling(ctx, c.OrgID, func(tx *gorm.DB) error {
		_, err := models.RecordSubscriptionState(ctx, tx, c.OrgID, c.StripeSubscriptionID, st, at)
		return err
	})
}

// ApplyPlan puts the change's plan into effect (models.ApplySubscriptionChange).
func (a *Billing) ApplyPlan(ctx context.Context, changeID string) error {
	c, err := a.change(ctx, changeID, false)
	if err != nil {
		return err
	}
	return closedErr(changeID, a.changeBilling(ctx, c.OrgID, func(tx *gorm.DB) error {
		_, err := models.ApplySubscriptionChange(ctx, tx, changeID)
		return err
	}))
}

// changeBilling makes change, a change of the organization's billing, in
// a transaction that also records what it moved for the organization's
// endpoints: subscription.changed when the plan or the Stripe
// subscription changed (views.SubscriptionChangedEvents).
// models.ApplySubscriptionChange's own transaction nests in it (a
// savepoint).
func (a *Billing) changeBilling(ctx context.Context, orgID string, change func(tx *gorm.DB) error) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		before, err := models.OrgBilling(ctx, tx.DB, orgID)
		if err != nil {
			return err
		}
		if err := change(tx.DB); err != nil {
			return err
		}
		after, err := models.OrgBilling(ctx, tx.DB, orgID)
		if err != nil {
			return err
		}
		events, err := views.SubscriptionChangedEvents(before, after)
		if err != nil {
			return err
		}
		return tx.Emit(events...)
	})
}

// CloseChange ends the change as failed, expired or canceled with a code
// and a message.
func (a *Billing) CloseChange(ctx context.Context, changeID, status string, why StripeFailure) error {
	_, err := models.CloseSubscriptionChange(ctx, a.DB, changeID, status, why.Code, why.Message)
	return closedErr(changeID, err)
}

func closedErr(changeID string, err error) error {
	switch {
	case errors.Is(err, models.ErrNotFound):
		return temporal.NewNonRetryableApplicationError("subscription change "+changeID+" does not exist", ErrTypeNotFound, err)
	case errors.Is(err, models.ErrConflict):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeChangeClosed, err)
	}
	return err
}
