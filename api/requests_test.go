package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// Every request that may change data runs in one transaction (web.Tx): when
// the last statement of a request fails, after everything its handler
// wrote, nothing of the request remains. The test Env's commit hook
// (apitest.WithCommitHook) is that statement — an UPDATE that breaks a NOT
// NULL column, run just before the COMMIT of the app's transactions — and
// every POST, PUT, PATCH and DELETE route of the app is called once, as its
// own organization with a valid request, while it fails. Each must answer
// 500 and leave every table as it was. A handler that wrote on the pool
// instead of in its request's transaction, or a route without the
// middleware, fails here.
//
// apitest.Each runs it on both dialects, without and with an
// Idempotency-Key. The routes whose handler is one statement
// (web.OneStatementTx) have no transaction to fail in without a key; they
// must succeed there (but the intake on SQLite: oneStatementRoutes), and
// are tested with one.
func TestEveryMutatingRouteIsOneTransaction(t *testing.T) {
	var failing atomic.Bool
	var reached atomic.Int32
	var orgID atomic.Pointer[string]
	lastStatementFails := apitest.WithCommitHook(func(tx *gorm.DB) error {
		if !failing.Load() {
			return nil
		}
		reached.Add(1)
		return tx.Exec("UPDATE organizations SET name = NULL WHERE id = ?", *orgID.Load()).Error
	})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		a := newTenant(t, e, "Tenant A", true)
		orgID.Store(&a.org)
		x := newExtras(t, e, a)
		var routes []string
		seen := map[string]bool{}
		for _, r := range e.App.GetRoutes(true) {
			route := r.Method + " " + r.Path
			if !seen[route] && strings.Contains("POST PUT PATCH DELETE", r.Method) {
				routes = append(routes, route)
			}
			seen[route] = true
		}
		// The one-statement routes succeed without a key, and the intake's
		// then goes on in the background: they go last, so that no other
		// route's tables move under their feet.
		sort.SliceStable(routes, func(i, j int) bool { return !oneStatementRoutes[routes[i]] && oneStatementRoutes[routes[j]] })
		for _, route := range routes {
			req, ok := ownRequest(route, a, x, e.Keyed)
			if !ok {
				t.Errorf("%s has no request in ownRequest (api/requests_test.go): add a valid request of the organization's own", route)
				continue
			}
			// A 500 is no documented answer of these routes: the failure is the test's.
			req.SkipSpec = true
			before := tables(t, e.DB)
			reached.Store(0)
			failing.Store(true)
			resp := e.Do(req)
			failing.Store(false)
			if oneStatementRoutes[route] && !e.Keyed && !(e.Dialect == database.SQLite && route == "POST /crm/leads/webhook") {
				if resp.Status >= 300 || reached.Load() != 0 {
					t.Errorf("%s, one statement: %d %s (the failing statement reached %d times), want success outside any transaction",
						route, resp.Status, resp.Body, reached.Load())
				}
				continue
			}
			if resp.Status != 500 || reached.Load() != 1 {
				t.Errorf("%s: %d %s, the failing statement reached %d times; want a 500 from the request's last statement (fix the request if the route refused it)",
					route, resp.Status, resp.Body, reached.Load())
				continue
			}
			if after := tables(t, e.DB); !reflect.DeepEqual(before, after) {
				for table := range after {
					if !reflect.DeepEqual(before[table], after[table]) {
						t.Errorf("%s changed %s:\nbefore %v\nafter  %v", route, table, before[table], after[table])
					}
				}
			}
		}
	}, lastStatementFails, apitest.WithBilling(stripeconfig.Config{SecretKey: "sk_test_tx", WebhookSecret: "whsec_tx",
		APIBase: "http://127.0.0.1:9"}))
}

// oneStatementRoutes are the routes whose handler writes with
// web.OneStatementTx. On SQLite the lead intake's one statement is a
// transaction of two (its INSERT and its workflow start,
// models.RecordWithStart), which fails and leaves nothing as a request's
// does.
var oneStatementRoutes = map[string]bool{
	"POST /crm/contacts":      true,
	"POST /crm/leads/webhook": true,
}

// extras is what the requests of the routes outside the tenant probes need.
type extras struct {
	staff, invitee *apitest.User
	// consoleSession and consoleToken are staff's session in the console.
	consoleSession, consoleToken string
	invitation                   string
	queuedJob                    string
	// queuedImports are an import of each app that has not started.
	queuedImports map[string]string
	// rejectedEmail is a message a limit rejected, for the retry.
	rejectedEmail string
}

func newExtras(t *testing.T, e *apitest.Env, a *tenant) *extras {
	t.Helper()
	x := &extras{staff: e.SignUp(apitest.UniqueEmail("staff")), invitee: e.SignUp(apitest.UniqueEmail("invitee"))}
	if _, err := models.SetUserStaff(t.Context(), e.DB, x.staff.Email, true); err != nil {
		t.Fatal(err)
	}
	e.SignIn(x.staff)
	var user models.IdentityUser
	if err := e.DB.Take(&user, "id = ?", x.staff.ID).Error; err != nil {
		t.Fatal(err)
	}
	// Seen in the future: no request of the test writes last_seen_at
	// outside its transaction (the console does every 30 s).
	secret, session, err := models.OpenStaffSession(e.DB, &user, "", models.Now().Add(time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	x.consoleSession, x.consoleToken = secret, session.CSRFToken
	x.invitation = e.Invite(a.owner, a.org, x.invitee.Email, models.RoleAgent).Token
	e.Eventually(func() bool {
		var queued int64
		e.DB.Model(&models.Invitation{}).Where("org_id = ? AND status = ? AND email_status = ?", a.org, models.InvitationPending,
			models.InviteEmailQueued).Count(&queued)
		return queued == 0
	}, "the invitation e-mail")
	// A job that has not started, for the cancel route (the tenant's own
	// has finished).
	job := models.AIJob{ID: models.NewID(), OrgID: a.org, Kind: models.AIKindSummarize, Status: models.AIJobQueued, InputText: "Queued.",
		Options: "{}", CreatedBy: models.ActorSystem, CreatedAt: models.Now(), UpdatedAt: models.Now()}
	if err := e.DB.Create(&job).Error; err != nil {
		t.Fatal(err)
	}
	x.queuedJob = job.ID
	x.queuedImports = map[string]string{}
	for app, object := range map[string]string{"crm": "contacts", "helpdesk": "customers"} {
		imp := models.Import{ID: models.NewID(), OrgID: a.org, Object: object, Format: models.FormatCSV, Mode: models.ModeCreate,
			Mapping: "{}", Columns: `["name"]`, Job: models.Job{State: models.ImportQueued, CreatedAt: models.Now(), UpdatedAt: models.Now(), ExpiresAt: models.Now()}}
		if err := e.DB.Create(&imp).Error; err != nil {
			t.Fatal(err)
		}
		x.queuedImports[app] = imp.ID
	}
	// A message a limit rejected, for its retry.
	rejected := models.InboundEmail{ID: models.NewID(), OrgID: a.org, MessageID: models.NewID() + "@tenant.example", MailFrom: "late@tenant-a.example",
		Rcpt: "ws@x", Via: "http", Raw: inboundMessage("late@tenant-a.example", a.org), Status: models.InboundRejected, Reason: "rate_limited",
		ReceivedAt: models.Now()}
	if err := e.DB.Create(&rejected).Error; err != nil {
		t.Fatal(err)
	}
	x.rejectedEmail = rejected.ID
	// An SLA policy, for its apply.
	e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/sla-policy", Headers: apitest.HelpdeskUser(a.owner.Token, a.org),
		Body: map[string]any{"businessHours": "24x7", "targets": map[string]any{"normal": map[string]any{"resolution": 60}}}}).Expect(200)
	// A subscription, for the downgrade.
	now := models.Now()
	account := models.BillingAccount{OrgID: a.org, StripeCustomerID: "cus_" + a.org, StripeSubscriptionID: "sub_" + a.org,
		SubscriptionStatus: "active", Plan: models.PlanBusiness, Interval: models.IntervalMonth, StripePriceID: "price_business",
		CreatedAt: now, UpdatedAt: now}
	if err := e.DB.Create(&account).Error; err != nil {
		t.Fatal(err)
	}
	return x
}

// console is a form of the staff console sent in staff's session.
func (x *extras) console(method, path, form string) apitest.Request {
	if form != "" {
		form += "&"
	}
	return apitest.Request{Method: method, Path: path, Body: form + "csrf=" + url.QueryEscape(x.consoleToken),
		Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": "suite_ops_session=" + x.consoleSession}}
}

// ownRequest is a valid request of the route as tenant a itself: the tenant
// probes' bodies and ids with a's own credentials, and a request of its own
// for each route outside them. keyed: the client sends Idempotency-Keys
// (apitest leaves the intake's to the test).
func ownRequest(route string, a *tenant, x *extras, keyed bool) (apitest.Request, bool) {
	method, tmpl, _ := strings.Cut(route, " ")
	hd := apitest.HelpdeskUser(a.owner.Token, a.org)
	service := apitest.Bearer(apitest.ServiceToken)
	switch route {
	case "POST /identity/v1/users":
		return apitest.Request{Method: method, Path: tmpl, Body: map[string]string{
			"email": apitest.UniqueEmail("new"), "password": "correct horse battery", "name": "New"}}, true
	case "POST /identity/v1/token":
		return apitest.Request{Method: method, Path: tmpl, Body: map[string]string{
			"grant_type": "password", "email": a.owner.Email, "password": a.owner.Password}}, true
	case "POST /identity/v1/token/refresh":
		return apitest.Request{Method: method, Path: tmpl, Body: map[string]string{"refresh_token": a.owner.Refresh}}, true
	case "PUT /identity/v1/orgs/:orgId":
		return apitest.Request{Method: method, Path: "/identity/v1/orgs/" + a.org, Headers: service, Body: map[string]string{"name": "Renamed"}}, true
	case "DELETE /identity/v1/orgs/:orgId":
		return apitest.Request{Method: method, Path: "/identity/v1/orgs/" + a.org, Headers: service}, true
	case "PUT /identity/v1/orgs/:orgId/members":
		return apitest.Request{Method: method, Path: "/identity/v1/orgs/" + a.org + "/members", Headers: service,
			Body: map[string]any{"members": []map[string]string{{"userId": a.owner.ID, "role": models.RoleOwner}}}}, true
	case "POST /crm/organization":
		return apitest.Request{Method: method, Path: tmpl, Headers: a.owner.Auth(), Body: map[string]string{"name": "Another"}}, true
	case "POST /crm/invitations/accept":
		return apitest.Request{Method: method, Path: tmpl, Headers: x.invitee.Auth(), Body: map[string]string{"token": x.invitation}}, true
	case "POST /crm/leads/webhook":
		headers := map[string]string{"X-Api-Key": a.crmKey}
		if keyed {
			headers["Idempotency-Key"] = models.NewID()
		}
		return apitest.Request{Method: method, Path: tmpl, Headers: headers,
			Body: map[string]string{"name": "Form", "email": apitest.UniqueEmail("form")}}, true
	case "POST /helpdesk/payments/webhook":
		payload := stripetest.Event("customer.updated", map[string]any{"id": "cus_" + a.org, "object": "customer"})
		return apitest.Request{Method: method, Path: tmpl, Body: payload,
			Headers: map[string]string{"Stripe-Signature": stripetest.Sign(payload, "whsec_tx", time.Now())}}, true
	case "POST /ops/v1/billing/changes/:id/retry":
		return apitest.Request{Method: method, Path: "/ops/v1/billing/changes/" + a.ids["subscriptionChange"] + "/retry", Headers: x.staff.Auth()}, true
	case "POST /ops/sign-in":
		return apitest.Request{Method: method, Path: tmpl, Body: "csrf=t0ken&email=" + url.QueryEscape(x.staff.Email) + "&password=" + url.QueryEscape(x.staff.Password),
			Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": "suite_ops_sign_in=t0ken"}}, true
	case "POST /ops/changes/:id/retry":
		return x.console(method, "/ops/changes/"+a.ids["subscriptionChange"]+"/retry", "confirm=yes"), true
	case "POST /ops/sign-out":
		return x.console(method, tmpl, ""), true
	case "POST /helpdesk/inbound/email":
		return apitest.Request{Method: method, Path: tmpl, Body: inboundMessage("new-mail@tenant-a.example", a.org),
			Headers: map[string]string{"X-Api-Key": a.hdKey, "X-Workspace-Id": a.org, "Content-Type": "message/rfc822"}}, true
	case "POST /helpdesk/payments/downgrade":
		// To a plan the tenant's four seats fit in.
		return apitest.Request{Method: method, Path: tmpl, Headers: hd, Body: map[string]string{"plan": models.PlanStarter}}, true
	case "POST /crm/imports", "POST /helpdesk/imports":
		headers, object := apitest.Bearer(a.crmKey), "contacts"
		if strings.HasPrefix(tmpl, "/helpdesk") {
			headers, object = hd, "customers"
		}
		body, contentType := apitest.Multipart("people.csv", []byte("name,email\nTx,tx@tenant-a.example\n"), "object", object)
		headers["Content-Type"] = contentType
		return apitest.Request{Method: method, Path: tmpl, Headers: headers, Body: body}, true
	case "POST /crm/imports/:id/cancel":
		return apitest.Request{Method: method, Path: "/crm/imports/" + x.queuedImports["crm"] + "/cancel", Headers: apitest.Bearer(a.crmKey)}, true
	case "POST /helpdesk/imports/:id/cancel":
		return apitest.Request{Method: method, Path: "/helpdesk/imports/" + x.queuedImports["helpdesk"] + "/cancel", Headers: hd}, true
	case "POST /helpdesk/inbound/email/:id/retry":
		return apitest.Request{Method: method, Path: "/helpdesk/inbound/email/" + x.rejectedEmail + "/retry", Headers: hd}, true
	case "POST /v1/ai/jobs/:id/cancel":
		return apitest.Request{Method: method, Path: "/v1/ai/jobs/" + x.queuedJob + "/cancel", Headers: apitest.Bearer(a.aiKey)}, true
	}
	p, ok := tenantProbes[route]
	if !ok || p.kind == notTenant || p.kind == special {
		return apitest.Request{}, false
	}
	path := tmpl
	for param, kind := range p.params {
		path = strings.Replace(path, ":"+param, a.ids[kind], 1)
	}
	path = strings.Replace(path, ":id", a.org, 1) // crmOrg: the organization
	req := apitest.Request{Method: method, Path: path}
	if p.body != nil && method != "DELETE" {
		req.Body = p.body(a, "")
	}
	switch p.kind {
	case crmData:
		req.Headers = apitest.Bearer(a.crmKey)
	case crmOrg:
		req.Headers = a.owner.Auth()
	case helpdesk:
		req.Headers = hd
	case ai:
		req.Headers = apitest.Bearer(a.aiKey)
	}
	return req, true
}

// tables reads every row of every table, but for what moves by itself:
// rate-limit counters and Idempotency-Keys (outside any request's
// transaction by design), the keys' last use (written after the request),
// the outbox rows' dispatch (the relay's) — their ids are compared.
func tables(t *testing.T, db *gorm.DB) map[string]string {
	t.Helper()
	var names []string
	q := "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	if database.DialectFor(db) == database.Postgres {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	if err := db.Raw(q).Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{"rate_counters": true, "idempotency_keys": true, "goose_db_version": true}
	out := map[string]string{}
	for _, table := range names {
		if skip[table] || strings.HasPrefix(table, "kb_articles_fts") {
			continue
		}
		var rows []map[string]any
		sel := db.Table(table)
		if table == "workflow_starts" {
			sel = sel.Select("id")
		}
		if err := sel.Find(&rows).Error; err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		lines := make([]string, len(rows))
		for i, r := range rows {
			delete(r, "last_used_at")
			b, _ := json.Marshal(r)
			lines[i] = string(b)
		}
		sort.Strings(lines)
		out[table] = fmt.Sprint(len(lines), lines)
	}
	return out
}
