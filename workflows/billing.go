package workflows

import (
	"errors"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows/names"
)

// One file over 400 lines on purpose: it is the SubscriptionChange workflow
// read top to bottom (its inputs and options, the run, the waits for Stripe,
// the ways a change ends); split, one run's steps would be spread over files.

// Error types a SubscriptionChange run fails with (visible in the Temporal
// UI; the change records the code and message).
const (
	ErrTypeChangeFailed  = "SubscriptionChangeFailed"
	ErrTypeChangeExpired = "SubscriptionChangeExpired"
)

// PaymentWindow is how long a change waits for Stripe to say the money is
// there before it cancels the unpaid subscription and expires.
const PaymentWindow = 24 * time.Hour

// Change statuses and kinds as the workflow sees them (models holds the
// authoritative lists; workflows do not import models).
const (
	changeCreate    = "create"
	changeUpgrade   = "upgrade"
	changeDowngrade = "downgrade"
	changeCancel    = "cancel"

	statusApplied  = "applied"
	statusFailed   = "failed"
	statusExpired  = "expired"
	statusCanceled = "canceled"
)

// Stripe event types the workflow reacts to.
const (
	eventInvoicePaid          = "invoice.paid"
	eventInvoicePaymentFailed = "invoice.payment_failed"
	eventSubscriptionUpdated  = "customer.subscription.updated"
	eventSubscriptionDeleted  = "customer.subscription.deleted"
)

// SubscriptionChangeInput names the change and which run this is.
type SubscriptionChangeInput struct {
	ChangeID string `json:"changeId"`
	OrgID    string `json:"orgId"`
	// Retry is 0 for the first run and n for the nth billing-staff retry.
	Retry int `json:"retry,omitempty"`
}

// SubscriptionChangeResult is how a run ended.
type SubscriptionChangeResult struct {
	Status string `json:"status"`
	Plan   string `json:"plan,omitempty"`
}

// StripeEventSignal is a Stripe event that concerns a change, as relayed
// by the webhook (api/billing) through the outbox.
type StripeEventSignal struct {
	EventID            string `json:"eventId"`
	Type               string `json:"type"`
	SubscriptionID     string `json:"subscriptionId,omitempty"`
	InvoiceID          string `json:"invoiceId,omitempty"`
	SubscriptionStatus string `json:"subscriptionStatus,omitempty"`
}

// stripeOptions: Stripe answers quickly; 5xx and network errors are
// retried with backoff for up to an hour (same idempotency key each time),
// refusals (4xx) and configuration errors are not.
var stripeOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    30 * time.Second,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 2 * time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeStripeRejected, activities.ErrTypeBillingNotConfigured,
			activities.ErrTypePriceNotConfigured, activities.ErrTypeChangeClosed, activities.ErrTypeNotFound},
	},
}

// billingDBOptions: database steps retry until they succeed, unless the
// change is gone or closed.
var billingDBOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeChangeClosed, activities.ErrTypeNotFound},
	},
}

// failureDetailOptions: reading why a payment failed, or the new period
// after applying, is a nicety; a few quick attempts, then without.
var failureDetailOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
}

// SubscriptionChange carries one change of plan through Stripe and records
// every step on the change (models.SubscriptionChange):
//
//   - create: ensure the organization's Stripe customer → create the
//     subscription unpaid → wait for the payment → apply the plan;
//   - upgrade: change the price with proration, invoiced at once → wait for
//     the payment → apply;
//   - downgrade, cancel: schedule at Stripe for the period end → wait for
//     it → apply.
//
// No payment within PaymentWindow cancels the unpaid subscription and the
// change expires; a declined payment or a Stripe refusal fails it (the run
// fails too, so operators find it in the Temporal UI by OrgId and Kind);
// the subscription deleted in Stripe meanwhile cancels it. A billing-staff
// retry runs this workflow again (SubscriptionChangeInput.Retry) and it
// resumes from the step that failed: steps whose Stripe objects the change
// already records are skipped, the others send the same idempotency keys.
func SubscriptionChange(ctx workflow.Context, in SubscriptionChangeInput) (res SubscriptionChangeResult, err error) {
	r := &changeRun{in: in, step: "load", events: workflow.GetSignalChannel(ctx, names.SignalStripeEvent)}
	if err := workflow.SetQueryHandler(ctx, names.QuerySubscriptionChangeStep, func() (string, error) { return r.step, nil }); err != nil {
		return res, err
	}
	var a *activities.Billing
	dctx := workflow.WithActivityOptions(ctx, billingDBOptions)
	if err := workflow.ExecuteActivity(dctx, a.LoadChange, in.ChangeID).Get(ctx, &r.st); err != nil {
		return res, err
	}
	switch r.st.Status {
	case statusApplied, statusFailed, statusExpired, statusCanceled:
		// Already closed (a stale run): nothing to do.
		return SubscriptionChangeResult{Status: r.st.Status}, nil
	}
	defer func() {
		// An operator canceled the run: the change must not stay open.
		if !temporal.IsCanceledError(err) {
			return
		}
		cctx, _ := workflow.NewDisconnectedContext(ctx)
		cctx = workflow.WithActivityOptions(cctx, billingDBOptions)
		why := activities.StripeFailure{Code: "workflow_canceled", Message: "The change's workflow was canceled by an operator."}
		if cerr := workflow.ExecuteActivity(cctx, a.CloseChange, in.ChangeID, statusCanceled, why).Get(cctx, nil); cerr != nil {
			workflow.GetLogger(ctx).Error("could not mark the change canceled", "changeId", in.ChangeID, "error", cerr)
		}
	}()
	return r.run(ctx)
}

// changeRun is one run's state.
type changeRun struct {
	in     SubscriptionChangeInput
	st     activities.ChangeState
	step   string
	events workflow.ReceiveChannel
}

// outcome of waiting for Stripe.
type outcome int

const (
	outcomeNone outcome = iota
	outcomePaid
	outcomeFailed
	outcomeCanceled
	outcomePeriodEnded
)

func (r *changeRun) run(ctx workflow.Context) (SubscriptionChangeResult, error) {
	switch r.st.Kind {
	case changeCreate, changeUpgrade:
		pay, err := r.obtainPayment(ctx)
		if err != nil {
			return r.fail(ctx, err)
		}
		if !pay.Paid {
			switch r.waitForPayment(ctx, pay) {
			case outcomeFailed:
				return r.paymentFailed(ctx)
			case outcomeCanceled:
				return r.canceled(ctx)
			case outcomeNone: // the window passed
				if paid, res, err := r.expire(ctx); !paid {
					return res, err
				}
			}
		}
	case changeDowngrade, changeCancel:
		at, err := r.schedule(ctx)
		if err != nil {
			return r.fail(ctx, err)
		}
		if r.waitForPeriodEnd(ctx, at) == outcomeCanceled {
			return r.canceled(ctx)
		}
	default:
		return SubscriptionChangeResult{}, temporal.NewNonRetryableApplicationError("unknown change kind "+r.st.Kind, ErrTypeChangeFailed, nil)
	}
	r.step = "apply"
	var a *activities.Billing
	dctx := workflow.WithActivityOptions(ctx, billingDBOptions)
	if err := workflow.ExecuteActivity(dctx, a.ApplyPlan, r.in.ChangeID).Get(ctx, nil); err != nil {
		return SubscriptionChangeResult{}, err
	}
	// Best effort: the account's period end; the next event would bring it too.
	fctx := workflow.WithActivityOptions(ctx, failureDetailOptions)
	if err := workflow.ExecuteActivity(fctx, a.SyncSubscription, r.in.ChangeID).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not read the subscription after applying", "changeId", r.in.ChangeID, "error", err)
	}
	r.step = statusApplied
	return SubscriptionChangeResult{Status: statusApplied, Plan: r.st.ToPlan}, nil
}

// obtainPayment creates (or upgrades) the subscription, or — on a retry of
// a change whose payment failed — asks Stripe to charge the invoice again.
func (r *changeRun) obtainPayment(ctx workflow.Context) (activities.PaymentState, error) {
	var a *activities.Billing
	sctx := workflow.WithActivityOptions(ctx, stripeOptions)
	pay := activities.PaymentState{SubscriptionID: r.st.SubscriptionID, InvoiceID: r.st.InvoiceID}
	if r.st.Kind == changeCreate && r.st.CustomerID == "" {
		r.step = "customer"
		if err := workflow.ExecuteActivity(sctx, a.EnsureCustomer, r.in.ChangeID).Get(ctx, nil); err != nil {
			return pay, err
		}
	}
	var step any
	switch {
	case r.st.Kind == changeCreate && r.st.SubscriptionID == "":
		r.step, step = "subscription", a.CreateSubscription
	case r.st.Kind == changeUpgrade && r.st.InvoiceID == "":
		r.step, step = "subscription", a.UpgradeSubscription
	case r.in.Retry > 0:
		r.step = "payment"
		err := workflow.ExecuteActivity(sctx, a.RetryPayment, r.in.ChangeID, r.in.Retry).Get(ctx, &pay)
		return pay, err
	default:
		return pay, nil
	}
	err := workflow.ExecuteActivity(sctx, step, r.in.ChangeID).Get(ctx, &pay)
	return pay, err
}

// waitForPayment waits for Stripe's word on the payment, up to the window.
func (r *changeRun) waitForPayment(ctx workflow.Context, pay activities.PaymentState) outcome {
	r.step = "payment"
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimer(timerCtx, PaymentWindow)
	for {
		ev, ok := r.next(ctx, timer)
		if !ok {
			return outcomeNone
		}
		if o := paymentOutcome(r.st.Kind, pay, ev); o != outcomeNone {
			return o
		}
	}
}

// next waits for the next Stripe event, or for timer (then ok is false).
func (r *changeRun) next(ctx workflow.Context, timer workflow.Future) (ev StripeEventSignal, ok bool) {
	ok = true
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(r.events, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &ev) })
	sel.AddFuture(timer, func(workflow.Future) { ok = false })
	sel.Select(ctx)
	return ev, ok
}

// paymentOutcome tells what a Stripe event means for a change awaiting
// payment (outcomeNone: nothing, keep waiting). A new subscription is paid
// when its invoice is paid or it turns active; an upgrade when its
// proration invoice is paid.
func paymentOutcome(kind string, pay activities.PaymentState, ev StripeEventSignal) outcome {
	sameSub := ev.SubscriptionID != "" && ev.SubscriptionID == pay.SubscriptionID
	ours := sameSub
	if kind == changeUpgrade {
		ours = ev.InvoiceID != "" && ev.InvoiceID == pay.InvoiceID
	}
	switch {
	case ev.Type == eventInvoicePaid && ours:
		return outcomePaid
	case ev.Type == eventInvoicePaymentFailed && ours:
		return outcomeFailed
	case ev.Type == eventSubscriptionUpdated && sameSub && kind == changeCreate &&
		(ev.SubscriptionStatus == "active" || ev.SubscriptionStatus == "trialing"):
		return outcomePaid
	case ev.Type == eventSubscriptionDeleted && sameSub:
		return outcomeCanceled
	}
	return outcomeNone
}

// schedule arranges a downgrade or cancellation at the period end (unless
// already done) and returns when that is.
func (r *changeRun) schedule(ctx workflow.Context) (time.Time, error) {
	if r.st.EffectiveAt != nil {
		return *r.st.EffectiveAt, nil
	}
	r.step = "schedule"
	var a *activities.Billing
	sctx := workflow.WithActivityOptions(ctx, stripeOptions)
	var at time.Time
	err := workflow.ExecuteActivity(sctx, a.ScheduleChange, r.in.ChangeID).Get(ctx, &at)
	return at, err
}

// waitForPeriodEnd waits until a scheduled change takes effect: at the
// period end, or earlier when Stripe deletes the subscription (a
// cancellation is then complete; a downgrade is canceled — the
// organization is already back on free).
func (r *changeRun) waitForPeriodEnd(ctx workflow.Context, at time.Time) outcome {
	r.step = "period_end"
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimer(timerCtx, max(at.Sub(workflow.Now(ctx)), time.Millisecond))
	for {
		ev, ok := r.next(ctx, timer)
		switch {
		case !ok:
			return outcomePeriodEnded
		case ev.Type == eventSubscriptionDeleted && ev.SubscriptionID == r.st.SubscriptionID && r.st.Kind == changeCancel:
			return outcomePeriodEnded
		case ev.Type == eventSubscriptionDeleted && ev.SubscriptionID == r.st.SubscriptionID:
			return outcomeCanceled
		}
	}
}

// expire ends a change whose payment did not arrive in time. It reports
// true when the money turned out to be there (then the plan is applied).
func (r *changeRun) expire(ctx workflow.Context) (bool, SubscriptionChangeResult, error) {
	r.step = "expire"
	var a *activities.Billing
	sctx := workflow.WithActivityOptions(ctx, stripeOptions)
	var paid bool
	if err := workflow.ExecuteActivity(sctx, a.ExpireUnpaid, r.in.ChangeID).Get(ctx, &paid); err != nil {
		res, err := r.fail(ctx, err)
		return false, res, err
	}
	if paid {
		return true, SubscriptionChangeResult{}, nil
	}
	why := activities.StripeFailure{Code: "payment_timeout", Message: "No payment arrived within " + strconv.Itoa(int(PaymentWindow.Hours())) + " hours; the unpaid subscription was canceled."}
	if err := r.close(ctx, statusExpired, why); err != nil {
		return false, SubscriptionChangeResult{}, err
	}
	return false, SubscriptionChangeResult{Status: statusExpired}, temporal.NewNonRetryableApplicationError(why.Message, ErrTypeChangeExpired, nil, why)
}

// paymentFailed records why the payment failed and fails the change.
func (r *changeRun) paymentFailed(ctx workflow.Context) (SubscriptionChangeResult, error) {
	var a *activities.Billing
	fctx := workflow.WithActivityOptions(ctx, failureDetailOptions)
	why := activities.StripeFailure{Code: "payment_failed", Message: "The payment failed."}
	if err := workflow.ExecuteActivity(fctx, a.PaymentFailure, r.in.ChangeID).Get(ctx, &why); err != nil {
		workflow.GetLogger(ctx).Warn("could not read why the payment failed", "changeId", r.in.ChangeID, "error", err)
	}
	return r.failWith(ctx, why)
}

// canceled ends a change whose subscription was deleted in Stripe.
func (r *changeRun) canceled(ctx workflow.Context) (SubscriptionChangeResult, error) {
	why := activities.StripeFailure{Code: "subscription_canceled", Message: "The subscription was canceled in Stripe before the change took effect."}
	if err := r.close(ctx, statusCanceled, why); err != nil {
		return SubscriptionChangeResult{}, err
	}
	return SubscriptionChangeResult{Status: statusCanceled}, nil
}

// fail ends the change as failed because a step failed: with Stripe's code
// and message for a refusal, or a summary when Stripe stayed unreachable.
func (r *changeRun) fail(ctx workflow.Context, err error) (SubscriptionChangeResult, error) {
	var appErr *temporal.ApplicationError
	why := activities.StripeFailure{Code: "stripe_unavailable", Message: "Stripe could not be reached; the step was retried for an hour."}
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeChangeClosed, activities.ErrTypeNotFound:
			return SubscriptionChangeResult{}, err // someone else closed it; nothing to record
		case activities.ErrTypeBillingNotConfigured:
			why = activities.StripeFailure{Code: "billing_not_configured", Message: appErr.Message()}
		case activities.ErrTypeStripeRejected, activities.ErrTypePriceNotConfigured:
			if appErr.HasDetails() {
				_ = appErr.Details(&why)
			}
		}
	}
	return r.failWith(ctx, why)
}

func (r *changeRun) failWith(ctx workflow.Context, why activities.StripeFailure) (SubscriptionChangeResult, error) {
	if err := r.close(ctx, statusFailed, why); err != nil {
		return SubscriptionChangeResult{}, err
	}
	return SubscriptionChangeResult{Status: statusFailed}, temporal.NewNonRetryableApplicationError(
		"The "+r.st.Kind+" to "+r.st.ToPlan+" failed at step "+r.step+": "+why.Message, ErrTypeChangeFailed, nil, why)
}

func (r *changeRun) close(ctx workflow.Context, status string, why activities.StripeFailure) error {
	var a *activities.Billing
	dctx := workflow.WithActivityOptions(ctx, billingDBOptions)
	return workflow.ExecuteActivity(dctx, a.CloseChange, r.in.ChangeID, status, why).Get(ctx, nil)
}
