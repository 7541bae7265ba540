package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/api/console"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

func TestMain(m *testing.M) { stripetest.Main(m) }

// clock is the console's clock, moved by the test.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return models.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
func withClock(c *clock) apitest.Option  { return apitest.WithConsole(console.Options{Now: c.Now}) }
func staffUser(t *testing.T, e *apitest.Env) *apitest.User {
	return grant(t, e, e.SignUp(apitest.UniqueEmail("staff")))
}

func grant(t *testing.T, e *apitest.Env, u *apitest.User) *apitest.User {
	t.Helper()
	if _, err := models.SetUserStaff(t.Context(), e.DB, u.Email, true); err != nil {
		t.Fatal(err)
	}
	return u
}

var count = apitest.Count

// audit is the newest audit entry of actor.
func audit(t *testing.T, db *gorm.DB, actor string) models.StaffAuditEntry {
	t.Helper()
	var e models.StaffAuditEntry
	if err := db.Where("actor = ?", actor).Order("created_at DESC, id DESC").Take(&e).Error; err != nil {
		t.Fatalf("the audit entry of %s: %v", actor, err)
	}
	return e
}

func expectPage(t *testing.T, r *apitest.Response, status int, contains ...string) {
	t.Helper()
	r.Expect(status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("content type %q, want text/html", ct)
	}
	for _, s := range contains {
		if !strings.Contains(string(r.Body), s) {
			t.Fatalf("the page does not say %q:\n%s", s, r.Body)
		}
	}
}

// Sign-in admits staff only, through a form that carries its token; the
// session is a Secure, HttpOnly, SameSite=Strict cookie for /ops, ends
// after the idle timeout, at sign-out and when the grant is revoked; every
// sign-in, refused or not, is in the audit log.
func TestConsoleSessions(t *testing.T) {
	var now clock
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		staff, other := staffUser(t, e), e.SignUp(apitest.UniqueEmail("member"))
		b := e.Browser()

		// Signed out: pages send to the sign-in page and come back.
		r := b.Get("/ops/changes?status=failed")
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ops/sign-in?next="+url.QueryEscape("/ops/changes?status=failed") {
			t.Fatalf("signed out: %d %s", r.Status, r.Header.Get("Location"))
		}
		form := b.Get("/ops/sign-in")
		expectPage(t, form, http.StatusOK, `name="password"`)
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options"} {
			if form.Header.Get(h) == "" {
				t.Fatalf("no %s on the sign-in page", h)
			}
		}
		if cc := form.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}

		// No form token: refused, nothing written.
		audits := count(t, e.DB, &models.StaffAuditEntry{}, "1 = 1")
		expectPage(t, b.Post("/ops/sign-in", url.Values{"email": {staff.Email}, "password": {staff.Password}}, nil), http.StatusForbidden, "csrf_failed")
		expectPage(t, b.Post("/ops/sign-in", url.Values{"email": {staff.Email}, "password": {staff.Password}, "csrf": {"forged"}}, nil),
			http.StatusForbidden, "csrf_failed")
		if n := count(t, e.DB, &models.StaffSession{}, "user_id = ?", staff.ID); n != 0 {
			t.Fatalf("%d sessions after forged sign-ins", n)
		}
		if n := count(t, e.DB, &models.StaffAuditEntry{}, "1 = 1"); n != audits {
			t.Fatal("a refused form was written down")
		}
		// Empty fields: the form again.
		b.Get("/ops/sign-in")
		expectPage(t, b.Form("/ops/sign-in", url.Values{"email": {""}}), http.StatusUnprocessableEntity, "validation_failed")

		// A wrong password and an account that is not staff are refused and audited.
		b.Get("/ops/sign-in")
		expectPage(t, b.Form("/ops/sign-in", url.Values{"email": {staff.Email}, "password": {"wrong password!"}}), http.StatusUnauthorized, "invalid_credentials")
		if a := audit(t, e.DB, staff.Email); a.Action != models.StaffSignIn || a.Outcome != models.StaffOutcomeRefused || a.Detail != "invalid_credentials" {
			t.Fatalf("audit of a wrong password %+v", a)
		}
		expectPage(t, b.SignIn(other), http.StatusForbidden, "staff_required", "grant-staff")
		if a := audit(t, e.DB, other.Email); a.Outcome != models.StaffOutcomeRefused || a.Detail != "not_staff" || a.ActorID != other.ID ||
			a.Channel != models.StaffViaConsole {
			t.Fatalf("audit of a non-staff sign-in %+v", a)
		}
		if n := count(t, e.DB, &models.StaffSession{}, "user_id = ?", other.ID); n != 0 {
			t.Fatal("a session for a non-staff account")
		}
		if _, ok := b.Cookies["suite_ops_session"]; ok {
			t.Fatal("a session cookie for a non-staff account")
		}
		b.Get("/ops/changes").Expect(http.StatusSeeOther)

		// Staff sign in and land where they were going.
		b.Get("/ops/sign-in?next=" + url.QueryEscape("/ops/audit"))
		r = b.Form("/ops/sign-in", url.Values{"email": {strings.ToUpper(staff.Email)}, "password": {staff.Password}, "next": {"/ops/audit"}})
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ops/audit" {
			t.Fatalf("sign-in: %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
		}
		var session *http.Cookie
		for _, line := range r.Header.Values("Set-Cookie") {
			if c, _ := http.ParseSetCookie(line); c != nil && c.Name == "suite_ops_session" {
				session = c
			}
		}
		if session == nil || !session.Secure || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/ops" {
			t.Fatalf("session cookie %+v", session)
		}
		if a := audit(t, e.DB, staff.Email); a.Action != models.StaffSignIn || a.Outcome != models.StaffOutcomeDone || a.ActorID != staff.ID {
			t.Fatalf("audit of the sign-in %+v", a)
		}
		expectPage(t, b.Get("/ops/audit"), http.StatusOK, "not_staff", "invalid_credentials", staff.Email)
		// Only a console page is a place to come back to.
		b.Get("/ops/sign-in")
		if r := b.Form("/ops/sign-in", url.Values{"email": {staff.Email}, "password": {staff.Password}, "next": {"https://evil.example/"}}); r.Header.Get("Location") != "/ops/changes" {
			t.Fatalf("next outside the console: %s", r.Header.Get("Location"))
		}

		// Idle for longer than the timeout: signed out.
		expectPage(t, b.Get("/ops/changes"), http.StatusOK, "Subscription changes", "Sign out")
		now.Advance(console.DefaultIdleTimeout - time.Minute)
		b.Get("/ops/changes").Expect(http.StatusOK) // in use: the timeout moves on
		now.Advance(console.DefaultIdleTimeout - time.Minute)
		b.Get("/ops/changes").Expect(http.StatusOK)
		now.Advance(console.DefaultIdleTimeout + time.Second)
		b.Get("/ops/changes").Expect(http.StatusSeeOther)

		// However busy, a session ends after its lifetime.
		b.SignIn(staff).Expect(http.StatusSeeOther)
		for range int(console.DefaultLifetime / (console.DefaultIdleTimeout / 2)) {
			now.Advance(console.DefaultIdleTimeout / 2)
			b.Get("/ops/audit")
		}
		b.Get("/ops/changes").Expect(http.StatusSeeOther)

		// A revoked grant ends the session at its next request.
		b.SignIn(staff).Expect(http.StatusSeeOther)
		b.Get("/ops/changes").Expect(http.StatusOK)
		if _, err := models.SetUserStaff(t.Context(), e.DB, staff.Email, false); err != nil {
			t.Fatal(err)
		}
		b.Get("/ops/changes").Expect(http.StatusSeeOther)
		grant(t, e, staff)

		// Sign-out needs the token too, then ends the session for good.
		b.SignIn(staff).Expect(http.StatusSeeOther)
		page := b.Get("/ops/changes")
		cookie := b.Cookies["suite_ops_session"]
		expectPage(t, b.Post("/ops/sign-out", url.Values{}, nil), http.StatusForbidden, "csrf_failed")
		// The right token from another site's page.
		expectPage(t, b.Post("/ops/sign-out", url.Values{"csrf": {b.Token}}, map[string]string{"Origin": "https://evil.example"}),
			http.StatusForbidden, "csrf_failed")
		b.Token = "x" + b.Token
		expectPage(t, b.Form("/ops/sign-out", nil), http.StatusForbidden, "csrf_failed")
		if b.Token = apitest.FormToken(page.Body); b.Token == "" {
			t.Fatalf("no form token on the page:\n%s", page.Body)
		}
		if r := b.Form("/ops/sign-out", nil); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ops/sign-in" {
			t.Fatalf("sign-out: %d %s", r.Status, r.Body)
		}
		if _, ok := b.Cookies["suite_ops_session"]; ok {
			t.Fatal("sign-out left the session cookie in the browser")
		}
		b.Cookies["suite_ops_session"] = cookie // a copy kept by someone
		b.Get("/ops/changes").Expect(http.StatusSeeOther)
		expectPage(t, b.Form("/ops/sign-out", nil), http.StatusUnauthorized, "session_ended")
		if a := audit(t, e.DB, staff.Email); a.Action != models.StaffSignOut || a.Outcome != models.StaffOutcomeDone {
			t.Fatalf("audit of the sign-out %+v", a)
		}
	}, withClock(&now))
}

// order asks for plan through the API as the organization's owner, waiting
// for the Stripe objects, and returns the change as stored.
func order(t *testing.T, e *apitest.Env, owner *apitest.User, org, plan string) *models.SubscriptionChange {
	t.Helper()
	var out struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/create-order", Body: map[string]any{"plan": plan},
		Headers: map[string]string{"Authorization": "Bearer " + owner.Token, "X-Workspace-Id": org, "Prefer": "wait=30"}}).Expect(202).JSON(&out)
	c, err := models.FindSubscriptionChange(t.Context(), e.DB, org, out.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deliver sends a Stripe event to the webhook route, signed as Stripe signs it.
func deliver(e *apitest.Env, typ string, object map[string]any) {
	e.T.Helper()
	payload := stripetest.Event(typ, object)
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/payments/webhook", Body: payload,
		Headers: map[string]string{"Stripe-Signature": stripetest.Sign(payload, stripetest.WebhookSecret, time.Now())}}).Expect(200)
}

func waitStatus(e *apitest.Env, org, changeID, status string) {
	e.T.Helper()
	e.Eventually(func() bool {
		c, err := models.FindSubscriptionChange(e.T.Context(), e.DB, org, changeID)
		return err == nil && c.Status == status
	}, "change %s to become %s", changeID, status)
}

// failedChange is an organization's order to starter whose payment failed
// (stripe-mock, the real worker), with Stripe set to take the payment on
// the next try.
func failedChange(t *testing.T, e *apitest.Env, st *stripetest.Stripe, name string) (org string, c *models.SubscriptionChange) {
	t.Helper()
	owner := e.SignUp(apitest.UniqueEmail("owner"))
	org = e.CreateOrg(owner, name)
	c = order(t, e, owner, org, models.PlanStarter)
	deliver(e, "invoice.payment_failed", map[string]any{"id": c.StripeInvoiceID, "object": "invoice", "customer": c.StripeCustomerID,
		"subscription": c.StripeSubscriptionID, "status": "open"})
	waitStatus(e, org, c.ID, models.ChangeFailed)
	inv := "/v1/invoices/" + c.StripeInvoiceID
	st.Respond(http.MethodGet, inv, 1, http.StatusOK, `{"id":"`+c.StripeInvoiceID+`","object":"invoice","status":"open"}`)
	st.Respond(http.MethodPost, inv+"/pay", 1, http.StatusOK, `{"id":"`+c.StripeInvoiceID+`","object":"invoice","status":"paid"}`)
	c, err := models.FindSubscriptionChange(t.Context(), e.DB, org, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return org, c
}

// Billing staff find a failed change in the list, read its timeline (the
// request, each Stripe call and webhook, the failure, with Temporal UI
// links), confirm a re-run and see it applied; the re-run, a refused one
// and bad input are handled as the operator API handles them, and audited.
func TestConsoleReRunsAFailedChange(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		org, c := failedChange(t, e, st, "Acme & <Sons>")
		staff := staffUser(t, e)
		b := e.Browser()
		b.SignIn(staff).Expect(http.StatusSeeOther)

		expectPage(t, b.Get("/ops/changes?status=failed"), http.StatusOK, c.ID, "Acme &amp; &lt;Sons&gt;", c.LastErrorCode, c.StripeSubscriptionID)
		expectPage(t, b.Get("/ops/changes?plan=starter&org="+org+"&from=2000-01-01"), http.StatusOK, c.ID)
		if r := b.Get("/ops/changes?plan=enterprise&org=" + org).Expect(http.StatusOK); strings.Contains(string(r.Body), c.ID) {
			t.Fatal("the plan filter let a starter change through")
		}
		expectPage(t, b.Get("/ops/changes?status=broken&org=nope&plan=gold&from=yesterday&offset=-1"), http.StatusUnprocessableEntity,
			"Status must be one of", "Organization must be an organization id", "Plan must be one of", "Dates are YYYY-MM-DD", "page offset")
		expectPage(t, b.Get("/ops/changes?from=2026-02-01&to=2026-01-01"), http.StatusUnprocessableEntity, "must not be before")

		page := b.Get("/ops/changes/" + c.ID)
		link := "http://temporal-ui.test/namespaces/" + url.PathEscape(e.Namespace()) + "/workflows/" + url.PathEscape(names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()))
		expectPage(t, page, http.StatusOK, "Re-run", "Requested", "EnsureCustomer", "CreateSubscription",
			"Stripe webhook invoice.payment_failed", "Run 1 failed", link, c.StripeCustomerID)
		expectPage(t, b.Get("/ops/changes/"+c.ID+"/retry"), http.StatusOK, "Re-run this change?", "charged twice", `name="confirm"`)

		// Not confirmed: nothing happens.
		expectPage(t, b.Form("/ops/changes/"+c.ID+"/retry", nil), http.StatusUnprocessableEntity, "confirmation_required")
		if n := count(t, e.DB, &models.SubscriptionChangeRetry{}, "change_id = ?", c.ID); n != 0 {
			t.Fatalf("%d retries without confirmation", n)
		}
		if a := audit(t, e.DB, staff.Email); a.Outcome != models.StaffOutcomeRefused || a.Detail != "confirmation_required" || a.Target != c.ID {
			t.Fatalf("audit of the unconfirmed re-run %+v", a)
		}
		r := b.Form("/ops/changes/"+c.ID+"/retry", url.Values{"confirm": {"yes"}})
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ops/changes/"+c.ID+"?done=retry" {
			t.Fatalf("re-run: %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
		}
		expectPage(t, b.Get(r.Header.Get("Location")), http.StatusOK, "Re-run recorded", "Re-run 1 requested")
		waitStatus(e, org, c.ID, models.ChangeApplied)
		// The plan applies, then the run ends.
		e.Eventually(func() bool { return strings.Contains(string(b.Get("/ops/changes/"+c.ID).Body), "Run 2 completed") }, "the re-run to complete")
		expectPage(t, b.Get("/ops/changes/"+c.ID), http.StatusOK, `id="status">applied`, "Applied")
		a := audit(t, e.DB, staff.Email)
		if a.Action != models.StaffRetryChange || a.Outcome != models.StaffOutcomeDone || a.Channel != models.StaffViaConsole ||
			a.Target != c.ID || a.OrgID != org || !strings.Contains(a.Detail, "retry-1") {
			t.Fatalf("audit of the re-run %+v", a)
		}

		// Applied: a second re-run is refused, said on the page and audited.
		r = b.Form("/ops/changes/"+c.ID+"/retry", url.Values{"confirm": {"yes"}})
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ops/changes/"+c.ID+"?refused=change_applied" {
			t.Fatalf("second re-run: %d %s", r.Status, r.Header.Get("Location"))
		}
		expectPage(t, b.Get(r.Header.Get("Location")), http.StatusOK, "Not re-run (change_applied)")
		if a := audit(t, e.DB, staff.Email); a.Outcome != models.StaffOutcomeRefused || a.Detail != "change_applied" || a.OrgID != org {
			t.Fatalf("audit of the refused re-run %+v", a)
		}
		if n := count(t, e.DB, &models.SubscriptionChangeRetry{}, "change_id = ?", c.ID); n != 1 {
			t.Fatalf("%d retries, want 1", n)
		}
		expectPage(t, b.Get("/ops/audit"), http.StatusOK, "billing.change.retry", "change_applied", "retry-1")

		// Unknown and malformed ids are 404 pages.
		for _, path := range []string{"/ops/changes/" + models.NewID(), "/ops/changes/not-an-id", "/ops/changes/not-an-id/retry",
			"/ops/organizations/" + models.NewID(), "/ops/organizations/not-an-id"} {
			expectPage(t, b.Get(path), http.StatusNotFound, "not_found")
		}
		unknown := models.NewID()
		expectPage(t, b.Form("/ops/changes/"+unknown+"/retry", url.Values{"confirm": {"yes"}}), http.StatusNotFound, "not_found")
		if a := audit(t, e.DB, staff.Email); a.Target != unknown || a.Outcome != models.StaffOutcomeRefused || a.Detail != "not_found" {
			t.Fatalf("audit of a re-run of an unknown change %+v", a)
		}
		// ?refused= shows a problem code, nothing else.
		if r := b.Get("/ops/changes/" + c.ID + "?refused=" + url.QueryEscape("Call +1 555 for a refund")); strings.Contains(string(r.Body), "refund") {
			t.Fatal("the page shows arbitrary text from its link")
		}

		// The organization: its plan, seats, changes and workflows.
		expectPage(t, b.Get("/ops/organizations/"+org), http.StatusOK, "Acme &amp; &lt;Sons&gt;", "1 used of 5", "1 active",
			c.StripeCustomerID, "/ops/changes/"+c.ID, "SubscriptionChange", "OrgRegistration",
			"http://temporal-ui.test/namespaces/"+url.PathEscape(e.Namespace())+"/workflows?query=")
	}, apitest.WithBilling(st.Config()), apitest.WithTemporalUI("http://temporal-ui.test"))
}
