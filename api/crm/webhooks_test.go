package crm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	enumspb "go.temporal.io/api/enums/v1"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

type webhook struct {
	ID, URL, Secret, Status, DisabledReason string
	Events                                  []string
}

type delivery struct {
	ID, EventID, EventType, Status, LastError string
	Attempts                                  int
	LastStatusCode                            *int
}

// failOnHeader makes a request whose X-Request-Id starts with "fail-" fail
// after its last statement (its transaction's COMMIT fails): the whole
// request rolls back.
var failOnHeader = apitest.WithCommitHook(func(tx *gorm.DB) error {
	if strings.HasPrefix(telemetry.RequestID(tx.Statement.Context), "fail-") {
		return errors.New("the request's last statement failed")
	}
	return nil
})

// A deal's changes reach an endpoint signed, complete and in order; a
// rolled-back change sends nothing; the log lists every delivery; a replay
// sends the same webhook-id again; a rotated secret signs beside the old
// one.
func TestWebhooksDeliverADealsChangesSignedAndInOrder(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		rc := apitest.StartWebhookReceiver(t)
		base := "/crm/organization/" + o.id + "/webhooks"
		var ep webhook
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: o.owner.Auth(),
			Body: map[string]any{"url": rc.URL + "/hooks", "events": []string{"deal.*"}, "description": "CI"}}).Expect(201).JSON(&ep)
		if !strings.HasPrefix(ep.Secret, "whsec_") || ep.Status != models.WebhookEnabled {
			t.Fatalf("created: %+v", ep)
		}
		rc.Trust(ep.Secret)
		var shown map[string]any
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID, Headers: o.owner.Auth()}).Expect(200).JSON(&shown)
		if _, ok := shown["secret"]; ok {
			t.Fatalf("GET shows the secret: %v", shown)
		}

		var d deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "Engines", "amount": 100}}).Expect(201).JSON(&d)
		put := func(body map[string]any, headers ...string) *apitest.Response {
			h := o.owner.Auth()
			for i := 0; i+1 < len(headers); i += 2 {
				h[headers[i]] = headers[i+1]
			}
			body["orgId"] = o.id
			// A 500 is no documented answer: the failure is the test's.
			return e.Do(apitest.Request{Method: "PUT", Path: "/crm/deals/" + d.ID, Headers: h, Body: body, SkipSpec: len(headers) > 0})
		}
		put(map[string]any{"stage": "QUALIFIED"}).Expect(200)
		// Rolled back after its event was recorded: nothing is sent.
		put(map[string]any{"title": "Never happened"}, "X-Request-Id", "fail-deal-update").Expect(500)
		put(map[string]any{"amount": 200}).Expect(200)
		put(map[string]any{"amount": 200}).Expect(200) // changes nothing: no event
		put(map[string]any{"stage": "WON"}).Expect(200)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/deals/" + d.ID + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(204)

		want := []string{"deal.created", "deal.updated", "deal.stage_changed", "deal.updated",
			"deal.updated", "deal.stage_changed", "deal.won", "deal.deleted"}
		e.Eventually(func() bool { return len(rc.Types(d.ID)) >= len(want) }, "%d events of the deal", len(want))
		if got := rc.Types(d.ID); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		for _, r := range rc.Received() {
			if r.Object.Title == "Never happened" {
				t.Fatalf("a rolled-back change was sent: %s", r.Body)
			}
		}
		got := rc.Received()
		if prev := got[2].Previous; prev["stage"] != "NEW" {
			t.Fatalf("stage_changed's previous: %v", prev)
		}
		if prev := got[3].Previous; prev["amount"] != float64(100) || prev["stage"] != nil {
			t.Fatalf("amount update's previous: %v", prev)
		}
		refused := rc.Refused()
		if len(refused) > 0 {
			t.Fatalf("deliveries failed verification: %v", refused)
		}

		// A tampered body fails the official verification.
		wh, _ := standardwebhooks.NewWebhook(ep.Secret)
		if err := wh.Verify(got[0].Body, got[0].Header); err != nil {
			t.Fatalf("the delivery as received: %v", err)
		}
		if wh.Verify([]byte(strings.Replace(string(got[0].Body), "Engines", "Engines!", 1)), got[0].Header) == nil {
			t.Fatal("a tampered body verified")
		}

		// The log. The receiver answers before the worker records its
		// answer: the last delivery turns succeeded a moment later.
		var log struct{ Data []delivery }
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries?status=succeeded", Headers: o.owner.Auth()}).Expect(200).JSON(&log)
			return len(log.Data) >= len(want)
		}, "%d succeeded deliveries", len(want))
		if len(log.Data) != len(want) {
			t.Fatalf("log: %+v", log.Data)
		}
		for _, l := range log.Data {
			if l.Attempts != 1 || l.LastStatusCode == nil || *l.LastStatusCode != 204 || l.EventType == "" {
				t.Fatalf("log entry %+v", l)
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries?status=failed", Headers: o.owner.Auth()}).Expect(200).JSON(&log)
		if len(log.Data) != 0 {
			t.Fatalf("failed: %+v", log.Data)
		}
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries?status=lost", Headers: o.owner.Auth()}).ExpectProblem(422, "validation_failed")

		// A replay sends the same event, with the same id.
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries", Headers: o.owner.Auth()}).Expect(200).JSON(&log)
		first := log.Data[len(log.Data)-1] // newest first: the creation is last
		var replay delivery
		e.Do(apitest.Request{Method: "POST", Path: base + "/" + ep.ID + "/deliveries/" + first.ID + "/replay", Headers: o.owner.Auth()}).
			Expect(202).JSON(&replay)
		if replay.EventID != first.EventID || replay.Status != models.DeliveryPending || replay.EventType != "deal.created" {
			t.Fatalf("replay %+v of %+v", replay, first)
		}
		e.Eventually(func() bool { return len(rc.Received()) == len(want)+1 }, "the replay")
		if r := rc.Received()[len(want)]; r.ID != first.EventID || r.Type != "deal.created" {
			t.Fatalf("replayed %s %s, want %s", r.ID, r.Type, first.EventID)
		}

		// A rotated secret: the new one and, for a day, the old one sign.
		var rotated webhook
		e.Do(apitest.Request{Method: "POST", Path: base + "/" + ep.ID + "/rotate-secret", Headers: o.owner.Auth()}).Expect(200).JSON(&rotated)
		if rotated.Secret == ep.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
			t.Fatalf("rotated: %+v", rotated)
		}
		e.Do(apitest.Request{Method: "POST", Path: base + "/" + ep.ID + "/test", Headers: o.owner.Auth()}).Expect(202)
		e.Eventually(func() bool { return len(rc.Received()) == len(want)+2 }, "the test event")
		test := rc.Received()[len(want)+1]
		if test.Type != models.WebhookTestEvent || len(strings.Fields(test.Signature)) != 2 {
			t.Fatalf("test event %s signed %q", test.Type, test.Signature)
		}
		for _, secret := range []string{rotated.Secret, ep.Secret} {
			alone, _ := standardwebhooks.NewWebhook(secret)
			if err := alone.Verify(test.Body, test.Header); err != nil {
				t.Fatalf("the test event does not verify with %s alone: %v", secret[:10], err)
			}
		}

		// Removed, the endpoint's workflow ends (its history is the one
		// `make histories` saves).
		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + ep.ID, Headers: o.owner.Auth()}).Expect(204)
		e.Eventually(func() bool {
			desc, err := e.Temporal.DescribeWorkflowExecution(t.Context(), names.WebhookEndpointID(o.id, ep.ID), "")
			return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, "the endpoint's workflow to end")
	}, apitest.WithWebhookReceivers(), failOnHeader)
}

// An endpoint that answers 410 Gone is disabled, its admins are told, and
// its later events wait; enabled again, it gets them.
func TestWebhookGoneDisablesTheEndpoint(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		rc := apitest.StartWebhookReceiver(t)
		var gone atomic.Bool
		gone.Store(true)
		rc.Answer = func(apitest.WebhookDelivery) int {
			if gone.Load() {
				return http.StatusGone
			}
			return http.StatusOK
		}
		base := "/crm/organization/" + o.id + "/webhooks"
		var ep webhook
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: o.owner.Auth(),
			Body: map[string]any{"url": rc.URL, "events": []string{"*"}}}).Expect(201).JSON(&ep)
		rc.Trust(ep.Secret)
		var d deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "Gone"}}).Expect(201).JSON(&d)
		e.Eventually(func() bool {
			var now webhook
			e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID, Headers: o.owner.Auth()}).Expect(200).JSON(&now)
			return now.Status == models.WebhookDisabled
		}, "the endpoint to be disabled")
		var notes []models.Notification
		if err := e.DB.Where("org_id = ? AND type = ?", o.id, "webhook_disabled").Find(&notes).Error; err != nil || len(notes) == 0 {
			t.Fatalf("admins' notifications %+v, %v", notes, err)
		}
		var log struct{ Data []delivery }
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries?status=failed", Headers: o.owner.Auth()}).Expect(200).JSON(&log)
		if len(log.Data) != 1 || log.Data[0].LastStatusCode == nil || *log.Data[0].LastStatusCode != 410 {
			t.Fatalf("failed deliveries %+v", log.Data)
		}
		// Disabled: a change waits for the endpoint.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/deals/" + d.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "Back"}}).Expect(200)
		gone.Store(false)
		e.Do(apitest.Request{Method: "PUT", Path: base + "/" + ep.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"status": "enabled"}}).Expect(200)
		e.Eventually(func() bool { return len(rc.Types(d.ID)) == 1 }, "the waiting event")
		if r := rc.Received()[0]; r.Type != "deal.updated" || r.Object.Title != "Back" {
			t.Fatalf("after enabling: %s %+v", r.Type, r.Object)
		}
	}, apitest.WithWebhookReceivers())
}

// Endpoints are for the organization's OWNER and ADMIN users; bad input is
// a 422 naming the field; URLs off the public internet are refused unless
// allow-listed; other organizations see nothing.
func TestWebhookEndpointRules(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		base := "/crm/organization/" + o.id + "/webhooks"
		create := func(who map[string]string, body map[string]any) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: base, Headers: who, Body: body})
		}
		ok := map[string]any{"url": "https://93.184.216.34/in", "events": []string{"deal.won"}}
		create(o.agentA.Auth(), ok).ExpectProblem(403, "admin_required")
		create(apitest.Bearer(o.key), ok).Expect(403)
		for _, tc := range []struct {
			body  map[string]any
			field string
			code  string
		}{
			{map[string]any{"url": "http://93.184.216.34/in", "events": []string{"deal.won"}}, "url", "not_https"},
			{map[string]any{"url": "https://127.0.0.1/in", "events": []string{"deal.won"}}, "url", "not_public"},
			{map[string]any{"url": "https://10.1.2.3/in", "events": []string{"deal.won"}}, "url", "not_public"},
			{map[string]any{"url": "https://169.254.169.254/latest", "events": []string{"deal.won"}}, "url", "not_public"},
			{map[string]any{"url": "https://localhost/in", "events": []string{"deal.won"}}, "url", "not_public"},
			{map[string]any{"url": "https://u:p@93.184.216.34/", "events": []string{"deal.won"}}, "url", "not_https"},
			{map[string]any{"url": "https://93.184.216.34/in", "events": []string{"deal.won", "deal.exploded"}}, "events[1]", "unknown_event"},
			{map[string]any{"url": "https://93.184.216.34/in", "events": []string{}}, "events", "min"},
			{map[string]any{"url": "https://93.184.216.34/in"}, "events", "required"},
		} {
			m := create(o.owner.Auth(), tc.body).ExpectProblem(422, "validation_failed")
			if !strings.Contains(fmt.Sprint(m["errors"]), tc.field) || !strings.Contains(fmt.Sprint(m["errors"]), tc.code) {
				t.Fatalf("%v: %v", tc.body, m["errors"])
			}
		}
		var n int64
		e.DB.Model(&models.WebhookEndpoint{}).Where("org_id = ?", o.id).Count(&n)
		if n != 0 {
			t.Fatalf("refused requests created %d endpoints", n)
		}
		var ep webhook
		create(o.owner.Auth(), ok).Expect(201).JSON(&ep)
		for i := 1; i < models.MaxWebhookEndpoints; i++ {
			create(o.owner.Auth(), ok).Expect(201)
		}
		create(o.owner.Auth(), ok).ExpectProblem(409, "too_many_webhooks")

		// Another organization's admin sees none of it.
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other")
		for _, path := range []string{base, base + "/" + ep.ID} {
			e.Do(apitest.Request{Method: "GET", Path: path, Headers: other.Auth()}).ExpectProblem(404, "not_found")
		}
		otherBase := "/crm/organization/" + otherOrg + "/webhooks/" + ep.ID
		e.Do(apitest.Request{Method: "GET", Path: otherBase, Headers: other.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: otherBase, Headers: other.Auth(), Body: map[string]any{"status": "disabled"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: otherBase, Headers: other.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: otherBase + "/rotate-secret", Headers: other.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: otherBase + "/test", Headers: other.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: otherBase + "/deliveries", Headers: other.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: base + "/not-an-id", Headers: o.owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: base + "/" + ep.ID + "/deliveries/" + models.NewID() + "/replay", Headers: o.owner.Auth()}).
			ExpectProblem(404, "not_found")

		// An update is checked as a creation is.
		e.Do(apitest.Request{Method: "PUT", Path: base + "/" + ep.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"url": "http://127.0.0.1:9/x"}}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "PUT", Path: base + "/" + ep.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"status": "paused"}}).ExpectProblem(422, "validation_failed")
		var disabled webhook
		e.Do(apitest.Request{Method: "PUT", Path: base + "/" + ep.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"status": "disabled", "events": []string{"deal.*", "deal.*"}}}).Expect(200).JSON(&disabled)
		if disabled.Status != models.WebhookDisabled || len(disabled.Events) != 1 || disabled.Secret != "" {
			t.Fatalf("updated: %+v", disabled)
		}
		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + ep.ID, Headers: o.owner.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID, Headers: o.owner.Auth()}).ExpectProblem(404, "not_found")
	})
}

// A receiver that is away — connection refused, then a 500, then a
// request that hangs past the 10 s timeout — gets everything once it is back: a
// thousand changes of one deal in order, a thousand other deals each
// created once, every event under the id it first had. Run once, on
// SQLite: its retries take most of a minute.
func TestWebhooksSurviveAReceiverOutageInOrder(t *testing.T) {
	e := apitest.New(t, database.SQLite, apitest.WithWebhookReceivers())
	o := newCRMOrg(t, e)
	addr := unassignedAddr(t) // away: connection refused

	var ep webhook
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/webhooks", Headers: o.owner.Auth(),
		Body: map[string]any{"url": "http://" + addr + "/in", "events": []string{"deal.*"}}}).Expect(201).JSON(&ep)
	var d deal
	e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: apitest.Bearer(o.key),
		Body: map[string]any{"title": "Watched", "amount": 0}}).Expect(201).JSON(&d)
	// The first attempt was refused. Back now: a 500, then one request
	// that hangs past the timeout, then answers.
	rc := &apitest.WebhookReceiver{}
	failures := 0
	rc.Answer = func(apitest.WebhookDelivery) int {
		failures++
		switch failures {
		case 1:
			return http.StatusInternalServerError
		case 2:
			time.Sleep(activities.WebhookTimeout + time.Second) // the suite gave up on it: a duplicate follows
		}
		return http.StatusOK
	}
	rc.Trust(ep.Secret)
	e.Eventually(func() bool {
		var got models.WebhookDelivery
		return e.DB.Take(&got, "endpoint_id = ? AND attempts > 0", ep.ID).Error == nil
	}, "the first, refused attempt")
	back := startReceiverOn(t, rc, addr)
	defer back.Close()
	const n = 1000
	others := map[string]bool{}
	start := time.Now()
	for i := 1; i <= n; i++ {
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/deals/" + d.ID, Headers: apitest.Bearer(o.key),
			Body: map[string]any{"amount": i}}).Expect(200)
		var other deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: apitest.Bearer(o.key),
			Body: map[string]any{"title": fmt.Sprint("Other ", i)}}).Expect(201).JSON(&other)
		others[other.ID] = true
	}
	t.Logf("%d changes in %s", 2*n, time.Since(start))

	deadline := time.Now().Add(3 * time.Minute)
	done := func() bool {
		seen := map[string]bool{}
		for _, r := range rc.Received() {
			seen[r.ID] = true
		}
		return len(seen) >= 2*n+1
	}
	for !done() {
		if time.Now().After(deadline) {
			t.Logf("after %s", time.Since(start))
			t.Fatalf("%d deliveries after 3 minutes", len(rc.Received()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	firstIDs := map[string]string{} // event id → the object it was about, on first receipt
	amount := -1.0
	for _, r := range rc.Received() {
		if obj, seen := firstIDs[r.ID]; seen {
			if obj != r.Object.ID {
				t.Fatalf("event %s re-sent about %s, first about %s", r.ID, r.Object.ID, obj)
			}
			continue // a re-delivery, under its id
		}
		firstIDs[r.ID] = r.Object.ID
		if r.Object.ID != d.ID {
			if r.Type != "deal.created" || !others[r.Object.ID] {
				t.Fatalf("unexpected %s of %s", r.Type, r.Object.ID)
			}
			delete(others, r.Object.ID)
			continue
		}
		var body struct {
			Data struct{ Object struct{ Amount float64 } }
		}
		_ = json.Unmarshal(r.Body, &body)
		if body.Data.Object.Amount <= amount {
			t.Fatalf("the deal's %s with amount %v came after amount %v", r.Type, body.Data.Object.Amount, amount)
		}
		amount = body.Data.Object.Amount
	}
	t.Logf("all delivered %s after the first change", time.Since(start))
	if amount != n || len(others) != 0 {
		t.Fatalf("last amount %v, %d other deals never announced", amount, len(others))
	}
	refused := rc.Refused()
	if len(refused) > 0 {
		t.Fatalf("deliveries failed verification: %v", refused)
	}
}

// unassignedAddr is a loopback address nobody listens on, with a port
// below the kernel's ephemeral range: no other listener on port 0, nor an
// outgoing connection, is given it while the test leaves it closed.
func unassignedAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if r, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(r)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.IntN(low-10000)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			_ = ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// startReceiverOn serves rc on addr (a port the test chose and closed).
func startReceiverOn(t *testing.T, rc *apitest.WebhookReceiver, addr string) *http.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rc.Handler(t)}
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// Tasks tell their changes too, and an endpoint gets only the types it
// subscribed to.
func TestWebhooksTellTaskChangesToTheirSubscribers(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		rc := apitest.StartWebhookReceiver(t)
		var ep webhook
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/webhooks", Headers: o.owner.Auth(),
			Body: map[string]any{"url": rc.URL, "events": []string{"task.*"}}}).Expect(201).JSON(&ep)
		rc.Trust(ep.Secret)
		key := apitest.Bearer(o.key)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: key, Body: map[string]any{"title": "Not subscribed"}}).Expect(201)
		var task struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: key,
			Body: map[string]any{"title": "Call Ada", "dueDate": "2030-01-10"}}).Expect(201).JSON(&task)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + task.ID, Headers: key, Body: map[string]any{"title": "Call Ada back"}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + task.ID, Headers: key, Body: map[string]any{"title": "Call Ada back"}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + task.ID, Headers: key, Body: map[string]any{"dueDate": "2030-02-01"}}).Expect(200)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + task.ID, Headers: key}).Expect(204)
		want := []string{"task.created", "task.updated", "task.updated", "task.deleted"}
		e.Eventually(func() bool { return len(rc.Received()) >= len(want) }, "the task's events")
		var got []string
		for _, r := range rc.Received() {
			got = append(got, r.Type)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		if prev := rc.Received()[1].Previous; prev["title"] != "Call Ada" {
			t.Fatalf("previous %v", prev)
		}
		// A change of the due date alone is told, with the date it had.
		if prev := rc.Received()[2].Previous; len(prev) != 1 || prev["dueDate"] != "2030-01-10" {
			t.Fatalf("the due date's previous %v, want dueDate 2030-01-10", prev)
		}
	}, apitest.WithWebhookReceivers())
}

// Members tell when they are invited, join and are removed.
func TestWebhooksTellMemberChanges(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Members Inc")
		e.SetPlan(org, models.PlanBusiness)
		rc := apitest.StartWebhookReceiver(t)
		var ep webhook
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + org + "/webhooks", Headers: owner.Auth(),
			Body: map[string]any{"url": rc.URL, "events": []string{"member.*"}}}).Expect(201).JSON(&ep)
		rc.Trust(ep.Secret)
		invitee := e.SignUp(apitest.UniqueEmail("invitee"))
		inv := e.Invite(owner, org, invitee.Email, models.RoleAgent)
		e.Accept(invitee, inv.Token).Expect(200)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/organization/" + org + "/members/" + inv.MemberID, Headers: owner.Auth()}).Expect(204)
		want := []string{"member.invited/invited", "member.joined/active", "member.removed/removed"}
		e.Eventually(func() bool { return len(rc.Received()) >= len(want) }, "the member's events")
		var got []string
		for _, r := range rc.Received() {
			var body struct {
				Data struct{ Object struct{ ID, Status string } }
			}
			_ = json.Unmarshal(r.Body, &body)
			if body.Data.Object.ID != inv.MemberID {
				t.Fatalf("%s about %s, want the member %s", r.Type, body.Data.Object.ID, inv.MemberID)
			}
			got = append(got, r.Type+"/"+body.Data.Object.Status)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("received %v, want %v", got, want)
		}
	}, apitest.WithWebhookReceivers())
}

// with is a copy of headers with more of them (name, value, …).
func with(headers map[string]string, more ...string) map[string]string {
	h := maps.Clone(headers)
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

// Contacts tell their changes. A contact of an organization without
// endpoints is written in one statement that checks so; once it has one,
// the create records contact.created with the contact: keyed or not, never
// twice for a replay, never for a rolled-back request.
func TestWebhooksTellContactChanges(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		key := apitest.Bearer(o.key)
		var before struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: key, Body: map[string]any{"name": "Before any endpoint"}}).
			Expect(201).JSON(&before)
		rc := apitest.Subscribe(t, e, o.owner, o.id, "contact.*")
		var ada, keyed struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: key, Body: map[string]any{"name": "Ada"}}).Expect(201).JSON(&ada)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: with(key, "X-Request-Id", "fail-contact-create"),
			Body: map[string]any{"name": "Rolled back"}, SkipSpec: true}).Expect(500)
		idem := with(key, "Idempotency-Key", "contact-"+models.NewID())
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: idem, Body: map[string]any{"name": "Keyed"}}).Expect(201).JSON(&keyed)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: idem, Body: map[string]any{"name": "Keyed"}}).Expect(201)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + ada.ID, Headers: key, Body: map[string]any{"company": "Engines"}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + ada.ID, Headers: key, Body: map[string]any{"company": "Engines"}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + before.ID, Headers: with(key, "X-Request-Id", "fail-contact-update"),
			Body: map[string]any{"company": "X"}, SkipSpec: true}).Expect(500)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/contacts/" + ada.ID, Headers: key}).Expect(204)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/contacts/" + before.ID, Headers: key}).Expect(204)
		want := []string{"contact.created/" + ada.ID, "contact.created/" + keyed.ID, "contact.updated/" + ada.ID,
			"contact.deleted/" + ada.ID, "contact.deleted/" + before.ID}
		if got := rc.Receive(e, len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		if prev := rc.Received()[2].Previous; len(prev) != 1 || prev["company"] != "" {
			t.Fatalf("contact.updated previous %v, want the company it had (\"\")", prev)
		}
	}, apitest.WithWebhookReceivers(), failOnHeader)
}

// Leads tell their changes, whether a request made them or the LeadIntake
// workflow's activities did: a web-form lead is created, scored and then
// assigned by the workflow; an API lead is changed, rescored, converted —
// with the contact and deal it becomes — and deleted.
func TestWebhooksTellLeadChanges(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		rc := apitest.Subscribe(t, e, o.owner, o.id, "lead.*", "contact.created", "deal.created")
		without := func(types []string, drop string) []string {
			var out []string
			for _, typ := range types {
				if typ != drop {
					out = append(out, typ)
				}
			}
			return out
		}
		// The anonymous sender is not told the lead's id; the receiver is.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook",
			Body: map[string]any{"orgId": o.id, "name": "Grace", "email": "grace@navy.example", "company": "Navy"}}).Expect(202)
		var lead struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "name": "Ada", "email": "ada@engines.example"}}).Expect(201).JSON(&lead)
		want := []string{"lead.created", "lead.scored", "lead.updated"}
		rc.Receive(e, 2*len(want))
		formLead := ""
		for _, r := range rc.Received() {
			if r.Object.ID != lead.ID {
				formLead = r.Object.ID
			}
		}
		for _, id := range []string{formLead, lead.ID} {
			e.Eventually(func() bool { return len(rc.Types(id)) >= len(want) }, "the lead's creation, scoring and assignment")
			if got := rc.Types(id); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("lead %s: received %v, want %v", id, got, want)
			}
		}
		for _, r := range rc.Received() {
			if r.Type == "lead.updated" {
				if prev, ok := r.Previous["assignedToId"]; !ok || prev != nil {
					t.Fatalf("the assignment's previous %v, want assignedToId null", r.Previous)
				}
			}
		}

		e.Do(apitest.Request{Method: "PUT", Path: "/crm/leads/" + lead.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "value": 250000, "company": "Analytical Engines"}}).Expect(200)
		var converted struct {
			Contact struct{ ID string }
			Deal    struct{ ID string }
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + lead.ID + "/convert", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id}}).Expect(201).JSON(&converted)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/leads/" + lead.ID + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(204)
		e.Eventually(func() bool { return slices.Contains(rc.Types(lead.ID), "lead.deleted") }, "the lead's deletion")
		got := rc.Types(lead.ID)
		if want := []string{"lead.created", "lead.updated", "lead.updated", "lead.converted", "lead.deleted"}; fmt.Sprint(without(got, "lead.scored")) != fmt.Sprint(want) {
			t.Fatalf("lead %s: received %v, want %v with lead.scored between", lead.ID, got, want)
		}
		if got[4] != "lead.scored" {
			t.Fatalf("a value of 250,000 did not rescore the lead: %v", got)
		}
		if fmt.Sprint(rc.Types(converted.Contact.ID)) != "[contact.created]" || fmt.Sprint(rc.Types(converted.Deal.ID)) != "[deal.created]" {
			t.Fatalf("the conversion's contact %v and deal %v", rc.Types(converted.Contact.ID), rc.Types(converted.Deal.ID))
		}
	}, apitest.WithWebhookReceivers())
}
