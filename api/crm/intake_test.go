package crm_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// The anonymous (orgId-only) intake only creates leads. Posting a known
// e-mail answers exactly like posting a new one — no lead id, no
// duplicate flag — and the existing lead keeps every field; the
// submission is recorded on its timeline. The intake's status (its
// Location) is for the organization's CRM credentials only. The workflow
// id is derived from the Idempotency-Key the sender chose.
func TestAnonymousIntakeRevealsAndChangesNothing(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		var victim lead
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(), Body: map[string]any{"orgId": o.id,
			"name": "Victoria", "email": "cfo@victim-corp.example", "value": 5000, "source": "referral", "assignedToId": o.memberA}}).
			Expect(201).JSON(&victim)
		processedLead := func(id string) models.Lead {
			t.Helper()
			var l models.Lead
			if err := e.DB.Take(&l, "id = ?", id).Error; err != nil {
				t.Fatal(err)
			}
			return l
		}
		// Creating it ran its own intake (timeline entry, notification):
		// wait for it, so that nothing else touches the lead below.
		e.Eventually(func() bool {
			var n int64
			e.DB.Model(&models.LeadIntake{}).Where("lead_id = ? AND status = ?", victim.ID, models.IntakeProcessed).Count(&n)
			return n == 1
		}, "the created lead's own intake")
		before := processedLead(victim.ID)

		post := func(email, key string) (intakeAnswer, map[string]any, string) {
			t.Helper()
			r := e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"Idempotency-Key": key},
				Body: map[string]any{"orgId": o.id, "name": "Mallory", "email": email, "phone": "+1 415 555 2671", "company": "Evil",
					"value": 999999999999, "source": "attack"}}).Expect(202)
			var a intakeAnswer
			r.JSON(&a)
			return a, r.Map(), r.Header.Get("Location")
		}
		known, knownBody, knownLoc := post("CFO@victim-corp.example", "probe-1")
		fresh, freshBody, _ := post("nobody@new-corp.example", "probe-2")
		for _, body := range []map[string]any{knownBody, freshBody} {
			keys := make([]string, 0, len(body))
			for k := range body {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if strings.Join(keys, ",") != "intakeId,status,workflowId" {
				t.Fatalf("the anonymous 202 says more than the intake: %v", body)
			}
		}
		if known.WorkflowID != "lead-intake/"+o.id+"/form/probe-1" || fresh.WorkflowID != "lead-intake/"+o.id+"/form/probe-2" ||
			knownLoc != "/crm/leads/intakes/"+known.IntakeID {
			t.Fatalf("workflow ids %q %q, Location %q", known.WorkflowID, fresh.WorkflowID, knownLoc)
		}
		st := processedIntake(e, o, known.IntakeID)
		// The workflow ran in Temporal under that id.
		if _, err := e.Temporal.DescribeWorkflowExecution(t.Context(), known.WorkflowID, ""); err != nil {
			t.Fatalf("workflow %s: %v", known.WorkflowID, err)
		}
		if st.LeadID == nil || *st.LeadID != victim.ID || !st.Duplicate || st.Authenticated {
			t.Fatalf("intake status: %+v", st)
		}
		after := processedLead(victim.ID)
		if after.Name != before.Name || after.Value != before.Value || after.Source != before.Source || after.Phone != before.Phone ||
			after.Company != before.Company || after.Score != before.Score || *after.AssignedToID != *before.AssignedToID ||
			!after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("the anonymous intake changed the lead:\n%+v\nwas\n%+v", after, before)
		}
		var timeline struct{ Data []struct{ Type, Body string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + victim.ID + "/activities?orgId=" + o.id, Headers: o.owner.Auth()}).
			Expect(200).JSON(&timeline)
		recorded := false
		for _, a := range timeline.Data {
			recorded = recorded || strings.Contains(a.Body, "unauthenticated sender") && strings.Contains(a.Body, "999999999999")
		}
		if !recorded {
			t.Fatalf("the submission is not on the timeline: %+v", timeline.Data)
		}
		// The new e-mail became a lead.
		if st := processedIntake(e, o, fresh.IntakeID); st.LeadID == nil || st.Duplicate {
			t.Fatalf("new lead's intake: %+v", st)
		}

		// Only the organization's CRM credentials see the intake's status.
		status := "/crm/leads/intakes/" + known.IntakeID
		e.Do(apitest.Request{Method: "GET", Path: status + "?orgId=" + o.id}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: status, Headers: apitest.Bearer(o.key)}).Expect(200)
		e.Do(apitest.Request{Method: "GET", Path: status + "?orgId=" + o.id, Headers: o.agentA.Auth()}).ExpectProblem(403, "admin_required")
		outsider := e.SignUp(apitest.UniqueEmail("outsider"))
		otherOrg := e.CreateOrg(outsider, "Outsider")
		e.Do(apitest.Request{Method: "GET", Path: status + "?orgId=" + otherOrg, Headers: outsider.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: status + "?orgId=" + o.id, Headers: outsider.Auth()}).ExpectProblem(404, "not_found")

		// With the organization's crm_ key a duplicate does merge (and says so).
		var merged intakeAnswer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": o.key, "Idempotency-Key": "k-1"},
			Body: map[string]any{"email": "cfo@victim-corp.example", "phone": "+1 415 555 2671"}}).Expect(202).JSON(&merged)
		if !merged.Duplicate || merged.LeadID != victim.ID {
			t.Fatalf("keyed duplicate: %+v", merged)
		}
		var keyRow models.APIKey
		e.DB.Take(&keyRow, "hash = ?", models.HashKey(o.key))
		if merged.WorkflowID != "lead-intake/"+o.id+"/key-"+keyRow.ID+"/k-1" {
			t.Fatalf("keyed workflow id %q", merged.WorkflowID)
		}
		if st := processedIntake(e, o, merged.IntakeID); !st.Authenticated || !st.Duplicate {
			t.Fatalf("keyed intake: %+v", st)
		}
		if l := processedLead(victim.ID); l.Phone != "+1 415 555 2671" {
			t.Fatalf("the keyed duplicate did not merge: %+v", l)
		}
	})
}

// TestIntakeLimitsKeysPerKeyAndFormsPerIP: an integration posting with the
// organization's crm_ key from one server is limited per key (it used to
// share the anonymous forms' 30 a minute per IP), a second key has its own
// budget, forms from the same IP are not affected, and wrong keys are
// limited per IP. The key's budget is counted in blocks of rate/100 (2).
func TestIntakeLimitsKeysPerKeyAndFormsPerIP(t *testing.T) {
	const rate = 200
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		post := func(headers map[string]string, body map[string]any) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: headers, Body: body})
		}
		lead := func(i int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("Lead %d", i), "email": fmt.Sprintf("lead%d@acme-%s.example", i, e.Dialect)}
		}
		withKey := map[string]string{"X-Api-Key": o.key}
		// The 325 requests below take under 3 s here (each subtest, its Env
		// included, 1.5–2.8 s); waiting for a fresh minute costs up to need,
		// so need leaves them a margin of four and no more.
		inOneWindow(t, 12*time.Second)
		for i := range rate {
			post(withKey, lead(i)).Expect(202)
		}
		limited := post(withKey, lead(rate)).Expect(429)
		if limited.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		other := e.CreateKey(o.owner, o.id, "crm")
		post(map[string]string{"X-Api-Key": other}, lead(rate+1)).Expect(202)
		form := lead(rate + 2)
		form["orgId"] = o.id
		post(nil, form).Expect(202)

		// Wrong keys from this IP count against its budget of 120 a minute
		// (a valid key's refusals, such as the 429 above, are no guesses
		// and do not); past it, the IP is refused before its key is looked
		// up — even a real key this process has not verified lately.
		wrong := map[string]string{"X-Api-Key": "crm_" + strings.Repeat("x", 32)}
		for range 120 {
			post(wrong, lead(0)).Expect(401)
		}
		post(wrong, lead(0)).Expect(429)
		post(map[string]string{"X-Api-Key": e.CreateKey(o.owner, o.id, "crm")}, lead(rate+3)).Expect(429)
		// A key it has verified lately is not a guess and still gets in.
		post(map[string]string{"X-Api-Key": other}, lead(rate+4)).Expect(202)
	}, apitest.WithWebhookKeyRate(rate))
}

// TestIntakeRunsItsDatabaseStepsAsLocalActivities: a new LeadIntake runs
// its database steps inside its workflow task (markers in the history), not
// as activities queued through the Temporal server; only the push to the
// assignee's browsers is a regular activity.
func TestIntakeRunsItsDatabaseStepsAsLocalActivities(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		var a intakeAnswer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": o.key},
			Body: map[string]any{"name": "Local", "email": "local@steps-" + string(e.Dialect) + ".example"}}).Expect(202).JSON(&a)
		processedIntake(e, o, a.IntakeID)
		run := e.Temporal.GetWorkflow(t.Context(), a.WorkflowID, "")
		if err := run.Get(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		markers, scheduled := 0, []string{}
		it := e.Temporal.GetWorkflowHistory(t.Context(), a.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				markers++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				scheduled = append(scheduled, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
			}
		}
		// A version marker, then upsert, log, assign, notify and complete.
		if markers < 6 || slices.ContainsFunc(scheduled, func(name string) bool { return name != "Deliver" }) {
			t.Fatalf("%d markers, activities scheduled through the server: %v", markers, scheduled)
		}
	})
}

// The same submission sent again within 24 hours is the first intake; after
// that it is a new one, with a workflow of its own, and a resend within the
// new window is that one.
func TestWebhookResendWindow(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		send := func() intakeAnswer {
			var a intakeAnswer
			e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook",
				Body: map[string]any{"orgId": o.id, "name": "Ada", "email": "ada@window-" + string(e.Dialect) + ".example"}}).Expect(202).JSON(&a)
			return a
		}
		first := send()
		processedIntake(e, o, first.IntakeID)
		if again := send(); again != first {
			t.Fatalf("resend within the window: %+v, first %+v", again, first)
		}
		// A day and an hour later:
		if err := e.DB.Model(&models.LeadIntake{}).Where("id = ?", first.IntakeID).
			Update("created_at", models.Now().Add(-25*time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		later := send()
		// Its key is the first's with the start of the 24-hour period it
		// falls in, so a resend within that period finds it whatever the
		// second.
		var firstIntake models.LeadIntake
		if err := e.DB.Take(&firstIntake, "id = ?", first.IntakeID).Error; err != nil {
			t.Fatal(err)
		}
		period := "@" + strconv.FormatInt(firstIntake.CreatedAt.Add(24*time.Hour).Unix(), 10)
		if later.IntakeID == first.IntakeID || later.WorkflowID != first.WorkflowID+period {
			t.Fatalf("resend after the window: %+v, first %+v (want the period %s)", later, first, period)
		}
		processedIntake(e, o, later.IntakeID)
		if again := send(); again != later {
			t.Fatalf("resend within the new window: %+v, want %+v", again, later)
		}
		var intakes int64
		e.DB.Model(&models.LeadIntake{}).Where("org_id = ?", o.id).Count(&intakes)
		if intakes != 2 {
			t.Fatalf("%d intakes, want 2", intakes)
		}
	})
}

// A key a client sends is never taken for one the suite makes: anonymous
// forms share a sender, and one that knew another's key and when it was
// first sent could record its reuse past the window first; the honest
// reuse is still an intake of its own.
func TestWebhookKeysCannotPoseAsTheSuitesOwn(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		send := func(key, email string) intakeAnswer {
			var a intakeAnswer
			e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"Idempotency-Key": key},
				Body: map[string]any{"orgId": o.id, "name": "Ada", "email": email}}).Expect(202).JSON(&a)
			return a
		}
		first := send("order-7", "ada@honest.example")
		processedIntake(e, o, first.IntakeID)
		// A day and an hour later (the stored answer to the key has expired):
		if err := e.DB.Model(&models.LeadIntake{}).Where("id = ?", first.IntakeID).
			Update("created_at", models.Now().Add(-25*time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		if err := e.DB.Model(&models.IdempotencyKey{}).Where("key = ?", "order-7").
			Update("expires_at", models.Now().Add(-time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		var firstIntake models.LeadIntake
		if err := e.DB.Take(&firstIntake, "id = ?", first.IntakeID).Error; err != nil {
			t.Fatal(err)
		}
		period := strconv.FormatInt(firstIntake.CreatedAt.Add(24*time.Hour).Unix(), 10)
		planted := send("order-7@"+period, "mallory@planted.example")
		honest := send("order-7", "ada@honest.example")
		if honest.IntakeID == planted.IntakeID || honest.WorkflowID != first.WorkflowID+"@"+period ||
			planted.WorkflowID != "lead-intake/"+o.id+"/form/order-7%40"+period {
			t.Fatalf("the honest reuse %+v, the planted key %+v", honest, planted)
		}
		var got models.LeadIntake
		if err := e.DB.Take(&got, "id = ?", honest.IntakeID).Error; err != nil || !strings.Contains(got.Payload, "ada@honest.example") {
			t.Fatalf("the honest reuse recorded %q (%v)", got.Payload, err)
		}
		if a := send("body-0123", "grace@navy.example"); a.WorkflowID != "lead-intake/"+o.id+"/form/%62ody-0123" {
			t.Fatalf("a key shaped as a keyless submission's: %s", a.WorkflowID)
		}
		if a := send("100%", "alan@example.org"); a.WorkflowID != "lead-intake/"+o.id+"/form/100%25" {
			t.Fatalf("a key with a %%: %s", a.WorkflowID)
		}
	})
}

// inOneWindow waits, when less than need is left of the current minute,
// for the next one to begin. The limits count in fixed one-minute windows
// and estimate the sliding minute from the current count and the previous
// one's, weighted by how much of it is still inside: requests counted on
// both sides of a window's end let a few more through than the limit, so a
// test that counts to the limit sends every request in one window.
func inOneWindow(t *testing.T, need time.Duration) {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < need {
		time.Sleep(left + 50*time.Millisecond)
	}
}
