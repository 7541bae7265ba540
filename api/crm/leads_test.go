package crm_test

import (
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

type lead struct {
	ID, Email, Status, Phone string
	Score                    int
	Probability              float64
	ScoreFactors             []struct {
		Factor string
		Points int
	}
	AssignedToID *string
	ContactID    *string
	DealID       *string
}

type intakeAnswer struct {
	IntakeID, LeadID, Status, WorkflowID string
	Duplicate                            bool
}

type intakeStatus struct {
	ID, OrgID, Status, WorkflowID string
	Authenticated, Duplicate      bool
	LeadID                        *string
}

// processedIntake waits until the intake has been processed and returns
// its status as the organization's owner sees it.
func processedIntake(e *apitest.Env, o *crmOrg, intakeID string) intakeStatus {
	e.T.Helper()
	var st intakeStatus
	e.Eventually(func() bool {
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/intakes/" + intakeID + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200).JSON(&st)
		return st.Status == models.IntakeProcessed
	}, "intake %s to be processed", intakeID)
	return st
}

// crmOrg is an organization with an owner, two agents and a crm key.
type crmOrg struct {
	id             string
	owner          *apitest.User
	agentA, agentB *apitest.User
	memberA        string
	memberB        string
	key            string
}

func newCRMOrg(t *testing.T, e *apitest.Env) *crmOrg {
	o := &crmOrg{owner: e.SignUp(apitest.UniqueEmail("owner"))}
	o.id = e.CreateOrg(o.owner, "Pipeline Inc")
	e.SetPlan(o.id, models.PlanBusiness)
	o.agentA = e.AddMember(o.owner, o.id, models.RoleAgent)
	o.agentB = e.AddMember(o.owner, o.id, models.RoleAgent)
	o.key = e.CreateKey(o.owner, o.id, "crm")
	var page struct {
		Data []struct{ ID, Email string }
	}
	e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + o.id + "/members?status=active", Headers: o.owner.Auth()}).Expect(200).JSON(&page)
	for _, m := range page.Data {
		switch {
		case strings.EqualFold(m.Email, o.agentA.Email):
			o.memberA = m.ID
		case strings.EqualFold(m.Email, o.agentB.Email):
			o.memberB = m.ID
		}
	}
	if o.memberA == "" || o.memberB == "" {
		t.Fatalf("agents not found among the members: %+v", page.Data)
	}
	return o
}

// The public intake end to end: 202 at once, then the LeadIntake workflow
// on the real Temporal server scores, assigns round-robin and notifies.
func TestWebhookIntakeEndToEnd(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		form := map[string]any{"orgId": o.id, "name": "Grace", "email": "Grace@Hopper.io", "phone": "+1 415 555 2671",
			"company": "Navy", "value": 60000, "source": "referral"}
		var first intakeAnswer
		r := e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Body: form}).Expect(202)
		r.JSON(&first)
		if first.IntakeID == "" || first.Status != "accepted" || r.Header.Get("Location") != "/crm/leads/intakes/"+first.IntakeID {
			t.Fatalf("202: %s %v", r.Body, r.Header)
		}
		st := processedIntake(e, o, first.IntakeID)
		if st.LeadID == nil || st.Duplicate || st.Authenticated || st.WorkflowID != first.WorkflowID {
			t.Fatalf("intake status: %+v", st)
		}
		first.LeadID = *st.LeadID
		var got lead
		e.Eventually(func() bool {
			r := e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + first.LeadID + "?orgId=" + o.id, Headers: o.owner.Auth()})
			if r.Status != 200 {
				return false
			}
			r.JSON(&got)
			return got.AssignedToID != nil
		}, "the webhook lead to be created and assigned")
		if got.Score != 60 || got.Email != "grace@hopper.io" || *got.AssignedToID != o.memberA {
			t.Fatalf("lead: %+v", got)
		}
		// The assignee is notified (the step after assignment).
		var notes []models.Notification
		e.Eventually(func() bool {
			e.DB.Where("member_id = ? AND resource_id = ?", o.memberA, got.ID).Find(&notes)
			return len(notes) > 0
		}, "the assignee's notification")
		if len(notes) != 1 || notes[0].Type != "lead_assigned" {
			t.Fatalf("notifications: %+v", notes)
		}
		// The same form again is the same intake (deduplicated by its hash).
		var again intakeAnswer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Body: form}).Expect(202).JSON(&again)
		if again.IntakeID != first.IntakeID {
			t.Fatalf("resent form made a new intake: %+v vs %+v", again, first)
		}
		// So is the same form naming the organization in capitals: one
		// organization, one spelling (its limits, its dedupe key).
		form["orgId"] = strings.ToUpper(o.id)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Body: form}).Expect(202).JSON(&again)
		if again.IntakeID != first.IntakeID {
			t.Fatalf("the form with the orgId in capitals made a new intake: %+v vs %+v", again, first)
		}
		// Another submission with the same e-mail merges: duplicate, same lead.
		var dup intakeAnswer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": o.key},
			Body: map[string]any{"email": "grace@hopper.io", "source": "event"}}).Expect(202).JSON(&dup)
		if !dup.Duplicate || dup.LeadID != first.LeadID || !strings.HasPrefix(dup.WorkflowID, "lead-intake/"+o.id+"/key-") {
			t.Fatalf("duplicate: %+v", dup)
		}
		// The next new lead goes to the other agent.
		var second intakeAnswer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": o.key},
			Body: map[string]any{"name": "Alan", "email": "alan@turing.io"}}).Expect(202).JSON(&second)
		e.Eventually(func() bool {
			var l models.Lead
			return e.DB.Take(&l, "id = ?", second.LeadID).Error == nil && l.AssignedToID != nil && *l.AssignedToID == o.memberB
		}, "round-robin to the second agent")
		e.Eventually(func() bool {
			var n int64
			e.DB.Model(&models.LeadActivity{}).Where("lead_id = ? AND body LIKE ?", first.LeadID, "Duplicate%").Count(&n)
			return n == 1
		}, "the merge to be logged on the timeline")
		var leads int64
		e.DB.Model(&models.Lead{}).Where("org_id = ?", o.id).Count(&leads)
		if leads != 2 {
			t.Fatalf("%d leads, want 2", leads)
		}
	})
}

func TestWebhookCredentialsAndValidation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other")
		hdKey := e.CreateKey(o.owner, o.id, "helpdesk")
		// Organizations whose registration has not completed take no
		// submissions.
		unfinished := map[string]string{}
		for _, status := range []string{models.OrgProvisioning, models.OrgFailed} {
			org := models.Organization{ID: models.NewID(), Name: status, Status: status, Plan: models.PlanFree, Timezone: "UTC",
				Currency: "USD", CreatedBy: "u", CreatedAt: models.Now(), UpdatedAt: models.Now()}
			if err := e.DB.Create(&org).Error; err != nil {
				t.Fatal(err)
			}
			unfinished[status] = org.ID
		}
		lead := map[string]any{"name": "X", "email": "x@example.com"}
		with := func(extra map[string]any) map[string]any {
			m := map[string]any{}
			for k, v := range lead {
				m[k] = v
			}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
		cases := []struct {
			name    string
			headers map[string]string
			body    any
			status  int
			code    string
		}{
			{"no key, no orgId", nil, lead, 401, "unauthorized"},
			{"unknown org", nil, with(map[string]any{"orgId": models.NewID()}), 404, "not_found"},
			{"org still provisioning", nil, with(map[string]any{"orgId": unfinished[models.OrgProvisioning]}), 404, "not_found"},
			{"org whose registration failed", nil, with(map[string]any{"orgId": unfinished[models.OrgFailed]}), 404, "not_found"},
			{"helpdesk key", map[string]string{"X-Api-Key": hdKey}, lead, 403, "wrong_service_key"},
			{"unknown key", map[string]string{"X-Api-Key": "crm_nope"}, lead, 401, "invalid_api_key"},
			{"key of one org, orgId of another", map[string]string{"X-Api-Key": o.key}, with(map[string]any{"orgId": otherOrg}), 404, "not_found"},
			{"nothing to reach", nil, map[string]any{"orgId": o.id, "company": "Acme"}, 422, "validation_failed"},
			{"bad fields", nil, map[string]any{"orgId": o.id, "email": "nope", "value": -5, "extra": 1}, 422, "validation_failed"},
			{"malformed", nil, `{"orgId":`, 400, "malformed_json"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: tc.headers, Body: tc.body}).ExpectProblem(tc.status, tc.code)
			})
		}
		// The orgId route reveals nothing else: no Authorization means no other CRM route.
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads?orgId=" + o.id}).ExpectProblem(401, "unauthorized")
		var n int64
		e.DB.Model(&models.LeadIntake{}).Where("org_id IN ?", []string{o.id, otherOrg, unfinished[models.OrgProvisioning], unfinished[models.OrgFailed]}).Count(&n)
		if n != 0 {
			t.Fatalf("refused submissions left %d intakes", n)
		}
	})
}

// The intake must not lose a lead while Temporal is down: the caller gets
// 202, the start waits in the outbox, and the lead arrives once Temporal is
// back.
func TestWebhookIntakeSurvivesTemporalOutage(t *testing.T) {
	e := apitest.New(t, database.SQLite, apitest.WithTemporalDown())
	owner := e.SignUp(apitest.UniqueEmail("owner"))
	// With Temporal down the organization stays provisioning; activate it
	// by hand to accept leads (its registration is not what is tested).
	r := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: owner.Auth(), Body: map[string]string{"name": "Outage"}}).Expect(202)
	var org struct{ ID string }
	r.JSON(&org)
	e.DB.Model(&models.Organization{}).Where("id = ?", org.ID).Update("status", models.OrgActive)

	var ans intakeAnswer
	e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"Idempotency-Key": "form-42"},
		Body: map[string]any{"orgId": org.ID, "name": "Offline", "email": "offline@acme.io"}}).Expect(202).JSON(&ans)
	var pending models.WorkflowStart
	if err := e.DB.Take(&pending, "org_id = ? AND kind = ?", org.ID, "lead-intake").Error; err != nil ||
		pending.Status != models.StartPending || pending.WorkflowID != "lead-intake/"+org.ID+"/form/form-42" || ans.WorkflowID != pending.WorkflowID {
		t.Fatalf("outbox: %+v %v (202: %+v)", pending, err, ans)
	}
	var in models.LeadIntake
	if err := e.DB.Take(&in, "id = ?", ans.IntakeID).Error; err != nil {
		t.Fatal(err)
	}
	ans.LeadID = in.LeadID // the id the new lead gets
	var n int64
	e.DB.Model(&models.Lead{}).Where("id = ?", ans.LeadID).Count(&n)
	if n != 0 {
		t.Fatal("the lead exists before the workflow ran")
	}

	e.StartTemporal()
	e.Eventually(func() bool {
		var l models.Lead
		return e.DB.Take(&l, "id = ?", ans.LeadID).Error == nil && l.Score > 0
	}, "the lead to arrive after Temporal came back")
	var started models.WorkflowStart
	e.DB.Take(&started, "id = ?", pending.ID)
	if started.Status != models.StartStarted || started.Attempts < 2 {
		t.Fatalf("outbox after recovery: %+v", started)
	}
}

func TestLeadsCRUDScoringAndScoping(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		q := "?orgId=" + o.id
		var l lead
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(), Body: map[string]any{"orgId": o.id,
			"name": "Ada", "email": "ada@analytical.io", "company": "Engines", "value": 12000, "source": "website",
			"assignedToId": o.memberA}}).Expect(201).JSON(&l)
		if l.Score != 43 || l.Status != models.LeadNew || len(l.ScoreFactors) != 4 {
			t.Fatalf("created: %+v", l)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "email": "ADA@analytical.io"}}).ExpectProblem(409, "duplicate_lead")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "name": "Z", "assignedToId": models.NewID()}}).ExpectProblem(422, "validation_failed")

		// Activities raise the score and appear on the timeline.
		var act struct{ ID, Type string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/activities", Headers: o.agentA.Auth(),
			Body: map[string]any{"orgId": o.id, "type": "call", "body": "Intro call"}}).Expect(201).JSON(&act)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + l.ID + q, Headers: o.agentA.Auth()}).Expect(200).JSON(&l)
		if l.Score != 43+5+15 {
			t.Fatalf("score after an activity: %d", l.Score)
		}
		var timeline struct{ Data []struct{ Type string } }
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + l.ID + "/activities" + q, Headers: o.owner.Auth()}).Expect(200).JSON(&timeline)
			return len(timeline.Data) == 2 // the call, and the intake's system entry
		}, "the timeline to hold the call and the creation entry")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/activities", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "type": "tweet", "body": ""}}).ExpectProblem(422, "validation_failed")

		// AGENT scoping: B neither lists nor reads A's lead.
		var list struct{ Data []lead }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads" + q, Headers: o.agentB.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("agent B sees %d leads", len(list.Data))
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + l.ID + q, Headers: o.agentB.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads" + q + "&status=NEW&q=engine", Headers: o.agentA.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 {
			t.Fatalf("agent A's filtered list: %+v", list)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads" + q + "&status=MAYBE", Headers: o.owner.Auth()}).ExpectProblem(422, "validation_failed")

		// Lifecycle: NEW → QUALIFIED ok; → CONVERTED only through convert.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/leads/" + l.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "status": "QUALIFIED", "phone": "+44 20 7946 0958"}}).Expect(200).JSON(&l)
		if l.Status != models.LeadQualified || l.Score != 63+10 {
			t.Fatalf("update: %+v", l)
		}
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/leads/" + l.ID, Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "status": "CONVERTED"}}).ExpectProblem(409, "illegal_status_transition")

		// Messages: a deep link to the E.164 number, logged.
		var msg struct{ Channel, Phone, URL string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/send-message", Headers: o.agentA.Auth(),
			Body: map[string]any{"orgId": o.id, "channel": "whatsapp", "text": "Hi Ada & co"}}).Expect(200).JSON(&msg)
		if msg.URL != "https://wa.me/442079460958?text=Hi+Ada+%26+co" || msg.Phone != "+442079460958" {
			t.Fatalf("whatsapp link: %+v", msg)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/send-message", Headers: o.agentA.Auth(),
			Body: map[string]any{"orgId": o.id, "channel": "sms", "text": "Hi"}}).Expect(200).JSON(&msg)
		if msg.URL != "sms:+442079460958?body=Hi" {
			t.Fatalf("sms link: %+v", msg)
		}
		var nophone lead
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "name": "No Phone"}}).Expect(201).JSON(&nophone)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + nophone.ID + "/send-message", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "channel": "sms", "text": "Hi"}}).ExpectProblem(422, "no_valid_phone")

		// Convert: a contact and a deal, the lead CONVERTED; only once.
		var conv struct {
			Lead    lead
			Contact struct{ ID string }
			Deal    struct {
				ID, Stage, Title string
				Amount           float64
				AssignedToID     *string
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/convert" + q, Headers: o.owner.Auth()}).Expect(201).JSON(&conv)
		if conv.Lead.Status != models.LeadConverted || conv.Lead.Probability != 1 || conv.Deal.Amount != 12000 ||
			conv.Deal.Stage != models.StageQualified || *conv.Deal.AssignedToID != o.memberA || conv.Lead.ContactID == nil {
			t.Fatalf("convert: %+v", conv)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + l.ID + "/convert" + q, Headers: o.owner.Auth()}).ExpectProblem(409, "already_converted")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals/" + conv.Deal.ID + q, Headers: o.agentA.Auth()}).Expect(200)

		// Other organizations see nothing; deletes are scoped too.
		stranger := e.SignUp(apitest.UniqueEmail("stranger"))
		strangerOrg := e.CreateOrg(stranger, "Elsewhere")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + l.ID + "?orgId=" + strangerOrg, Headers: stranger.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/leads/" + l.ID + "?orgId=" + strangerOrg, Headers: stranger.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + l.ID + q, Headers: stranger.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/leads/" + nophone.ID + q, Headers: apitest.Bearer(o.key)}).Expect(204)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + nophone.ID + q, Headers: o.owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads" + q}).ExpectProblem(401, "unauthorized")
	})
}
