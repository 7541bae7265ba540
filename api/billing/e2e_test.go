package billing_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// billingEnv is a complete suite (real Temporal, worker, app, database)
// whose worker talks to stripe-mock, an organization on free with two
// members (both seats taken), and the billing core.
type billingEnv struct {
	*apitest.Env
	st    *stripetest.Stripe
	svc   *billing.Service
	owner *apitest.User
	agent *apitest.User
	org   string
}

func newBillingEnv(t *testing.T, e *apitest.Env, st *stripetest.Stripe) *billingEnv {
	owner := e.SignUp(apitest.UniqueEmail("owner"))
	org := e.CreateOrg(owner, "Acme")
	agent := e.AddMember(owner, org, models.RoleAgent)
	return &billingEnv{Env: e, st: st, owner: owner, agent: agent, org: org,
		svc: &billing.Service{DB: e.DB, Starter: e.Starter, Config: st.Config()}}
}

// invite asks the API for one more member and returns the status.
func (b *billingEnv) invite() int {
	return b.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + b.org + "/members", Headers: b.owner.Auth(),
		Body: map[string]string{"email": apitest.UniqueEmail("invitee"), "role": models.RoleAgent}}).Status
}

// deliver sends a Stripe event to the webhook route, signed as Stripe
// signs it: verified, stored and relayed to the change's workflow by the
// outbox.
func (b *billingEnv) deliver(typ string, object map[string]any) {
	b.T.Helper()
	payload := stripetest.Event(typ, object)
	b.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/webhook", Body: payload,
		Headers: map[string]string{"Stripe-Signature": stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())}}).Expect(200)
}

// order asks for plan through the API, waiting for the Stripe objects, and
// returns the change as stored.
func (b *billingEnv) order(plan string) *models.SubscriptionChange {
	b.T.Helper()
	var out struct{ ID string }
	b.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/create-order", Body: map[string]any{"plan": plan},
		Headers: map[string]string{"Authorization": "Bearer " + b.owner.Token, "X-Workspace-Id": b.org, "Prefer": "wait=30"}}).Expect(202).JSON(&out)
	c, err := models.FindSubscriptionChange(b.T.Context(), b.DB, b.org, out.ID)
	if err != nil {
		b.T.Fatal(err)
	}
	return c
}

// staff signs up a user and grants them billing staff (as
// `suite admin grant-staff` does); their next token carries the claim.
func (b *billingEnv) staff() *apitest.User {
	b.T.Helper()
	u := b.SignUp(apitest.UniqueEmail("staff"))
	if _, err := models.SetUserStaff(b.T.Context(), b.DB, u.Email, true); err != nil {
		b.T.Fatal(err)
	}
	b.SignIn(u)
	return u
}

func (b *billingEnv) waitStatus(changeID, status string) *models.SubscriptionChange {
	b.T.Helper()
	var c *models.SubscriptionChange
	b.Eventually(func() bool {
		var err error
		c, err = models.FindSubscriptionChange(b.T.Context(), b.DB, b.org, changeID)
		return err == nil && c.Status == status
	}, "change %s to become %s", changeID, status)
	return c
}

func (b *billingEnv) plan() *models.Plan {
	b.T.Helper()
	org, err := models.FindOrg(b.T.Context(), b.DB, b.org)
	if err != nil {
		b.T.Fatal(err)
	}
	p, err := models.FindPlan(b.T.Context(), b.DB, org.Plan)
	if err != nil {
		b.T.Fatal(err)
	}
	return p
}

// The whole path on a real Temporal server, through the real activities
// against stripe-mock: the change is opened, the workflow creates the
// customer and the unpaid subscription (Wait returns what is needed to
// pay), the limits stay until invoice.paid arrives through the webhook
// path, then the plan applies — seats, tickets and AI change.
func TestSubscriptionChangeEndToEnd(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st)
		ctx := t.Context()
		if b.invite() != http.StatusPaymentRequired {
			t.Fatal("free has 2 seats, both taken: an invite must be refused")
		}
		customers, subs := len(st.Requests(http.MethodPost, "/v1/customers")), len(st.Requests(http.MethodPost, "/v1/subscriptions"))

		c := b.order(models.PlanBusiness)
		if c.Status != models.ChangeAwaitingPayment || c.ClientSecret == "" || c.StripeSubscriptionID == "" || c.StripeInvoiceID == "" ||
			c.RequestedBy != b.owner.Email {
			t.Fatalf("after Prefer: wait: %+v", c)
		}
		if b.plan().Name != models.PlanFree || b.invite() != http.StatusPaymentRequired {
			t.Fatal("the limits changed before the payment")
		}

		b.deliver("invoice.paid", map[string]any{"id": c.StripeInvoiceID, "object": "invoice", "customer": c.StripeCustomerID,
			"subscription": c.StripeSubscriptionID, "status": "paid", "subscription_details": map[string]any{"metadata": map[string]string{"orgId": b.org, "changeId": c.ID}}})
		applied := b.waitStatus(c.ID, models.ChangeApplied)
		if applied.CompletedAt == nil || applied.LastErrorCode != "" {
			t.Fatalf("applied change %+v", applied)
		}
		p := b.plan()
		if p.Name != models.PlanBusiness || p.Seats == nil || *p.Seats != 25 || p.TicketsPerMonth == nil || *p.TicketsPerMonth != 10000 || !p.AI {
			t.Fatalf("plan after payment %+v", p)
		}
		if b.invite() != http.StatusCreated {
			t.Fatal("business has 25 seats: the invite must now succeed")
		}
		var res workflows.SubscriptionChangeResult
		if err := e.Temporal.GetWorkflow(ctx, names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()), "").Get(ctx, &res); err != nil || res.Status != models.ChangeApplied {
			t.Fatalf("workflow result %+v %v", res, err)
		}
		account, _ := models.FindBillingAccount(ctx, e.DB, b.org)
		if !account.HasActiveSubscription() || account.StripeSubscriptionID != c.StripeSubscriptionID || account.StripeCustomerID != c.StripeCustomerID ||
			account.CurrentPeriodEnd == nil {
			t.Fatalf("account %+v", account)
		}
		if n := len(st.Requests(http.MethodPost, "/v1/customers")) - customers; n != 1 {
			t.Fatalf("%d customers created", n)
		}
		created := st.Requests(http.MethodPost, "/v1/subscriptions")[subs:]
		if len(created) != 1 || created[0].Metadata("changeId") != c.ID || created[0].IdempotencyKey != activities.IdempotencyKey(c.ID, "subscription-create") {
			t.Fatalf("subscriptions created %+v", created)
		}
	}, apitest.WithBilling(st.Config()))
}

// invoice.payment_failed fails the change (and its run, for the Temporal
// UI); a billing-staff retry resumes at the payment — the invoice is
// charged again, no second customer or subscription — and the plan applies.
func TestFailedPaymentRetriedByStaff(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st)
		ctx := t.Context()
		customers, subs := len(st.Requests(http.MethodPost, "/v1/customers")), len(st.Requests(http.MethodPost, "/v1/subscriptions"))
		c := b.order(models.PlanStarter)
		if c.Status != models.ChangeAwaitingPayment {
			t.Fatalf("%+v", c)
		}
		b.deliver("invoice.payment_failed", map[string]any{"id": c.StripeInvoiceID, "object": "invoice", "customer": c.StripeCustomerID,
			"subscription": c.StripeSubscriptionID, "status": "open"})
		failed := b.waitStatus(c.ID, models.ChangeFailed)
		if failed.LastErrorCode == "" || failed.LastErrorMessage == "" || failed.Step != models.StepPayment {
			t.Fatalf("failed change %+v", failed)
		}
		err := e.Temporal.GetWorkflow(ctx, names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()), "").Get(ctx, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeChangeFailed {
			t.Fatalf("the failed run: %v", err)
		}
		if b.plan().Name != models.PlanFree {
			t.Fatal("a failed payment changed the plan")
		}

		// The customer has fixed their card: charging the open invoice now works.
		inv := "/v1/invoices/" + c.StripeInvoiceID
		st.Respond(http.MethodGet, inv, 1, http.StatusOK, `{"id":"`+c.StripeInvoiceID+`","object":"invoice","status":"open"}`)
		st.Respond(http.MethodPost, inv+"/pay", 1, http.StatusOK, `{"id":"`+c.StripeInvoiceID+`","object":"invoice","status":"paid"}`)
		// Billing staff find the failed change and re-run it.
		staff := b.staff()
		var failedList struct {
			Data []struct{ ID, OrgID, Status string }
		}
		b.Do(apitest.Request{Method: "GET", Path: "/ops/v1/billing/changes?status=failed&orgId=" + b.org, Headers: staff.Auth()}).Expect(200).JSON(&failedList)
		if len(failedList.Data) != 1 || failedList.Data[0].ID != c.ID || failedList.Data[0].OrgID != b.org {
			t.Fatalf("failed changes %+v", failedList)
		}
		var retriedOut struct {
			Status   string
			Attempts int
			Retries  []struct{ RequestedBy, FromStep, Outcome string }
		}
		r := b.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/" + c.ID + "/retry", Headers: staff.Auth()}).Expect(202)
		r.JSON(&retriedOut)
		if retriedOut.Attempts != 2 || len(retriedOut.Retries) != 1 || retriedOut.Retries[0].FromStep != models.StepPayment ||
			retriedOut.Retries[0].RequestedBy != staff.Email || r.Header.Get("Location") != "/ops/v1/billing/changes/"+c.ID {
			t.Fatalf("retry %s", r.Body)
		}
		retried, err := models.FindSubscriptionChange(ctx, e.DB, b.org, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		b.waitStatus(c.ID, models.ChangeApplied)
		var res workflows.SubscriptionChangeResult
		if err := e.Temporal.GetWorkflow(ctx, names.SubscriptionChangeID(retried.OrgID, retried.ID, retried.Retry()), "").Get(ctx, &res); err != nil || res.Status != models.ChangeApplied {
			t.Fatalf("retry run %s: %+v %v", names.SubscriptionChangeID(retried.OrgID, retried.ID, retried.Retry()), res, err)
		}
		if b.plan().Name != models.PlanStarter {
			t.Fatal("the plan was not applied after the retry")
		}
		retries, _ := models.SubscriptionChangeRetries(ctx, e.DB, c.ID)
		if len(retries) != 1 || retries[0].Outcome != models.ChangeApplied || retries[0].RequestedBy != staff.Email || retries[0].OutcomeAt == nil {
			t.Fatalf("retry records %+v", retries)
		}
		if n := len(st.Requests(http.MethodPost, "/v1/customers")) - customers; n != 1 {
			t.Fatalf("%d customers created", n)
		}
		if n := len(st.Requests(http.MethodPost, "/v1/subscriptions")) - subs; n != 1 {
			t.Fatalf("%d subscriptions created across the run and its retry, want 1", n)
		}
		// stripe-mock answers every subscription with the same fixture
		// invoice: count this change's charges by their keys.
		var pays []string
		for _, r := range st.Requests(http.MethodPost, inv+"/pay") {
			if strings.Contains(r.IdempotencyKey, c.ID) {
				pays = append(pays, r.IdempotencyKey)
			}
		}
		if len(pays) != 1 || pays[0] != activities.IdempotencyKey(c.ID, "invoice-pay/retry-1") {
			t.Fatalf("charges %v", pays)
		}
		// An applied change is not retried again.
		b.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/" + c.ID + "/retry", Headers: staff.Auth()}).ExpectProblem(409, "change_applied")
	}, apitest.WithBilling(st.Config()))
}

// Stripe answering 500 twice before it creates the subscription: Temporal
// retries the step with the same idempotency key, and one subscription
// exists in the end — through the API, on the real server.
func TestStripeOutageDuringAnOrderCreatesOneSubscription(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st)
		st.Fail(http.MethodPost, "/v1/subscriptions", 2, http.StatusInternalServerError, "api_error", "", "Stripe is having a bad day.")
		c := b.order(models.PlanStarter)
		if c.Status == models.ChangePending {
			c = b.waitStatus(c.ID, models.ChangeAwaitingPayment)
		}
		if c.Status != models.ChangeAwaitingPayment || c.StripeSubscriptionID == "" {
			t.Fatalf("change after the outage %+v", c)
		}
		var mine []stripetest.Request
		for _, r := range st.Requests(http.MethodPost, "/v1/subscriptions") {
			if r.Metadata("changeId") == c.ID {
				mine = append(mine, r)
			}
		}
		forwarded := 0
		for _, r := range mine {
			if r.IdempotencyKey != activities.IdempotencyKey(c.ID, "subscription-create") {
				t.Fatalf("attempt with key %q", r.IdempotencyKey)
			}
			if r.Forwarded {
				forwarded++
			}
		}
		if len(mine) != 3 || forwarded != 1 {
			t.Fatalf("%d attempts, %d reached Stripe; want 3 and 1", len(mine), forwarded)
		}
	}, apitest.WithBilling(st.Config()))
}

// A Stripe event that arrives while Temporal is down is accepted (200),
// stored and kept in the outbox; once Temporal is back, the change's
// workflow gets it and applies the plan.
func TestWebhookWhileTemporalIsDown(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := t.Context()
		org := seedOrg(t, e.DB, models.PlanFree)
		now := models.Now()
		change := models.SubscriptionChange{ID: models.NewID(), OrgID: org, Kind: models.ChangeCreate, FromPlan: models.PlanFree,
			ToPlan: models.PlanStarter, Interval: models.IntervalMonth, Status: models.ChangeAwaitingPayment, Step: models.StepPayment, Attempts: 1,
			StripeRefs: models.StripeRefs{StripeCustomerID: "cus_down", StripeSubscriptionID: "sub_down", StripePriceID: "price_starter_month",
				StripeInvoiceID: "in_down"}, CreatedAt: now, UpdatedAt: now}
		if err := e.DB.Create(&change).Error; err != nil {
			t.Fatal(err)
		}
		payload := stripetest.Event("invoice.paid", map[string]any{"id": "in_down", "object": "invoice", "customer": "cus_down",
			"subscription": "sub_down", "status": "paid", "subscription_details": map[string]any{"metadata": map[string]string{"orgId": org, "changeId": change.ID}}})
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/webhook", Body: payload,
			Headers: map[string]string{"Stripe-Signature": stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())}}).Expect(200)
		if n, _ := e.Starter.Pending(ctx); n != 1 {
			t.Fatalf("%d outbox rows pending, want the signal", n)
		}
		time.Sleep(500 * time.Millisecond) // the relay tries, and fails, meanwhile
		if c, _ := models.FindSubscriptionChange(ctx, e.DB, org, change.ID); c.Status != models.ChangeAwaitingPayment {
			t.Fatalf("change moved without Temporal: %+v", c)
		}

		e.StartTemporal()
		e.Eventually(func() bool {
			c, err := models.FindSubscriptionChange(ctx, e.DB, org, change.ID)
			return err == nil && c.Status == models.ChangeApplied
		}, "the change to be applied after Temporal came back")
		if o, _ := models.FindOrg(ctx, e.DB, org); o.Plan != models.PlanStarter {
			t.Fatalf("plan %s", o.Plan)
		}
	}, apitest.WithBilling(st.Config()), apitest.WithTemporalDown())
}
