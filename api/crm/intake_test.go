package crm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/business-suite/suite/api/apitest"
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
