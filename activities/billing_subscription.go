package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// The Stripe steps that set up a change's subscription: the organization's
// customer, then creating, upgrading or scheduling (downgrade, cancellation)
// the subscription at the plan's price.

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
