package activities

import (
	"context"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/models"
)

// The payment of a change: a staff retry of a failed charge, why the
// charge failed, and the end of a change whose payment did not arrive.

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
