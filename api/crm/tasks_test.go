package crm_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type taskOut struct {
	ID, OrgID, Title, Description, Priority, Status  string
	DueDate, AssignedToID, LeadID, DealID, ContactID *string
	CompletedAt                                      *time.Time
	CreatedAt, UpdatedAt                             time.Time
}

func strp(s string) *string { return &s }

func eqStr(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// insertLinkTargets stores a lead, a deal and a contact in orgID directly
// and returns their ids.
func insertLinkTargets(t *testing.T, e *apitest.Env, orgID string) (leadID, dealID, contactID string) {
	t.Helper()
	now := models.Now()
	lead := models.Lead{ID: models.NewID(), OrgID: orgID, Name: "Lead", Status: models.LeadNew, ScoreFactors: "[]", CreatedAt: now, UpdatedAt: now}
	deal := models.Deal{ID: models.NewID(), OrgID: orgID, Title: "Deal", Currency: "USD", Stage: models.StageNew,
		StageChangedAt: now, CreatedAt: now, UpdatedAt: now}
	contact := models.Contact{ID: models.NewID(), OrgID: orgID, Name: "Contact", Type: models.ContactPerson, CreatedAt: now, UpdatedAt: now}
	for _, row := range []any{&lead, &deal, &contact} {
		if err := e.DB.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	return lead.ID, deal.ID, contact.ID
}

func TestTasksCRUDAndScoping(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Tasks")
		e.SetPlan(orgID, models.PlanBusiness)
		agent1 := e.AddMember(owner, orgID, models.RoleAgent)
		agent2 := e.AddMember(owner, orgID, models.RoleAgent)
		ids := memberIDs(e, owner, orgID, agent1, agent2)
		a1, a2 := ids[0], ids[1]
		leadID, dealID, contactID := insertLinkTargets(t, e, orgID)
		q := "?orgId=" + orgID

		// The owner creates a task for agent1, linked to a lead, deal and contact.
		var t1 taskOut
		r := e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: owner.Auth(), Body: map[string]any{
			"orgId": orgID, "title": " Call Ada ", "description": "About the engine.", "dueDate": "2030-01-10",
			"assignedToId": a1, "leadId": leadID, "dealId": dealID, "contactId": contactID}}).Expect(201)
		r.JSON(&t1)
		if t1.OrgID != orgID || t1.Title != "Call Ada" || t1.Description != "About the engine." || !eqStr(t1.DueDate, strp("2030-01-10")) ||
			t1.Priority != "MEDIUM" || t1.Status != "OPEN" || !eqStr(t1.AssignedToID, &a1) || !eqStr(t1.LeadID, &leadID) ||
			!eqStr(t1.DealID, &dealID) || !eqStr(t1.ContactID, &contactID) || t1.CompletedAt != nil || !t1.CreatedAt.Equal(t1.UpdatedAt) {
			t.Fatalf("created %s", r.Body)
		}
		if r.Header.Get("Location") != "/crm/tasks/"+t1.ID {
			t.Fatalf("Location %q", r.Header.Get("Location"))
		}
		// Absent optional fields are null.
		m := r.Map()
		for _, k := range []string{"completedAt"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Fatalf("%s: %v", k, m[k])
			}
		}
		var t2 taskOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: owner.Auth(), Body: map[string]any{
			"orgId": orgID, "title": "Send proposal", "priority": "URGENT", "assignedToId": a2}}).Expect(201).JSON(&t2)
		m = e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: owner.Auth(), Body: map[string]any{
			"orgId": orgID, "title": "Nobody's", "status": "DONE"}}).Expect(201).Map()
		for _, k := range []string{"dueDate", "assignedToId", "leadId", "dealId", "contactId"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Fatalf("%s = %v, want null", k, m[k])
			}
		}
		if m["status"] != "DONE" || m["completedAt"] == nil {
			t.Fatalf("created DONE: %v", m)
		}
		t3 := m["id"].(string)

		// An AGENT's task without an assignee is theirs.
		var own taskOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: agent1.Auth(), Body: map[string]any{
			"orgId": orgID, "title": "Mine", "priority": "LOW"}}).Expect(201).JSON(&own)
		if !eqStr(own.AssignedToID, &a1) || own.Priority != "LOW" {
			t.Fatalf("agent's own task: %+v", own)
		}
		// An API key's task stays unassigned.
		key := e.CreateKey(owner, orgID, "crm")
		var byKey taskOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: apitest.Bearer(key),
			Body: map[string]any{"title": "From Zapier"}}).Expect(201).JSON(&byKey)
		if byKey.AssignedToID != nil || byKey.OrgID != orgID {
			t.Fatalf("key's task: %+v", byKey)
		}

		// Role scoping: AGENTs list only their own tasks, and get 404 on others.
		lists := []struct {
			name    string
			headers map[string]string
			want    []string
		}{
			{"owner", owner.Auth(), []string{byKey.ID, own.ID, t3, t2.ID, t1.ID}},
			{"key", apitest.Bearer(key), []string{byKey.ID, own.ID, t3, t2.ID, t1.ID}},
			{"agent1", agent1.Auth(), []string{own.ID, t1.ID}},
			{"agent2", agent2.Auth(), []string{t2.ID}},
		}
		for _, l := range lists {
			if got := pageAll(t, e, l.headers, "/crm/tasks"+q); !slices.Equal(got, l.want) {
				t.Fatalf("%s lists %v, want %v", l.name, got, l.want)
			}
		}
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t2.ID, Headers: agent1.Auth(),
			Body: map[string]any{"orgId": orgID, "status": "DONE"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + t2.ID + q, Headers: agent1.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + t3 + q, Headers: agent1.Auth()}).ExpectProblem(404, "not_found")

		// Done and reopened: completedAt follows; other fields stay.
		var done taskOut
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t1.ID, Headers: agent1.Auth(),
			Body: map[string]any{"orgId": orgID, "status": "DONE"}}).Expect(200).JSON(&done)
		if done.Status != "DONE" || done.CompletedAt == nil || done.CompletedAt.Before(t1.CreatedAt) || done.Title != t1.Title ||
			!eqStr(done.DueDate, t1.DueDate) || !eqStr(done.LeadID, &leadID) || !done.UpdatedAt.After(t1.UpdatedAt) {
			t.Fatalf("done: %+v", done)
		}
		var again taskOut
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t1.ID + q, Headers: agent1.Auth(),
			Body: map[string]any{"title": "Call Ada again", "status": "DONE"}}).Expect(200).JSON(&again)
		if again.CompletedAt == nil || !again.CompletedAt.Equal(*done.CompletedAt) || again.Title != "Call Ada again" {
			t.Fatalf("staying DONE keeps completedAt: %+v", again)
		}
		var reopened taskOut
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t1.ID + q, Headers: owner.Auth(),
			Body: map[string]any{"status": "OPEN", "priority": "HIGH", "dueDate": "", "leadId": "", "description": ""}}).Expect(200).JSON(&reopened)
		if reopened.Status != "OPEN" || reopened.CompletedAt != nil || reopened.Priority != "HIGH" || reopened.DueDate != nil ||
			reopened.LeadID != nil || reopened.Description != "" || !eqStr(reopened.DealID, &dealID) || !eqStr(reopened.AssignedToID, &a1) {
			t.Fatalf("reopened: %+v", reopened)
		}
		// Reassigned to agent2, the task leaves agent1's list.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t1.ID + q, Headers: owner.Auth(),
			Body: map[string]any{"assignedToId": a2}}).Expect(200)
		if got := pageAll(t, e, agent1.Auth(), "/crm/tasks"+q); !slices.Equal(got, []string{own.ID}) {
			t.Fatalf("agent1 after reassignment: %v", got)
		}
		if got := pageAll(t, e, agent2.Auth(), "/crm/tasks"+q); !slices.Equal(got, []string{t2.ID, t1.ID}) {
			t.Fatalf("agent2 after reassignment: %v", got)
		}

		// Deleting: the assignee may; then it is gone.
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + t1.ID + q, Headers: agent2.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + t1.ID + q, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/tasks/" + t1.ID + q, Headers: owner.Auth(),
			Body: map[string]any{"title": "Ghost"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/" + t3 + q, Headers: owner.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/tasks/not-an-id" + q, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		if got := pageAll(t, e, owner.Auth(), "/crm/tasks"+q); !slices.Equal(got, []string{byKey.ID, own.ID, t2.ID}) {
			t.Fatalf("after deletes: %v", got)
		}
	})
}

func TestTasksRefusals(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Mine")
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Theirs")
		otherMember := memberIDs(e, other, otherOrg, other)[0]
		theirLead, theirDeal, theirContact := insertLinkTargets(t, e, otherOrg)
		q := "?orgId=" + orgID

		var mine, theirs taskOut
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: owner.Auth(),
			Body: map[string]any{"orgId": orgID, "title": "Mine"}}).Expect(201).JSON(&mine)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: other.Auth(),
			Body: map[string]any{"orgId": otherOrg, "title": "Theirs"}}).Expect(201).JSON(&theirs)

		for _, rt := range []struct{ method, path string }{
			{"GET", "/crm/tasks" + q}, {"POST", "/crm/tasks"}, {"PUT", "/crm/tasks/" + mine.ID + q}, {"DELETE", "/crm/tasks/" + mine.ID + q},
		} {
			var body any
			if rt.method != "GET" && rt.method != "DELETE" {
				body = map[string]any{"orgId": orgID, "title": "X"}
			}
			e.Do(apitest.Request{Method: rt.method, Path: rt.path, Body: body}).ExpectProblem(401, "unauthorized")
		}

		notFound := []struct {
			name, method, path string
			body               any
		}{
			{"update theirs", "PUT", "/crm/tasks/" + theirs.ID, map[string]any{"orgId": orgID, "title": "Hijacked"}},
			{"delete theirs", "DELETE", "/crm/tasks/" + theirs.ID + q, nil},
			{"list their org", "GET", "/crm/tasks?orgId=" + otherOrg, nil},
			{"create in their org", "POST", "/crm/tasks", map[string]any{"orgId": otherOrg, "title": "Intruder"}},
			{"update theirs in their org", "PUT", "/crm/tasks/" + theirs.ID, map[string]any{"orgId": otherOrg, "title": "Hijacked"}},
			{"delete theirs in their org", "DELETE", "/crm/tasks/" + theirs.ID + "?orgId=" + otherOrg, nil},
		}
		for _, tc := range notFound {
			t.Run(tc.name, func(t *testing.T) {
				e.Do(apitest.Request{Method: tc.method, Path: tc.path, Headers: owner.Auth(), Body: tc.body}).ExpectProblem(404, "not_found")
			})
		}
		var theirList crmPage[taskOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks?orgId=" + otherOrg, Headers: other.Auth()}).Expect(200).JSON(&theirList)
		if len(theirList.Data) != 1 || theirList.Data[0] != theirs {
			t.Fatalf("another organization's tasks changed: %+v", theirList.Data)
		}

		invalid := []struct {
			name, method, path string
			body               any
			fields             []string
		}{
			{"unknown field", "POST", "/crm/tasks", map[string]any{"orgId": orgID, "title": "X", "assignee": "me", "status": "NOPE"}, []string{"assignee", "status"}},
			{"every rule and reference", "POST", "/crm/tasks", map[string]any{"orgId": orgID, "title": " ",
				"description": strings.Repeat("d", 10001), "dueDate": "31/01/2030", "priority": "SOON", "status": "CLOSED",
				"assignedToId": otherMember, "leadId": theirLead, "dealId": "not-an-id", "contactId": theirContact},
				[]string{"title", "description", "dueDate", "priority", "status", "assignedToId", "leadId", "dealId", "contactId"}},
			{"references only", "POST", "/crm/tasks", map[string]any{"orgId": orgID, "title": "X",
				"assignedToId": models.NewID(), "dealId": theirDeal}, []string{"assignedToId", "dealId"}},
			{"title too long, impossible date", "POST", "/crm/tasks", map[string]any{"orgId": orgID,
				"title": strings.Repeat("t", 301), "dueDate": "2030-02-30"}, []string{"title", "dueDate"}},
			{"title missing", "POST", "/crm/tasks", map[string]any{"orgId": orgID}, []string{"title"}},
			{"wrong types", "POST", "/crm/tasks", map[string]any{"orgId": orgID, "title": "X", "priority": 3, "assignedToId": 1}, []string{"priority", "assignedToId"}},
			{"bad orgId", "POST", "/crm/tasks", map[string]any{"orgId": "acme", "title": ""}, []string{"orgId", "title"}},
			{"update rules and references", "PUT", "/crm/tasks/" + mine.ID, map[string]any{"orgId": orgID, "title": "",
				"status": "done", "dueDate": "tomorrow", "leadId": theirLead, "assignedToId": otherMember},
				[]string{"title", "status", "dueDate", "leadId", "assignedToId"}},
			{"update unknown field", "PUT", "/crm/tasks/" + mine.ID, map[string]any{"orgId": orgID, "completedAt": "2030-01-01T00:00:00Z"}, []string{"completedAt"}},
		}
		for _, tc := range invalid {
			t.Run(tc.name, func(t *testing.T) {
				p := e.Do(apitest.Request{Method: tc.method, Path: tc.path, Headers: owner.Auth(), Body: tc.body}).ExpectProblem(422, "validation_failed")
				expectFields(t, p, tc.fields...)
			})
		}
		var page crmPage[taskOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks" + q, Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0] != mine {
			t.Fatalf("refused requests changed the tasks: %+v", page.Data)
		}
	})
}

func TestTasksFiltersAndPagination(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Filters")
		e.SetPlan(orgID, models.PlanBusiness)
		agent1 := e.AddMember(owner, orgID, models.RoleAgent)
		agent2 := e.AddMember(owner, orgID, models.RoleAgent)
		ids := memberIDs(e, owner, orgID, agent1, agent2)
		a1, a2 := ids[0], ids[1]
		q := "?orgId=" + orgID

		seed := []struct {
			title string
			body  map[string]any
		}{
			{"a1 early", map[string]any{"assignedToId": a1, "dueDate": "2030-01-05"}},
			{"a1 late", map[string]any{"assignedToId": a1, "dueDate": "2030-03-01"}},
			{"a1 undated", map[string]any{"assignedToId": a1}},
			{"a2 early done", map[string]any{"assignedToId": a2, "dueDate": "2030-01-01", "status": "DONE"}},
			{"a2 boundary", map[string]any{"assignedToId": a2, "dueDate": "2030-02-01"}},
			{"nobody's done", map[string]any{"status": "DONE"}},
		}
		byTitle := map[string]string{}
		var created []string
		for _, s := range seed {
			s.body["orgId"], s.body["title"] = orgID, s.title
			var tk taskOut
			e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: owner.Auth(), Body: s.body}).Expect(201).JSON(&tk)
			byTitle[s.title] = tk.ID
			created = append(created, tk.ID)
		}
		titles := func(ts ...string) []string {
			var out []string
			for _, s := range ts {
				out = append(out, byTitle[s])
			}
			return out
		}
		cases := []struct {
			name, caller, query string
			want                []string // newest first
		}{
			{"all", "owner", "", reversed(created)},
			{"open", "owner", "&status=OPEN", titles("a2 boundary", "a1 undated", "a1 late", "a1 early")},
			{"done", "owner", "&status=DONE", titles("nobody's done", "a2 early done")},
			{"assigned to a2", "owner", "&assignedToId=" + a2, titles("a2 boundary", "a2 early done")},
			{"assigned to nobody known", "owner", "&assignedToId=" + models.NewID(), nil},
			{"due before, exclusive, undated left out", "owner", "&dueBefore=2030-02-01", titles("a2 early done", "a1 early")},
			{"due before and open and a1", "owner", "&dueBefore=2030-12-31&status=OPEN&assignedToId=" + a1, titles("a1 late", "a1 early")},
			{"agent scope applies before filters", "agent1", "&assignedToId=" + a2, nil},
			{"agent with filter", "agent1", "&dueBefore=2030-02-02", titles("a1 early")},
			{"agent2 open", "agent2", "&status=OPEN", titles("a2 boundary")},
		}
		callers := map[string]*apitest.User{"owner": owner, "agent1": agent1, "agent2": agent2}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if got := pageAll(t, e, callers[tc.caller].Auth(), "/crm/tasks"+q+tc.query); !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
		var page crmPage[taskOut]
		e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks" + q + "&limit=4", Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 4 || !page.HasMore || page.NextCursor == nil || page.Data[0].ID != created[5] || page.Data[3].ID != created[2] {
			t.Fatalf("first page of 4: %+v", page)
		}

		p := e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks" + q + "&status=CLOSED&assignedToId=nobody&dueBefore=2030-13-01",
			Headers: owner.Auth()}).ExpectProblem(422, "validation_failed")
		expectFields(t, p, "status", "assignedToId", "dueBefore")
		p = e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks" + q + "&dueBefore=01/02/2030", Headers: owner.Auth()}).ExpectProblem(422, "validation_failed")
		expectFields(t, p, "dueBefore")
	})
}
