package workflows_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

const changeID = "01a1fec5-0000-7000-8000-0000000000c1"

var billing *activities.Billing

func billingEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Billing{})
	env.OnActivity(billing.SyncSubscription, mock.Anything, changeID).Return(nil).Maybe()
	return env
}

func newCreate() activities.ChangeState {
	return activities.ChangeState{ChangeID: changeID, OrgID: orgID, Kind: "create", Status: "pending", ToPlan: "business"}
}

func load(env *testsuite.TestWorkflowEnvironment, st activities.ChangeState) {
	env.OnActivity(billing.LoadChange, mock.Anything, changeID).Return(st, nil).Once()
}

// signalAfter delivers a Stripe event to the workflow after d of workflow time.
func signalAfter(env *testsuite.TestWorkflowEnvironment, d time.Duration, ev workflows.StripeEventSignal) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(names.SignalStripeEvent, ev) }, d)
}

// closed records the CloseChange calls.
func closed(env *testsuite.TestWorkflowEnvironment) *[]string {
	var got []string
	env.OnActivity(billing.CloseChange, mock.Anything, changeID, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ string, status string, why activities.StripeFailure) error {
			got = append(got, status+":"+why.Code+":"+why.Message)
			return nil
		}).Maybe()
	return &got
}

// expectUnpaidSubscription: a new change whose customer and unpaid
// subscription (sub_1, invoice in_1) are created once each.
func expectUnpaidSubscription(env *testsuite.TestWorkflowEnvironment) {
	load(env, newCreate())
	env.OnActivity(billing.EnsureCustomer, mock.Anything, changeID).Return("cus_1", nil).Once()
	env.OnActivity(billing.CreateSubscription, mock.Anything, changeID).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1"}, nil).Once()
}

// expectClosed checks the change was closed once, as status:code:message
// starting with want.
func expectClosed(t *testing.T, closes []string, want string) {
	t.Helper()
	if len(closes) != 1 || !strings.HasPrefix(closes[0], want) {
		t.Fatalf("closed %v, want once %q…", closes, want)
	}
}

func run(env *testsuite.TestWorkflowEnvironment, retry int) (workflows.SubscriptionChangeResult, error) {
	env.ExecuteWorkflow(workflows.SubscriptionChange, workflows.SubscriptionChangeInput{ChangeID: changeID, OrgID: orgID, Retry: retry})
	var res workflows.SubscriptionChangeResult
	if !env.IsWorkflowCompleted() {
		return res, errors.New("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return res, err
	}
	return res, env.GetWorkflowResult(&res)
}

func errType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

// create → customer → subscription → (an unrelated event is ignored) →
// invoice.paid → the plan is applied; nothing is applied before the payment.
func TestSubscriptionChangeHappyPath(t *testing.T) {
	env := billingEnv(t)
	expectUnpaidSubscription(env)
	var appliedAt time.Time
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(func(context.Context, string) error { appliedAt = env.Now(); return nil }).Once()
	closes := closed(env)
	start := env.Now()
	signalAfter(env, time.Hour, workflows.StripeEventSignal{EventID: "evt_0", Type: "invoice.paid", SubscriptionID: "sub_other"})
	signalAfter(env, 2*time.Hour, workflows.StripeEventSignal{EventID: "evt_1", Type: "invoice.paid", SubscriptionID: "sub_1", InvoiceID: "in_1"})
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(names.QuerySubscriptionChangeStep)
		var step string
		if err != nil || v.Get(&step) != nil || step != "payment" {
			t.Errorf("step while waiting: %q %v", step, err)
		}
	}, 90*time.Minute)

	res, err := run(env, 0)
	if err != nil || res.Status != "applied" || res.Plan != "business" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if d := appliedAt.Sub(start); d < 2*time.Hour {
		t.Fatalf("applied after %v, before the invoice was paid", d)
	}
	if len(*closes) != 0 {
		t.Fatalf("closed: %v", *closes)
	}
	env.AssertExpectations(t)
}

// The subscription turning active also means the money is there.
func TestSubscriptionChangeActiveSubscriptionIsPaid(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity(billing.EnsureCustomer, mock.Anything, mock.Anything).Return("cus_1", nil).Maybe()
	st := newCreate()
	st.CustomerID = "cus_1" // the organization already has its customer
	load(env, st)
	env.OnActivity(billing.CreateSubscription, mock.Anything, changeID).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1"}, nil).Once()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	signalAfter(env, time.Minute, workflows.StripeEventSignal{Type: "customer.subscription.updated", SubscriptionID: "sub_1", SubscriptionStatus: "incomplete"})
	signalAfter(env, 2*time.Minute, workflows.StripeEventSignal{Type: "customer.subscription.updated", SubscriptionID: "sub_1", SubscriptionStatus: "active"})
	if res, err := run(env, 0); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
	started.assertNotStarted(t, "EnsureCustomer")
}

func TestSubscriptionChangePaymentFailed(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity(billing.ApplyPlan, mock.Anything, mock.Anything).Return(nil).Maybe()
	expectUnpaidSubscription(env)
	env.OnActivity(billing.PaymentFailure, mock.Anything, changeID).Return(activities.StripeFailure{Code: "insufficient_funds", Message: "Your card has insufficient funds."}, nil).Once()
	closes := closed(env)
	signalAfter(env, time.Minute, workflows.StripeEventSignal{Type: "invoice.payment_failed", SubscriptionID: "sub_1", InvoiceID: "in_1"})

	res, err := run(env, 0)
	if errType(err) != workflows.ErrTypeChangeFailed {
		t.Fatalf("result %+v, error %v", res, err)
	}
	expectClosed(t, *closes, "failed:insufficient_funds:Your card has insufficient funds.")
	env.AssertExpectations(t)
	started.assertNotStarted(t, "ApplyPlan")
}

// No payment within the window: the unpaid subscription is canceled and
// the change expires (the test clock skips the 24 hours).
func TestSubscriptionChangeTimeoutExpires(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity(billing.ApplyPlan, mock.Anything, mock.Anything).Return(nil).Maybe()
	expectUnpaidSubscription(env)
	var expiredAt time.Time
	start := env.Now()
	env.OnActivity(billing.ExpireUnpaid, mock.Anything, changeID).Return(func(context.Context, string) (bool, error) {
		expiredAt = env.Now()
		return false, nil
	}).Once()
	closes := closed(env)

	_, err := run(env, 0)
	if errType(err) != workflows.ErrTypeChangeExpired {
		t.Fatalf("error %v", err)
	}
	if d := expiredAt.Sub(start); d < workflows.PaymentWindow {
		t.Fatalf("expired after %v", d)
	}
	expectClosed(t, *closes, "expired:payment_timeout:No payment arrived within 24 hours; the unpaid subscription was canceled.")
	env.AssertExpectations(t)
	started.assertNotStarted(t, "ApplyPlan")
}

// At the deadline Stripe says the subscription is active after all (the
// invoice.paid event was still on its way): the plan is applied, not expired.
func TestSubscriptionChangePaidAtTheDeadlineApplies(t *testing.T) {
	env := billingEnv(t)
	st := newCreate()
	st.CustomerID, st.SubscriptionID, st.InvoiceID = "cus_1", "sub_1", "in_1"
	st.Status = "awaiting_payment"
	load(env, st)
	env.OnActivity(billing.ExpireUnpaid, mock.Anything, changeID).Return(true, nil).Once()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	if res, err := run(env, 0); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
}

// Stripe 4xx: not retried; the change fails with Stripe's code and message.
func TestSubscriptionChangeStripeRefusalIsNotRetried(t *testing.T) {
	env := billingEnv(t)
	load(env, newCreate())
	env.OnActivity(billing.EnsureCustomer, mock.Anything, changeID).Return("cus_1", nil).Once()
	refusal := temporal.NewNonRetryableApplicationError("Stripe refused to create the subscription: No such price: 'price_x'",
		activities.ErrTypeStripeRejected, errors.New("400"), activities.StripeFailure{Status: 400, Code: "resource_missing", Message: "No such price: 'price_x'"})
	env.OnActivity(billing.CreateSubscription, mock.Anything, changeID).Return(activities.PaymentState{}, refusal).Once()
	closes := closed(env)

	_, err := run(env, 0)
	if errType(err) != workflows.ErrTypeChangeFailed {
		t.Fatalf("error %v", err)
	}
	var why activities.StripeFailure
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr); appErr.Details(&why) != nil || why.Code != "resource_missing" {
		t.Fatalf("details %+v", why)
	}
	expectClosed(t, *closes, "failed:resource_missing:No such price: 'price_x'")
	env.AssertExpectations(t) // .Once(): a retry would fail the mock
}

// Stripe 5xx or the network: retried with backoff until it answers.
func TestSubscriptionChangeRetriesStripeOutages(t *testing.T) {
	env := billingEnv(t)
	load(env, newCreate())
	env.OnActivity(billing.EnsureCustomer, mock.Anything, changeID).Return("cus_1", nil).Once()
	calls := 0
	env.OnActivity(billing.CreateSubscription, mock.Anything, changeID).Return(func(context.Context, string) (activities.PaymentState, error) {
		calls++
		if calls <= 2 {
			return activities.PaymentState{}, errors.New("stripe: create the subscription: 500 api_error")
		}
		return activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1", Paid: true}, nil
	})
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	if res, err := run(env, 0); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	if calls != 3 {
		t.Fatalf("CreateSubscription called %d times, want 3", calls)
	}
}

// A Stripe that stays down for the whole retry budget fails the change as
// stripe_unavailable.
func TestSubscriptionChangeGivesUpOnALongStripeOutage(t *testing.T) {
	env := billingEnv(t)
	load(env, newCreate())
	env.OnActivity(billing.EnsureCustomer, mock.Anything, changeID).Return("", errors.New("stripe: create the customer: dial tcp: connection refused"))
	closes := closed(env)
	if _, err := run(env, 0); errType(err) != workflows.ErrTypeChangeFailed {
		t.Fatalf("error %v", err)
	}
	expectClosed(t, *closes, "failed:stripe_unavailable:")
}

// A retry after a failed payment resumes at the payment: no second
// customer or subscription, the invoice is charged again, then applied.
func TestSubscriptionChangeRetryResumesFromThePayment(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity(billing.EnsureCustomer, mock.Anything, mock.Anything).Return("cus_1", nil).Maybe()
	env.OnActivity(billing.CreateSubscription, mock.Anything, mock.Anything).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1", Paid: true}, nil).Maybe()
	st := newCreate()
	st.CustomerID, st.SubscriptionID, st.InvoiceID, st.Step = "cus_1", "sub_1", "in_1", "payment"
	load(env, st)
	env.OnActivity(billing.RetryPayment, mock.Anything, changeID, 1).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1", Paid: true}, nil).Once()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	if res, err := run(env, 1); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
	started.assertNotStarted(t, "EnsureCustomer", "CreateSubscription")
}

// A retry after a refusal at the subscription step resumes there: the
// customer is not created again.
func TestSubscriptionChangeRetryResumesFromTheSubscription(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity(billing.EnsureCustomer, mock.Anything, mock.Anything).Return("cus_1", nil).Maybe()
	env.OnActivity(billing.RetryPayment, mock.Anything, mock.Anything, mock.Anything).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1", Paid: true}, nil).Maybe()
	st := newCreate()
	st.CustomerID, st.Step = "cus_1", "subscription"
	load(env, st)
	env.OnActivity(billing.CreateSubscription, mock.Anything, changeID).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_1"}, nil).Once()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	signalAfter(env, time.Minute, workflows.StripeEventSignal{Type: "invoice.paid", SubscriptionID: "sub_1", InvoiceID: "in_1"})
	if res, err := run(env, 2); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
	started.assertNotStarted(t, "EnsureCustomer", "RetryPayment")
}

// An upgrade is paid by its own proration invoice, not by another one.
func TestSubscriptionChangeUpgradeWaitsForItsInvoice(t *testing.T) {
	env := billingEnv(t)
	load(env, activities.ChangeState{ChangeID: changeID, OrgID: orgID, Kind: "upgrade", Status: "pending", ToPlan: "enterprise", CustomerID: "cus_1", SubscriptionID: "sub_1"})
	env.OnActivity(billing.UpgradeSubscription, mock.Anything, changeID).Return(activities.PaymentState{SubscriptionID: "sub_1", InvoiceID: "in_proration"}, nil).Once()
	var appliedAt time.Time
	start := env.Now()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(func(context.Context, string) error { appliedAt = env.Now(); return nil }).Once()
	signalAfter(env, time.Hour, workflows.StripeEventSignal{Type: "invoice.paid", SubscriptionID: "sub_1", InvoiceID: "in_renewal"})
	signalAfter(env, 3*time.Hour, workflows.StripeEventSignal{Type: "invoice.paid", SubscriptionID: "sub_1", InvoiceID: "in_proration"})
	if res, err := run(env, 0); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	if appliedAt.Sub(start) < 3*time.Hour {
		t.Fatal("applied on another invoice's payment")
	}
	env.AssertExpectations(t)
}

// A downgrade is scheduled at Stripe and applied when the period ends.
func TestSubscriptionChangeDowngradeAppliesAtPeriodEnd(t *testing.T) {
	env := billingEnv(t)
	load(env, activities.ChangeState{ChangeID: changeID, OrgID: orgID, Kind: "downgrade", Status: "pending", ToPlan: "starter", CustomerID: "cus_1", SubscriptionID: "sub_1"})
	periodEnd := env.Now().Add(10 * 24 * time.Hour)
	env.OnActivity(billing.ScheduleChange, mock.Anything, changeID).Return(periodEnd, nil).Once()
	var appliedAt time.Time
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(func(context.Context, string) error { appliedAt = env.Now(); return nil }).Once()
	signalAfter(env, time.Hour, workflows.StripeEventSignal{Type: "invoice.paid", SubscriptionID: "sub_1"})
	if res, err := run(env, 0); err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
	if appliedAt.Before(periodEnd) {
		t.Fatalf("applied at %v, before the period end %v", appliedAt, periodEnd)
	}
	env.AssertExpectations(t)
}

// A cancellation completes when Stripe deletes the subscription.
func TestSubscriptionChangeCancelCompletesOnDeletion(t *testing.T) {
	env := billingEnv(t)
	load(env, activities.ChangeState{ChangeID: changeID, OrgID: orgID, Kind: "cancel", Status: "pending", ToPlan: "free", CustomerID: "cus_1", SubscriptionID: "sub_1"})
	env.OnActivity(billing.ScheduleChange, mock.Anything, changeID).Return(env.Now().Add(30*24*time.Hour), nil).Once()
	env.OnActivity(billing.ApplyPlan, mock.Anything, changeID).Return(nil).Once()
	signalAfter(env, time.Hour, workflows.StripeEventSignal{Type: "customer.subscription.deleted", SubscriptionID: "sub_1"})
	if res, err := run(env, 0); err != nil || res.Status != "applied" || res.Plan != "free" {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
}

// The subscription deleted in Stripe while a downgrade or a payment is
// pending: the change is canceled (the organization is already on free).
func TestSubscriptionChangeCanceledWhenTheSubscriptionIsDeleted(t *testing.T) {
	for _, st := range []activities.ChangeState{
		{ChangeID: changeID, OrgID: orgID, Kind: "downgrade", Status: "scheduled", ToPlan: "starter", SubscriptionID: "sub_1", EffectiveAt: ptr(time.Now().Add(48 * time.Hour))},
		{ChangeID: changeID, OrgID: orgID, Kind: "upgrade", Status: "awaiting_payment", ToPlan: "enterprise", SubscriptionID: "sub_1", InvoiceID: "in_1"},
	} {
		t.Run(st.Kind, func(t *testing.T) {
			env := billingEnv(t)
			started := recordStarted(env)
			// Mocked so that a wrong call runs on and the recorder reports it.
			env.OnActivity(billing.ApplyPlan, mock.Anything, mock.Anything).Return(nil).Maybe()
			load(env, st)
			closes := closed(env)
			signalAfter(env, time.Hour, workflows.StripeEventSignal{Type: "customer.subscription.deleted", SubscriptionID: "sub_1"})
			if res, err := run(env, 0); err != nil || res.Status != "canceled" {
				t.Fatalf("%+v %v", res, err)
			}
			expectClosed(t, *closes, "canceled:subscription_canceled:")
			started.assertNotStarted(t, "ApplyPlan")
		})
	}
}

// An operator cancels the run: the change is closed as canceled.
func TestSubscriptionChangeWorkflowCanceled(t *testing.T) {
	env := billingEnv(t)
	expectUnpaidSubscription(env)
	closes := closed(env)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	_, err := run(env, 0)
	if !temporal.IsCanceledError(err) {
		t.Fatalf("error %v", err)
	}
	expectClosed(t, *closes, "canceled:workflow_canceled:")
}

// A run of a change already closed does nothing.
func TestSubscriptionChangeClosedChangeIsLeftAlone(t *testing.T) {
	env := billingEnv(t)
	started := recordStarted(env)
	st := newCreate()
	st.Status = "applied"
	load(env, st)
	res, err := run(env, 0)
	started.assertOnly(t, "LoadChange") // before the result: a wrong step may also fail the run
	if err != nil || res.Status != "applied" {
		t.Fatalf("%+v %v", res, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestSubscriptionChangeID(t *testing.T) {
	if got := names.SubscriptionChangeID("o", "c", 0); got != "subscription/o/c" {
		t.Fatal(got)
	}
	if got := names.SubscriptionChangeID("o", "c", 2); got != "subscription/o/c/retry-2" {
		t.Fatal(got)
	}
}
