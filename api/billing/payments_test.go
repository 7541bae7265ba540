package billing_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// hd is the Helpdesk headers of a user acting in org.
func hd(u *apitest.User, org string) map[string]string { return apitest.HelpdeskUser(u.Token, org) }

func withHeaders(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

type changeOut struct {
	ID, WorkspaceID, Kind, FromPlan, ToPlan, Status, Step, WorkflowID string
	Attempts                                                          int
	ClientSecret, HostedInvoiceURL                                    *string
	EffectiveAt                                                       *time.Time
	Stripe                                                            struct{ CustomerID, SubscriptionID, InvoiceID *string }
}

// seedSubscription gives org an active Stripe subscription on plan, as if
// an earlier change had been applied.
func seedSubscription(t *testing.T, e *apitest.Env, org, plan string) {
	t.Helper()
	e.SetPlan(org, plan)
	end := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	now := models.Now()
	if err := e.DB.Create(&models.BillingAccount{OrgID: org, StripeCustomerID: "cus_" + org[:8], StripeSubscriptionID: "sub_" + org[:8],
		SubscriptionStatus: "active", Plan: plan, Interval: models.IntervalMonth, StripePriceID: stripetest.Prices[plan+"/month"],
		CurrentPeriodEnd: &end, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
}

// Every payments route: who may call it, what it refuses, and what it
// answers — on the real app, with the real workflow against stripe-mock.
func TestPaymentRoutes(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st) // owner + an AGENT on free
		agentUser := b.agent
		key := e.CreateKey(b.owner, b.org, "helpdesk")
		owner := hd(b.owner, b.org)

		routes := []struct{ method, path string }{
			{"POST", "/helpdesk/payments/create-order"}, {"POST", "/helpdesk/payments/downgrade"},
			{"GET", "/helpdesk/payments/subscription"}, {"GET", "/helpdesk/payments/changes"},
			{"GET", "/helpdesk/payments/changes/" + models.NewID()},
		}
		for _, r := range routes {
			var body any
			if r.method == "POST" {
				body = map[string]any{"plan": "starter"}
			}
			e.Do(apitest.Request{Method: r.method, Path: r.path, Headers: hd(agentUser, b.org), Body: body}).ExpectProblem(403, "admin_required")
			e.Do(apitest.Request{Method: r.method, Path: r.path, Headers: apitest.HelpdeskKey(key, b.org), Body: body}).ExpectProblem(403, "user_required")
			e.Do(apitest.Request{Method: r.method, Path: r.path, Body: body}).Expect(401)
		}

		order := func(body map[string]any, headers map[string]string) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/create-order", Headers: headers, Body: body})
		}
		// Bad plans: every bad field at once, then the billing rules.
		p := order(map[string]any{"plan": "platinum", "interval": "week", "bogus": 1}, owner).ExpectProblem(422, "validation_failed")
		if got := problemFields(p); got != "bogus,interval,plan" {
			t.Fatalf("bad fields %s", got)
		}
		if got := fieldCodes(order(map[string]any{"plan": "free"}, owner).ExpectProblem(422, "validation_failed")); got != "plan:free_not_orderable" {
			t.Fatalf("ordering free: %s", got)
		}
		if n := count(t, e.DB, &models.SubscriptionChange{}, "org_id = ?", b.org); n != 0 {
			t.Fatalf("refused orders recorded %d changes", n)
		}

		// An order: 202 with the change; Prefer: wait holds it until the
		// workflow has created the Stripe objects.
		idem := withHeaders(owner, "Idempotency-Key", "order-1", "Prefer", "wait=30")
		r := order(map[string]any{"plan": "business", "interval": "month"}, idem).Expect(202)
		var c changeOut
		r.JSON(&c)
		if r.Header.Get("Location") != "/helpdesk/payments/changes/"+c.ID || r.Header.Get("Preference-Applied") != "wait=30" {
			t.Fatalf("headers %v", r.Header)
		}
		if c.Status != models.ChangeAwaitingPayment || c.Kind != models.ChangeCreate || c.WorkspaceID != b.org || c.ClientSecret == nil ||
			c.Stripe.SubscriptionID == nil || c.WorkflowID != "subscription/"+b.org+"/"+c.ID {
			t.Fatalf("change %s", r.Body)
		}
		// The same key again replays the answer; a new order is refused.
		again := order(map[string]any{"plan": "business", "interval": "month"}, idem).Expect(202)
		var replayed changeOut
		again.JSON(&replayed)
		if replayed.ID != c.ID || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %s %v", again.Body, again.Header)
		}
		order(map[string]any{"plan": "enterprise"}, owner).ExpectProblem(409, "change_in_progress")
		if n := count(t, e.DB, &models.SubscriptionChange{}, "org_id = ?", b.org); n != 1 {
			t.Fatalf("%d changes after a replay and a refused order", n)
		}

		// Reads.
		var got changeOut
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes/" + c.ID, Headers: owner}).Expect(200).JSON(&got)
		if got.ID != c.ID || got.Status != models.ChangeAwaitingPayment || got.ClientSecret == nil || *got.ClientSecret != *c.ClientSecret {
			t.Fatalf("get %+v", got)
		}
		var page struct{ Data []changeOut }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes?status=awaiting_payment", Headers: owner}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != c.ID {
			t.Fatalf("list %+v", page)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes?status=applied", Headers: owner}).Expect(200).JSON(&page)
		if len(page.Data) != 0 {
			t.Fatalf("status filter ignored: %+v", page)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes?status=done", Headers: owner}).ExpectProblem(422, "validation_failed")
		var sub struct {
			Plan          string
			Subscription  *struct{ Status *string }
			PendingChange *changeOut
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/subscription", Headers: owner}).Expect(200).JSON(&sub)
		if sub.Plan != models.PlanFree || sub.PendingChange == nil || sub.PendingChange.ID != c.ID {
			t.Fatalf("subscription %+v", sub)
		}

		// Another workspace never sees this change, even by its id.
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes/" + c.ID, Headers: hd(other, otherOrg)}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes/" + c.ID, Headers: hd(other, b.org)}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/changes", Headers: hd(other, otherOrg)}).Expect(200).JSON(&page)
		if len(page.Data) != 0 {
			t.Fatalf("another workspace lists %+v", page)
		}

		// Downgrades: the seats must fit the target plan first.
		down := e.SignUp(apitest.UniqueEmail("down"))
		downOrg := e.CreateOrg(down, "Downgrader")
		seedSubscription(t, e, downOrg, models.PlanBusiness)
		e.AddMember(down, downOrg, models.RoleAdmin)
		e.Invite(down, downOrg, apitest.UniqueEmail("pending"), models.RoleAgent)
		downgrade := func(plan string, headers map[string]string) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/downgrade", Headers: headers, Body: map[string]any{"plan": plan}})
		}
		blocked := downgrade(models.PlanFree, hd(down, downOrg)).ExpectProblem(409, "downgrade_blocked")
		if blocked["seats"] != float64(2) || blocked["seatsInUse"] != float64(3) || blocked["seatsToFree"] != float64(1) || blocked["plan"] != "free" {
			t.Fatalf("downgrade_blocked without the numbers: %v", blocked)
		}
		if got := fieldCodes(downgrade("business", hd(down, downOrg)).ExpectProblem(422, "validation_failed")); got != "plan:not_lower" {
			t.Fatalf("downgrade to the current plan: %s", got)
		}
		r = downgrade(models.PlanStarter, withHeaders(hd(down, downOrg), "Prefer", "wait=30")).Expect(202)
		var d changeOut
		r.JSON(&d)
		if d.Kind != models.ChangeDowngrade || d.Status != models.ChangeScheduled || d.EffectiveAt == nil || d.ClientSecret != nil {
			t.Fatalf("downgrade %s", r.Body)
		}
		if b := planOf(t, e, downOrg); b != models.PlanBusiness {
			t.Fatalf("the downgrade took effect before the period end: %s", b)
		}
		downgrade(models.PlanStarter, hd(down, downOrg)).ExpectProblem(409, "change_in_progress")
	}, apitest.WithBilling(st.Config()))
}

func planOf(t *testing.T, e *apitest.Env, org string) string {
	t.Helper()
	o, err := models.FindOrg(t.Context(), e.DB, org)
	if err != nil {
		t.Fatal(err)
	}
	return o.Plan
}

func fieldCodes(p map[string]any) string {
	var out []string
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		f := e.(map[string]any)
		out = append(out, f["field"].(string)+":"+f["code"].(string))
	}
	return strings.Join(out, ",")
}

func problemFields(p map[string]any) string {
	var names []string
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		names = append(names, e.(map[string]any)["field"].(string))
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Without STRIPE_SECRET_KEY every payments route answers 503 — after the
// credential and role checks, which never depend on the configuration.
func TestPaymentRoutesWithoutStripe(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Unbilled")
		key := e.CreateKey(owner, org, "helpdesk")
		for _, r := range []struct{ method, path string }{
			{"POST", "/helpdesk/payments/create-order"}, {"POST", "/helpdesk/payments/downgrade"},
			{"GET", "/helpdesk/payments/subscription"}, {"GET", "/helpdesk/payments/changes"},
			{"GET", "/helpdesk/payments/changes/" + models.NewID()},
		} {
			var body any
			if r.method == "POST" {
				body = map[string]any{"plan": "starter"}
			}
			resp := e.Do(apitest.Request{Method: r.method, Path: r.path, Headers: hd(owner, org), Body: body})
			resp.ExpectProblem(503, "billing_not_configured")
			if resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s %s: no Retry-After", r.method, r.path)
			}
			e.Do(apitest.Request{Method: r.method, Path: r.path, Headers: apitest.HelpdeskKey(key, org), Body: body}).ExpectProblem(403, "user_required")
		}
		payload := stripetest.Event("invoice.paid", map[string]any{"id": "in_1", "object": "invoice"})
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/webhook", Body: payload,
			Headers: map[string]string{"Stripe-Signature": stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())}}).
			ExpectProblem(503, "billing_not_configured")
		if n := count(t, e.DB, &models.SubscriptionChange{}, "org_id = ?", org); n != 0 {
			t.Fatalf("%d changes recorded without billing", n)
		}
		staff := e.SignUp(apitest.UniqueEmail("staff"))
		if _, err := models.SetUserStaff(t.Context(), e.DB, staff.Email, true); err != nil {
			t.Fatal(err)
		}
		e.SignIn(staff)
		e.Do(apitest.Request{Method: "GET", Path: "/ops/v1/billing/changes", Headers: staff.Auth()}).ExpectProblem(503, "billing_not_configured")
	})
}

// The webhook over HTTP: only a delivery signed with the endpoint's secret,
// recently, over exactly this body is accepted; each event id once.
func TestWebhookOverHTTP(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		deliver := func(body []byte, signature string) *apitest.Response {
			h := map[string]string{}
			if signature != "" {
				h["Stripe-Signature"] = signature
			}
			return e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/webhook", Body: body, Headers: h})
		}
		payload := stripetest.Event("invoice.paid", map[string]any{"id": "in_webhook", "object": "invoice", "subscription": "sub_unknown"})
		var ev struct{ ID string }
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatal(err)
		}
		stored := func() int64 { return count(t, e.DB, &models.StripeEvent{}, "id = ?", ev.ID) }

		deliver(payload, "").ExpectProblem(400, "invalid_signature")
		deliver(payload, stripetest.Sign(payload, "whsec_someone_else", time.Now())).ExpectProblem(400, "invalid_signature")
		tampered := []byte(strings.Replace(string(payload), "in_webhook", "in_webhooK", 1))
		deliver(tampered, stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())).ExpectProblem(400, "invalid_signature")
		deliver(payload, stripetest.Sign(payload, stripetest.WebhookSecret, time.Now().Add(-10*time.Minute))).ExpectProblem(400, "invalid_signature")
		if stored() != 0 {
			t.Fatal("a refused delivery was stored")
		}

		var receipt struct {
			Received, Duplicate bool
			EventID             string
		}
		signature := stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())
		deliver(payload, signature).Expect(200).JSON(&receipt)
		if !receipt.Received || receipt.Duplicate || receipt.EventID != ev.ID || stored() != 1 {
			t.Fatalf("first delivery %+v, %d stored", receipt, stored())
		}
		deliver(payload, signature).Expect(200).JSON(&receipt)
		if !receipt.Duplicate || stored() != 1 {
			t.Fatalf("replay %+v, %d stored", receipt, stored())
		}
		// Signed, but not an event.
		junk := []byte(`{"hello":"world"}`)
		deliver(junk, stripetest.Sign(junk, stripetest.WebhookSecret, time.Now())).ExpectProblem(400, "invalid_event")
	}, apitest.WithBilling(st.Config()))
}
