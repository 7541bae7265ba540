package activities_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// openChange seeds an organization on plan (with an active subscription
// when subscribed) and opens a change to target.
func openChange(t *testing.T, db *gorm.DB, plan, target string, subscribed, downgrade bool) *models.SubscriptionChange {
	t.Helper()
	orgID, _ := seedOrg(t, db, models.RoleOwner)
	if err := models.SetOrgPlan(context.Background(), db, orgID, plan); err != nil {
		t.Fatal(err)
	}
	if subscribed {
		now := models.Now()
		if err := db.Create(&models.BillingAccount{OrgID: orgID, StripeCustomerID: "cus_" + orgID, StripeSubscriptionID: "sub_" + orgID,
			SubscriptionStatus: "active", Plan: plan, Interval: models.IntervalMonth, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
	}
	var c *models.SubscriptionChange
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		c, err = models.OpenSubscriptionChange(tx, models.OpenChange{OrgID: orgID, Plan: target, Downgrade: downgrade, RequestedBy: "u"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eachBilling runs fn once per dialect, with billing activities talking to
// stripe-mock through a recording proxy.
func eachBilling(t *testing.T, fn func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing)) {
	t.Helper()
	st := stripetest.Start(t)
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, st, activities.NewBilling(db, st.Config())) })
}

// withCustomer opens a create change from free to plan and ensures the
// organization's customer.
func withCustomer(t *testing.T, db *gorm.DB, a *activities.Billing, plan string) *models.SubscriptionChange {
	t.Helper()
	c := openChange(t, db, models.PlanFree, plan, false, false)
	if _, err := a.EnsureCustomer(context.Background(), c.ID); err != nil {
		t.Fatal(err)
	}
	return c
}

func orgPlan(t *testing.T, db *gorm.DB, orgID string) string {
	t.Helper()
	var plan string
	if err := db.Model(&models.Organization{}).Where("id = ?", orgID).Pluck("plan", &plan).Error; err != nil {
		t.Fatal(err)
	}
	return plan
}

func reload(t *testing.T, db *gorm.DB, id string) *models.SubscriptionChange {
	t.Helper()
	c, err := models.FindSubscriptionChange(context.Background(), db, "", id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// retryable tells whether Temporal would retry an activity error.
func retryable(err error) bool {
	var appErr *temporal.ApplicationError
	return err != nil && !(errors.As(err, &appErr) && appErr.NonRetryable())
}

// The organization's customer is created once, ever: a retried step whose
// answer was lost sends the same key (Stripe answers with the same
// customer), a second change reuses the stored one.
func TestEnsureCustomerOncePerOrganization(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := openChange(t, db, models.PlanFree, models.PlanStarter, false, false)
		pattern := "/v1/customers"
		before := len(st.Requests(http.MethodPost, pattern))

		st.Lose(http.MethodPost, pattern, 1)
		if _, err := a.EnsureCustomer(ctx, c.ID); !retryable(err) {
			t.Fatalf("lost answer: %v (must be retried)", err)
		}
		cus, err := a.EnsureCustomer(ctx, c.ID)
		if err != nil || !strings.HasPrefix(cus, "cus_") {
			t.Fatalf("customer %q %v", cus, err)
		}
		again, err := a.EnsureCustomer(ctx, c.ID)
		if err != nil || again != cus {
			t.Fatalf("second call: %q %v", again, err)
		}
		sent := st.Requests(http.MethodPost, pattern)[before:]
		if len(sent) != 2 {
			t.Fatalf("%d customer creations sent, want 2 (the lost one and its retry)", len(sent))
		}
		for _, r := range sent {
			if r.IdempotencyKey != activities.CustomerIdempotencyKey(c.OrgID) || r.Metadata("orgId") != c.OrgID || r.Metadata("changeId") != c.ID || r.Form.Get("name") != "Acme" {
				t.Fatalf("customer creation %+v", r)
			}
		}
		if got := reload(t, db, c.ID); got.StripeCustomerID != cus || got.Step != models.StepCustomer {
			t.Fatalf("change %+v", got)
		}

		// The organization's next change reuses its customer.
		if _, err := models.CloseSubscriptionChange(ctx, db, c.ID, models.ChangeFailed, "x", "y"); err != nil {
			t.Fatal(err)
		}
		var next *models.SubscriptionChange
		if err := db.Transaction(func(tx *gorm.DB) error {
			next, err = models.OpenSubscriptionChange(tx, models.OpenChange{OrgID: c.OrgID, Plan: models.PlanBusiness})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got, err := a.EnsureCustomer(ctx, next.ID); err != nil || got != cus {
			t.Fatalf("next change's customer %q %v", got, err)
		}
		if n := len(st.Requests(http.MethodPost, pattern)[before:]); n != 2 {
			t.Fatalf("%d customer creations after a second change", n)
		}
	})
}

// The subscription is created once per change: unpaid, the latest
// invoice's payment intent expanded, metadata and key set; what the
// customer needs to pay is recorded; a re-run sends nothing.
func TestCreateSubscriptionOncePerChange(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := withCustomer(t, db, a, models.PlanBusiness)
		before := len(st.Requests(http.MethodPost, "/v1/subscriptions"))
		pay, err := a.CreateSubscription(ctx, c.ID)
		if err != nil || !strings.HasPrefix(pay.SubscriptionID, "sub_") || !strings.HasPrefix(pay.InvoiceID, "in_") {
			t.Fatalf("%+v %v", pay, err)
		}
		if again, err := a.CreateSubscription(ctx, c.ID); err != nil || again.SubscriptionID != pay.SubscriptionID {
			t.Fatalf("re-run %+v %v", again, err)
		}
		sent := st.Requests(http.MethodPost, "/v1/subscriptions")[before:]
		if len(sent) != 1 {
			t.Fatalf("%d subscription creations, want 1", len(sent))
		}
		r := sent[0]
		got := reload(t, db, c.ID)
		if r.IdempotencyKey != activities.IdempotencyKey(c.ID, "subscription-create") || r.Metadata("orgId") != c.OrgID || r.Metadata("changeId") != c.ID ||
			r.Form.Get("payment_behavior") != "default_incomplete" || r.Form.Get("expand[0]") != "latest_invoice.payment_intent" ||
			r.Form.Get("items[0][price]") != "price_business_month" || r.Form.Get("customer") != got.StripeCustomerID {
			t.Fatalf("subscription creation %+v", r.Form)
		}
		if got.Status != models.ChangeAwaitingPayment || got.Step != models.StepPayment || got.StripeSubscriptionID != pay.SubscriptionID ||
			got.StripeInvoiceID != pay.InvoiceID || got.StripePriceID != "price_business_month" || got.StripePaymentIntentID == "" || got.ClientSecret == "" {
			t.Fatalf("change after the subscription %+v", got)
		}
		if plan := orgPlan(t, db, c.OrgID); plan != models.PlanFree {
			t.Fatalf("plan %s before any payment", plan)
		}
	})
}

// Stripe answers 500 twice, then works: each failure is retryable, every
// attempt carries the same key, one subscription is created.
func TestStripeOutageRetriedWithTheSameKey(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := withCustomer(t, db, a, models.PlanStarter)
		before := len(st.Requests(http.MethodPost, "/v1/subscriptions"))
		st.Fail(http.MethodPost, "/v1/subscriptions", 2, http.StatusInternalServerError, "api_error", "", "Stripe is having a bad day.")
		for i := range 2 {
			if _, err := a.CreateSubscription(ctx, c.ID); !retryable(err) {
				t.Fatalf("attempt %d: %v (a 500 must be retried)", i+1, err)
			}
		}
		if _, err := a.CreateSubscription(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		sent := st.Requests(http.MethodPost, "/v1/subscriptions")[before:]
		forwarded := 0
		for _, r := range sent {
			if r.IdempotencyKey != activities.IdempotencyKey(c.ID, "subscription-create") {
				t.Fatalf("attempt with key %q", r.IdempotencyKey)
			}
			if r.Forwarded {
				forwarded++
			}
		}
		if len(sent) != 3 || forwarded != 1 {
			t.Fatalf("%d attempts, %d reached Stripe; want 3 and 1", len(sent), forwarded)
		}
	})
}

// Stripe 4xx: a non-retryable StripeRejected carrying Stripe's code and
// message; nothing is recorded as created.
func TestStripeRefusalIsNonRetryable(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := withCustomer(t, db, a, models.PlanStarter)
		st.Fail(http.MethodPost, "/v1/subscriptions", 1, http.StatusBadRequest, "invalid_request_error", "resource_missing", "No such price: 'price_starter_month'")
		_, err := a.CreateSubscription(ctx, c.ID)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != activities.ErrTypeStripeRejected {
			t.Fatalf("refusal: %v", err)
		}
		var why activities.StripeFailure
		if err := appErr.Details(&why); err != nil || why != (activities.StripeFailure{Status: 400, Code: "resource_missing", Message: "No such price: 'price_starter_month'"}) {
			t.Fatalf("details %+v %v", why, err)
		}
		if got := reload(t, db, c.ID); got.StripeSubscriptionID != "" || got.Step != models.StepSubscription {
			t.Fatalf("change after a refusal %+v", got)
		}
		// A declined card names the decline code.
		st.Fail(http.MethodPost, "/v1/subscriptions", 1, http.StatusPaymentRequired, "card_error", "card_declined", "Your card was declined.")
		_, err = a.CreateSubscription(ctx, c.ID)
		if errors.As(err, &appErr); appErr.Details(&why) != nil || why.Code != "card_declined" || why.Status != 402 {
			t.Fatalf("decline %+v", why)
		}
	})
}

// Upgrade: the price changes at once with proration, invoiced now, applied
// by Stripe only when paid; downgrade and cancel are scheduled at the
// period end. Each with its key, once.
func TestUpgradeDowngradeAndCancelAtStripe(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()

		up := openChange(t, db, models.PlanStarter, models.PlanEnterprise, true, false)
		pay, err := a.UpgradeSubscription(ctx, up.ID)
		if err != nil || pay.InvoiceID == "" {
			t.Fatalf("upgrade %+v %v", pay, err)
		}
		if _, err := a.UpgradeSubscription(ctx, up.ID); err != nil {
			t.Fatal(err)
		}
		sent := st.Requests(http.MethodPost, "/v1/subscriptions/sub_"+up.OrgID)
		if len(sent) != 1 {
			t.Fatalf("%d upgrade requests, want 1", len(sent))
		}
		f := sent[0].Form
		if sent[0].IdempotencyKey != activities.IdempotencyKey(up.ID, "subscription-upgrade") || f.Get("proration_behavior") != "always_invoice" ||
			f.Get("payment_behavior") != "pending_if_incomplete" || f.Get("items[0][price]") != "price_enterprise_month" || f.Get("items[0][id]") == "" {
			t.Fatalf("upgrade request %v", f)
		}
		if got := reload(t, db, up.ID); got.Status != models.ChangeAwaitingPayment || got.StripeInvoiceID != pay.InvoiceID {
			t.Fatalf("upgrade change %+v", got)
		}

		down := openChange(t, db, models.PlanBusiness, models.PlanStarter, true, true)
		at, err := a.ScheduleChange(ctx, down.ID)
		if err != nil || at.IsZero() {
			t.Fatalf("downgrade %v %v", at, err)
		}
		sent = st.Requests(http.MethodPost, "/v1/subscriptions/sub_"+down.OrgID)
		if len(sent) != 1 || sent[0].IdempotencyKey != activities.IdempotencyKey(down.ID, "subscription-downgrade") ||
			sent[0].Form.Get("proration_behavior") != "none" || sent[0].Form.Get("items[0][price]") != "price_starter_month" {
			t.Fatalf("downgrade requests %+v", sent)
		}
		if got := reload(t, db, down.ID); got.Status != models.ChangeScheduled || got.EffectiveAt == nil || !got.EffectiveAt.Equal(at) {
			t.Fatalf("downgrade change %+v", got)
		}

		cancel := openChange(t, db, models.PlanStarter, models.PlanFree, true, true)
		if _, err := a.ScheduleChange(ctx, cancel.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ScheduleChange(ctx, cancel.ID); err != nil {
			t.Fatal(err)
		}
		sent = st.Requests(http.MethodPost, "/v1/subscriptions/sub_"+cancel.OrgID)
		if len(sent) != 1 || sent[0].IdempotencyKey != activities.IdempotencyKey(cancel.ID, "subscription-cancel") || sent[0].Form.Get("cancel_at_period_end") != "true" {
			t.Fatalf("cancel requests %+v", sent)
		}
		if plan := orgPlan(t, db, cancel.OrgID); plan != models.PlanStarter {
			t.Fatalf("a scheduled cancellation changed the plan to %s at once", plan)
		}
	})
}

// Expiry cancels a subscription still incomplete (with its key); one that
// turned active is reported paid and left alone.
func TestExpireUnpaid(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := openChange(t, db, models.PlanFree, models.PlanStarter, false, false)
		if _, err := models.RecordChangeProgress(ctx, db, c.ID, models.ChangeProgress{Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeCustomerID: "cus_x", StripeSubscriptionID: "sub_exp" + c.ID, StripeInvoiceID: "in_x"}}); err != nil {
			t.Fatal(err)
		}
		sub := "/v1/subscriptions/sub_exp" + c.ID
		st.Respond(http.MethodGet, sub, 1, http.StatusOK, `{"id":"sub_exp`+c.ID+`","object":"subscription","status":"incomplete"}`)
		paid, err := a.ExpireUnpaid(ctx, c.ID)
		if err != nil || paid {
			t.Fatalf("%v %v", paid, err)
		}
		cancels := st.Requests(http.MethodDelete, sub)
		if len(cancels) != 1 || cancels[0].IdempotencyKey != activities.IdempotencyKey(c.ID, "subscription-expire") {
			t.Fatalf("cancellations %+v", cancels)
		}
		st.Respond(http.MethodGet, sub, 1, http.StatusOK, `{"id":"sub_exp`+c.ID+`","object":"subscription","status":"active"}`)
		if paid, err := a.ExpireUnpaid(ctx, c.ID); err != nil || !paid {
			t.Fatalf("active subscription: %v %v", paid, err)
		}
		if n := len(st.Requests(http.MethodDelete, sub)); n != 1 {
			t.Fatalf("an active subscription was canceled (%d cancellations)", n)
		}
	})
}

// A staff retry of a failed payment charges the open invoice again with
// the retry's own key; an invoice paid meanwhile is not charged.
func TestRetryPayment(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := openChange(t, db, models.PlanFree, models.PlanStarter, false, false)
		inv := "in_r" + c.ID
		if _, err := models.RecordChangeProgress(ctx, db, c.ID, models.ChangeProgress{Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeCustomerID: "cus_x", StripeSubscriptionID: "sub_x", StripeInvoiceID: inv}}); err != nil {
			t.Fatal(err)
		}
		st.Respond(http.MethodGet, "/v1/invoices/"+inv, 1, http.StatusOK, `{"id":"`+inv+`","object":"invoice","status":"open"}`)
		st.Respond(http.MethodPost, "/v1/invoices/"+inv+"/pay", 1, http.StatusOK, `{"id":"`+inv+`","object":"invoice","status":"paid"}`)
		pay, err := a.RetryPayment(ctx, c.ID, 1)
		if err != nil || !pay.Paid {
			t.Fatalf("%+v %v", pay, err)
		}
		pays := st.Requests(http.MethodPost, "/v1/invoices/"+inv+"/pay")
		if len(pays) != 1 || pays[0].IdempotencyKey != activities.IdempotencyKey(c.ID, "invoice-pay/retry-1") {
			t.Fatalf("pay requests %+v", pays)
		}
		st.Respond(http.MethodGet, "/v1/invoices/"+inv, 1, http.StatusOK, `{"id":"`+inv+`","object":"invoice","status":"paid"}`)
		if pay, err := a.RetryPayment(ctx, c.ID, 2); err != nil || !pay.Paid {
			t.Fatalf("paid meanwhile: %+v %v", pay, err)
		}
		if n := len(st.Requests(http.MethodPost, "/v1/invoices/"+inv+"/pay")); n != 1 {
			t.Fatalf("a paid invoice was charged again (%d pay requests)", n)
		}
		// The card is declined again: the retry fails with the decline.
		st.Respond(http.MethodGet, "/v1/invoices/"+inv, 1, http.StatusOK, `{"id":"`+inv+`","object":"invoice","status":"open"}`)
		st.Fail(http.MethodPost, "/v1/invoices/"+inv+"/pay", 1, http.StatusPaymentRequired, "card_error", "card_declined", "Your card was declined.")
		_, err = a.RetryPayment(ctx, c.ID, 3)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeStripeRejected {
			t.Fatalf("declined retry: %v", err)
		}
	})
}

// After applying, the account gets Stripe's status and period end.
func TestSyncSubscription(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := withCustomer(t, db, a, models.PlanStarter)
		if _, err := a.CreateSubscription(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if err := a.ApplyPlan(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		c = reload(t, db, c.ID)
		end := time.Now().Add(30 * 24 * time.Hour).Unix()
		st.Respond(http.MethodGet, "/v1/subscriptions/"+c.StripeSubscriptionID, 1, http.StatusOK,
			fmt.Sprintf(`{"id":%q,"object":"subscription","status":"active","current_period_end":%d}`, c.StripeSubscriptionID, end))
		if err := a.SyncSubscription(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		account, _ := models.FindBillingAccount(ctx, db, c.OrgID)
		if account.SubscriptionStatus != "active" || account.CurrentPeriodEnd == nil || account.CurrentPeriodEnd.Unix() != end {
			t.Fatalf("account %+v", account)
		}
	})
}

// Without a configured price id the price is found by its lookup key.
func TestPriceLookupKeyFallback(t *testing.T) {
	st := stripetest.Start(t)
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		cfg := st.Config()
		delete(cfg.Prices, stripeconfig.PriceKey(models.PlanStarter, models.IntervalMonth))
		a := activities.NewBilling(db, cfg)
		c := withCustomer(t, db, a, models.PlanStarter)
		before := len(st.Requests(http.MethodGet, "/v1/prices"))
		if _, err := a.CreateSubscription(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		lookups := st.Requests(http.MethodGet, "/v1/prices")[before:]
		if len(lookups) != 1 || lookups[0].Form.Get("lookup_keys[0]") != "starter_monthly" || lookups[0].Form.Get("active") != "true" {
			t.Fatalf("lookups %+v", lookups)
		}
		if got := reload(t, db, c.ID); got.StripePriceID == "" || got.StripePriceID == "price_starter_month" {
			t.Fatalf("price %q", got.StripePriceID)
		}
		// No price with that key either: a clear, non-retryable error.
		other := withCustomer(t, db, a, models.PlanStarter)
		st.Respond(http.MethodGet, "/v1/prices", 1, http.StatusOK, `{"object":"list","data":[],"has_more":false,"url":"/v1/prices"}`)
		_, err := a.CreateSubscription(ctx, other.ID)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypePriceNotConfigured || !appErr.NonRetryable() {
			t.Fatalf("missing price: %v", err)
		}
	})
}

// Without a secret key nothing is sent and the step fails for good.
func TestBillingNotConfigured(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := activities.NewBilling(db, stripeconfig.Config{})
		if a.Stripe != nil || (stripeconfig.Config{}).Configured() {
			t.Fatal("an empty configuration must not be configured")
		}
		c := openChange(t, db, models.PlanFree, models.PlanStarter, false, false)
		_, err := a.EnsureCustomer(context.Background(), c.ID)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeBillingNotConfigured || !appErr.NonRetryable() {
			t.Fatalf("unconfigured: %v", err)
		}
	})
}

// A step must not act on a change closed meanwhile.
func TestStepsRefuseClosedChanges(t *testing.T) {
	eachBilling(t, func(t *testing.T, db *gorm.DB, st *stripetest.Stripe, a *activities.Billing) {
		ctx := context.Background()
		c := openChange(t, db, models.PlanFree, models.PlanStarter, false, false)
		if err := a.CloseChange(ctx, c.ID, models.ChangeCanceled, activities.StripeFailure{Code: "subscription_canceled", Message: "gone"}); err != nil {
			t.Fatal(err)
		}
		before := len(st.Requests("", ""))
		_, err := a.EnsureCustomer(ctx, c.ID)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeChangeClosed {
			t.Fatalf("closed change: %v", err)
		}
		if err := a.ApplyPlan(ctx, c.ID); !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeChangeClosed {
			t.Fatalf("apply a canceled change: %v", err)
		}
		if n := len(st.Requests("", "")); n != before {
			t.Fatalf("%d requests sent for a closed change", n-before)
		}
	})
}

func TestMain(m *testing.M) { stripetest.Main(m) }
