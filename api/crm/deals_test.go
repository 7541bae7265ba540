package crm_test

import (
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type deal struct {
	ID, Stage, LostReason, Currency string
	Amount, Probability             float64
	AssignedToID                    *string
	WonAt                           *string
	History                         []struct{ From, To string }
}

func TestDealsPipelineRules(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		q := "?orgId=" + o.id
		var d deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.owner.Auth(), Body: map[string]any{"orgId": o.id,
			"title": "Big one", "amount": 50000.456, "closeDate": "2026-12-31", "companyName": "Acme", "contactEmail": "CEO@acme.io",
			"assignedToId": o.memberA}}).Expect(201).JSON(&d)
		if d.Stage != models.StageNew || d.Amount != 50000.46 || d.Probability != 0.1 || d.Currency != "USD" || len(d.History) != 1 {
			t.Fatalf("created: %+v", d)
		}
		path := "/crm/deals/" + d.ID
		move := func(who *apitest.User, body map[string]any) *apitest.Response {
			body["orgId"] = o.id
			return e.Do(apitest.Request{Method: "PUT", Path: path, Headers: who.Auth(), Body: body})
		}
		move(o.agentA, map[string]any{"stage": "NEGOTIATION"}).Expect(200).JSON(&d)
		if d.Probability != 0.8 {
			t.Fatalf("negotiation: %+v", d)
		}
		move(o.agentA, map[string]any{"stage": "LOST"}).ExpectProblem(422, "validation_failed")
		move(o.agentA, map[string]any{"stage": "LOST", "lostReason": "Budget cut"}).Expect(200).JSON(&d)
		if d.Stage != models.StageLost || d.LostReason != "Budget cut" {
			t.Fatalf("lost: %+v", d)
		}
		move(o.agentA, map[string]any{"lostReason": ""}).ExpectProblem(422, "validation_failed")
		move(o.agentA, map[string]any{"stage": "PROPOSAL"}).ExpectProblem(403, "admin_required")
		move(o.owner, map[string]any{"stage": "WON"}).ExpectProblem(409, "illegal_stage_transition")
		move(o.owner, map[string]any{"stage": "PROPOSAL"}).Expect(200)
		move(o.agentA, map[string]any{"stage": "WON"}).Expect(200).JSON(&d)
		if d.WonAt == nil || d.LostReason != "" {
			t.Fatalf("won: %+v", d)
		}
		e.Do(apitest.Request{Method: "GET", Path: path + q, Headers: o.agentA.Auth()}).Expect(200).JSON(&d)
		want := []string{"→NEW", "NEW→NEGOTIATION", "NEGOTIATION→LOST", "LOST→PROPOSAL", "PROPOSAL→WON"}
		if len(d.History) != len(want) {
			t.Fatalf("history: %+v", d.History)
		}
		for i, h := range d.History {
			if h.From+"→"+h.To != want[i] {
				t.Fatalf("history %d: %+v", i, d.History)
			}
		}
		move(o.owner, map[string]any{"stage": "ARCHIVED"}).ExpectProblem(422, "validation_failed")
		move(o.owner, map[string]any{"assignedToId": models.NewID()}).ExpectProblem(422, "validation_failed")

		// AGENT scoping.
		var other deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: apitest.Bearer(o.key),
			Body: map[string]any{"title": "B's", "amount": 10, "assignedToId": o.memberB}}).Expect(201).JSON(&other)
		var list struct{ Data []deal }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals" + q, Headers: o.agentA.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != d.ID {
			t.Fatalf("agent A's deals: %+v", list)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals/" + other.ID + q, Headers: o.agentA.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/deals/" + other.ID, Headers: o.agentA.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "mine now"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals" + q + "&stage=WON", Headers: o.owner.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 {
			t.Fatalf("WON filter: %+v", list)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals" + q + "&assignedToId=" + o.memberB, Headers: o.owner.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != other.ID {
			t.Fatalf("assignee filter: %+v", list)
		}
		// An AGENT's own new deal is assigned to them.
		var mine deal
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.agentB.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "Mine"}}).Expect(201).JSON(&mine)
		if mine.AssignedToID == nil || *mine.AssignedToID != o.memberB {
			t.Fatalf("agent's deal: %+v", mine)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "title": " ", "amount": -1, "closeDate": "31/12/2026", "contactEmail": "x"}}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/deals/" + other.ID + q, Headers: o.agentA.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/deals/" + other.ID + q, Headers: o.owner.Auth()}).Expect(204)
		stranger := e.SignUp(apitest.UniqueEmail("s"))
		so := e.CreateOrg(stranger, "S")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals/" + d.ID + "?orgId=" + so, Headers: stranger.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals"}).ExpectProblem(401, "unauthorized")
	})
}
