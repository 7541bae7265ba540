package api_test

import (
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// TestEveryRecordNamesItsActorInOneEncoding: whatever interface a member
// or an API key changes data through, the stored "who did this" is the same
// models.Actor — so that code comparing actors across interfaces (the lead
// intake skips notifying the member who created the lead) compares like
// with like. The CRM once stored a member as a bare id and the Helpdesk as
// "member:<id>"; the CRM's published form (a bare member id) is unchanged.
func TestEveryRecordNamesItsActorInOneEncoding(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("actor"))
		orgID := e.CreateOrg(owner, "Actors")
		e.SetPlan(orgID, models.PlanBusiness)
		var member models.Member
		if err := e.DB.Take(&member, "org_id = ? AND role = ?", orgID, models.RoleOwner).Error; err != nil {
			t.Fatal(err)
		}
		key := e.CreateKey(owner, orgID, "crm")
		hdKey := e.CreateKey(owner, orgID, "helpdesk")
		asMember, asHelpdeskMember := owner.Auth(), apitest.HelpdeskUser(owner.Token, orgID)
		post := func(path string, headers map[string]string, body map[string]any) string {
			var out struct{ ID string }
			e.Do(apitest.Request{Method: "POST", Path: path, Headers: headers, Body: body}).Expect(201).JSON(&out)
			return out.ID
		}
		contact := post("/crm/contacts", asMember, map[string]any{"orgId": orgID, "name": "Ada"})
		keyContact := post("/crm/contacts", apitest.Bearer(key), map[string]any{"name": "Grace"})
		deal := post("/crm/deals", asMember, map[string]any{"orgId": orgID, "title": "Engine", "amount": 10})
		lead := post("/crm/leads", asMember, map[string]any{"orgId": orgID, "name": "Charles", "email": "charles@engines.example"})
		post("/crm/leads/"+lead+"/activities", asMember, map[string]any{"orgId": orgID, "type": "call", "body": "Intro"})
		post("/crm/tasks", asMember, map[string]any{"orgId": orgID, "title": "Follow up"})
		post("/helpdesk/tickets", asHelpdeskMember, map[string]any{"subject": "Printer", "email": "bob@example.com"})
		post("/helpdesk/tickets", apitest.HelpdeskKey(hdKey, orgID), map[string]any{"subject": "Scanner", "email": "eve@example.com"})

		aiKey := e.CreateKey(owner, orgID, "ai")
		doc := post("/v1/ai/documents", apitest.Bearer(aiKey), map[string]any{"title": "Notes", "content": "Call Ada on Friday."})

		byMember := models.MemberActor(member.ID)
		var keyRow models.APIKey
		if err := e.DB.Take(&keyRow, "org_id = ? AND service = ?", orgID, "crm").Error; err != nil {
			t.Fatal(err)
		}
		expect := func(what string, got models.Actor, want models.Actor) {
			t.Helper()
			if got != want || !got.Valid() {
				t.Errorf("%s: stored actor %q, want %q", what, got, want)
			}
		}
		var c models.Contact
		e.DB.Take(&c, "id = ?", contact)
		expect("contact", c.CreatedBy, byMember)
		var kc models.Contact
		e.DB.Take(&kc, "id = ?", keyContact)
		expect("contact by key", kc.CreatedBy, models.KeyActor(keyRow.ID))
		var d models.Deal
		e.DB.Take(&d, "id = ?", deal)
		expect("deal", d.CreatedBy, byMember)
		var ch models.DealStageChange
		e.DB.Take(&ch, "deal_id = ?", deal)
		expect("deal stage change", ch.ChangedBy, byMember)
		var l models.Lead
		e.DB.Take(&l, "id = ?", lead)
		expect("lead", l.CreatedBy, byMember)
		var a models.LeadActivity
		e.DB.Take(&a, "lead_id = ? AND type = ?", lead, "call")
		expect("lead activity", a.CreatedBy, byMember)
		var task models.Task
		e.DB.Take(&task, "org_id = ?", orgID)
		expect("task", task.CreatedBy, byMember)
		var aiKeyRow models.APIKey
		if err := e.DB.Take(&aiKeyRow, "org_id = ? AND service = ?", orgID, "ai").Error; err != nil {
			t.Fatal(err)
		}
		var d2 models.AIDocument
		e.DB.Take(&d2, "id = ?", doc)
		expect("AI document", d2.CreatedBy, models.KeyActor(aiKeyRow.ID))
		var events []models.CustomerEvent
		e.DB.Where("org_id = ?", orgID).Find(&events)
		if len(events) == 0 {
			t.Fatal("no customer events recorded")
		}
		for _, ev := range events {
			if !ev.Actor.Valid() {
				t.Errorf("customer event %s: actor %q", ev.Type, ev.Actor)
			}
			if id, ok := ev.Actor.MemberID(); ok && id != member.ID {
				t.Errorf("customer event %s: member %q, want %q", ev.Type, id, member.ID)
			}
		}

		// The CRM still publishes a member as the bare member id.
		var timeline struct {
			Data []struct{ Type, CreatedBy string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + lead + "/activities?orgId=" + orgID, Headers: asMember}).Expect(200).JSON(&timeline)
		var shown bool
		for _, item := range timeline.Data {
			if item.Type == "call" {
				shown = item.CreatedBy == member.ID
			}
		}
		if !shown {
			t.Errorf("lead timeline %+v: the call's createdBy must be the member id %s", timeline.Data, member.ID)
		}
	})
}
