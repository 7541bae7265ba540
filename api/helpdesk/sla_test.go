package helpdesk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// slaTicket is a ticket with its SLA, as the API shows it.
type slaTicket struct {
	ID, Priority string
	AgentID      *string
	SLA          *struct {
		PolicyVersion      int
		FirstResponseDueAt *time.Time
		ResolutionDueAt    *time.Time
		FirstRespondedAt   *time.Time
		Paused             bool
		Breaches           []struct {
			Kind string
			At   time.Time
		}
	}
}

// The policy is the workspace admins': agents are refused, a bad value is
// a 422 naming its field and changes nothing, each PUT is a new version.
func TestSLAPolicyRules(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		path := "/helpdesk/sla-policy"
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).ExpectProblem(404, "not_found")
		good := map[string]any{"businessHours": map[string]any{"timeZone": "Europe/Berlin", "week": map[string]any{"mon": [][]string{{"09:00", "17:00"}}}},
			"targets": map[string]any{"urgent": map[string]any{"firstResponse": 60}}, "warnBefore": 10}
		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.asAgent, Body: good}).ExpectProblem(403, "admin_required")
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"businessHours": map[string]any{"timeZone": "Europe/Atlantis", "week": map[string]any{"mon": [][]string{{"09:00", "17:00"}}}},
				"targets": map[string]any{}}, "businessHours.timeZone"},
			{map[string]any{"businessHours": "9to5", "targets": map[string]any{}}, "businessHours"},
			{map[string]any{"businessHours": "24x7", "targets": map[string]any{"urgent": map[string]any{"resolution": -5}}}, "targets.urgent.resolution"},
			{map[string]any{"businessHours": "24x7", "targets": map[string]any{}, "escalation": map[string]any{"reassignTo": models.NewID()}}, "escalation.reassignTo"},
			{map[string]any{"businessHours": "24x7", "targets": map[string]any{}, "holidays": []string{"Christmas"}}, "holidays[0]"},
		} {
			m := e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.headers, Body: tc.body}).ExpectProblem(422, "validation_failed")
			if !strings.Contains(fmt.Sprint(m["errors"]), "field:"+tc.field+" ") {
				t.Errorf("%v: errors %v, want one for %s", tc.body, m["errors"], tc.field)
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: path + "/apply", Headers: d.headers}).ExpectProblem(404, "not_found")
		open := d.create(e, map[string]any{"subject": "Opened before", "email": apitest.UniqueEmail("early"), "priority": "urgent"})

		var v struct{ Version int }
		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.headers, Body: good}).Expect(200).JSON(&v)
		if v.Version != 1 {
			t.Fatalf("first version %d", v.Version)
		}
		good["businessHours"] = "24x7"
		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.headers, Body: good}).Expect(200).JSON(&v)
		var got struct {
			Version       int
			BusinessHours any
		}
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200).JSON(&got)
		if v.Version != 2 || got.Version != 2 || got.BusinessHours != "24x7" {
			t.Fatalf("after the second PUT: %d, %+v", v.Version, got)
		}
		// Another workspace has none.
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.outsider}).ExpectProblem(404, "not_found")
		// Applied, the open ticket opened before any policy runs under it.
		e.Do(apitest.Request{Method: "POST", Path: path + "/apply", Headers: d.asAgent}).ExpectProblem(403, "admin_required")
		var applied struct{ Version, Tickets int }
		e.Do(apitest.Request{Method: "POST", Path: path + "/apply", Headers: d.headers}).Expect(200).JSON(&applied)
		var tk slaTicket
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + open.ID, Headers: d.headers}).Expect(200).JSON(&tk)
		if applied.Version != 2 || applied.Tickets != 1 || tk.SLA == nil || tk.SLA.PolicyVersion != 2 || tk.SLA.FirstResponseDueAt == nil {
			t.Fatalf("applied %+v: the ticket's SLA %+v", applied, tk.SLA)
		}
	})
}

// The durable path, on the real Temporal server: a ticket opened under a
// 24x7 policy shows its due times; its first response falls due, the
// TicketSLA workflow records the breach once, tells the webhooks and the
// assignee and admins, and escalates (reassigns); the list finds it
// breached. Then the agent's reply records the first response; once the
// ticket is solved and closed, the workflow ends.
func TestSLABreachIsRecordedToldAndEscalated(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		rc := apitest.Subscribe(t, e, d.owner, d.id, "ticket.sla_breached")
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/sla-policy", Headers: d.headers, Body: map[string]any{
			"businessHours": "24x7", "targets": map[string]any{"urgent": map[string]any{"firstResponse": 1, "resolution": 600}},
			"escalation": map[string]any{"reassignTo": d.agentID}}}).Expect(200)
		var tk slaTicket
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers,
			Body: map[string]any{"subject": "Site down", "email": apitest.UniqueEmail("cust"), "priority": "urgent"}}).Expect(201).JSON(&tk)
		if tk.SLA == nil || tk.SLA.FirstResponseDueAt == nil || tk.SLA.ResolutionDueAt == nil || tk.SLA.PolicyVersion != 1 ||
			tk.SLA.ResolutionDueAt.Sub(*tk.SLA.FirstResponseDueAt) != 599*time.Minute {
			t.Fatalf("the opened ticket's SLA: %+v", tk.SLA)
		}
		// As if it had been opened 58 seconds earlier: the clock's start is
		// moved back, and a change of the ticket plans it again.
		backdateFirstResponse(t, e, tk.ID, 58*time.Second)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"tags": []string{"outage"}}}).Expect(200)

		e.Eventually(func() bool { return len(rc.Received()) == 1 }, "the breach told to the webhook")
		var got slaTicket
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers}).Expect(200).JSON(&got)
		if len(got.SLA.Breaches) != 1 || got.SLA.Breaches[0].Kind != models.SLAFirstResponse || got.AgentID == nil || *got.AgentID != d.agentID {
			t.Fatalf("after the breach: agent %v, SLA %+v", got.AgentID, got.SLA)
		}
		var delivered struct {
			Data struct{ Object slaTicket }
		}
		if err := json.Unmarshal(rc.Received()[0].Body, &delivered); err != nil || len(delivered.Data.Object.SLA.Breaches) != 1 {
			t.Fatalf("the event %s: %v", rc.Received()[0].Body, err)
		}
		for who, headers := range map[string]map[string]string{"the assignee": d.asAgent, "the owner": apitest.HelpdeskUser(d.owner.Token, d.id)} {
			var notes struct {
				Data []struct{ Type, ResourceID string }
			}
			e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications", Headers: headers}).Expect(200).JSON(&notes)
			n := 0
			for _, x := range notes.Data {
				if x.Type == "sla_breached" && x.ResourceID == tk.ID {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s has %d sla_breached notifications: %+v", who, n, notes.Data)
			}
		}
		var page struct{ Data []slaTicket }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?sla=breached", Headers: d.headers}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != tk.ID {
			t.Fatalf("breached tickets %+v", page.Data)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?sla=late", Headers: d.headers}).ExpectProblem(422, "validation_failed")
		var attained struct {
			Overall struct {
				Tickets, Breached int64
				Attainment        *float64
			}
			ByPriority map[string]struct{ Tickets, Breached int64 }
			ByAgent    map[string]struct{ Tickets, Breached int64 }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/sla", Headers: d.headers}).Expect(200).JSON(&attained)
		if attained.Overall.Tickets != 1 || attained.Overall.Breached != 1 || attained.Overall.Attainment == nil || *attained.Overall.Attainment != 0 ||
			attained.ByPriority["urgent"].Breached != 1 || attained.ByAgent[d.agentID].Breached != 1 {
			t.Fatalf("SLA attainment %+v", attained)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/sla?from=2026-13-01", Headers: d.headers}).ExpectProblem(422, "validation_failed")
		var before struct{ Overall struct{ Tickets int64 } }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/sla?from=2020-01-01&to=2020-01-31", Headers: d.headers}).Expect(200).JSON(&before)
		if before.Overall.Tickets != 0 {
			t.Fatalf("January 2020 has %d tickets", before.Overall.Tickets)
		}

		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent,
			Body: map[string]any{"body": "Looking into it."}}).Expect(201)
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers}).Expect(200).JSON(&got)
		if got.SLA.FirstRespondedAt == nil || got.SLA.FirstResponseDueAt != nil || len(got.SLA.Breaches) != 1 {
			t.Fatalf("after the reply: %+v", got.SLA)
		}
		// Solved, then closed by its auto-close timer: its workflow ends.
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"status": "solved"}}).Expect(200)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := e.Temporal.GetWorkflow(ctx, names.TicketSLAID(tk.ID), "").Get(ctx, nil); err != nil {
			t.Fatalf("the ticket's SLA workflow: %v", err)
		}
	}, apitest.WithWebhookReceivers(), apitest.WithTicketAutoClose(time.Second))
}

// Only a ticket with a timer has an SLA workflow. One opened at a
// priority the policy sets no target for records no wake-up; solved and
// closed by its auto-close, it is never given a workflow (its close's
// plain signal finds none). The policy applied with a target for that
// priority starts the other ticket's workflow with its first timer;
// solving that ticket (no timer left) wakes the workflow with a plain
// signal, and the auto-close ends it.
func TestSLAWorkflowOnlyWithATimer(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		path := "/helpdesk/sla-policy"
		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.headers, Body: map[string]any{
			"businessHours": "24x7", "targets": map[string]any{"urgent": map[string]any{"firstResponse": 60}}}}).Expect(200)
		never := d.create(e, map[string]any{"subject": "A question", "email": apitest.UniqueEmail("never")})
		later := d.create(e, map[string]any{"subject": "Another", "email": apitest.UniqueEmail("later")})
		wakes := func(id string) []models.WorkflowStart {
			var rows []models.WorkflowStart
			if err := e.DB.Order("created_at, id").Find(&rows, "workflow_id = ?", names.TicketSLAID(id)).Error; err != nil {
				t.Fatal(err)
			}
			return rows
		}
		if rows := wakes(never.ID); len(rows) != 0 {
			t.Fatalf("a ticket without a timer recorded SLA wake-ups %+v", rows)
		}
		solve := map[string]any{"status": "solved", "agentId": d.agentID}
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + never.ID, Headers: d.headers, Body: solve}).Expect(200)
		e.Eventually(func() bool {
			rows := wakes(never.ID)
			return len(rows) == 1 && rows[0].Status == models.SignalSkipped
		}, "the auto-close's wake-up of a ticket that never had a workflow, skipped")
		if rows := wakes(never.ID); rows[0].WorkflowType != "" {
			t.Fatalf("the close of a ticket without a timer would start its SLA workflow: %+v", rows[0])
		}
		if _, err := e.Temporal.DescribeWorkflowExecution(t.Context(), names.TicketSLAID(never.ID), ""); err == nil {
			t.Fatal("a ticket that never had a timer has an SLA workflow")
		}

		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.headers, Body: map[string]any{
			"businessHours": "24x7", "targets": map[string]any{"normal": map[string]any{"firstResponse": 60}}}}).Expect(200)
		e.Do(apitest.Request{Method: "POST", Path: path + "/apply", Headers: d.headers}).Expect(200)
		if rows := wakes(later.ID); len(rows) != 1 || rows[0].WorkflowType != names.TicketSLAWorkflow {
			t.Fatalf("the first timer's wake-up %+v, want a signal-with-start", rows)
		}
		e.Eventually(func() bool {
			rows := wakes(later.ID)
			return rows[0].Status == models.SignalDelivered
		}, "the SLA workflow started with the ticket's first timer")
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + later.ID, Headers: d.headers, Body: solve}).Expect(200)
		if rows := wakes(later.ID); len(rows) != 2 || rows[1].WorkflowType != "" {
			t.Fatalf("the solve's wake-up %+v, want a plain signal", rows)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := e.Temporal.GetWorkflow(ctx, names.TicketSLAID(later.ID), "").Get(ctx, nil); err != nil {
			t.Fatalf("the ticket's SLA workflow after the auto-close: %v", err)
		}
	}, apitest.WithTicketAutoClose(time.Second))
}

// backdateFirstResponse moves the start of the ticket's first-response
// clock back by d, in its stored state.
func backdateFirstResponse(t *testing.T, e *apitest.Env, ticketID string, d time.Duration) {
	t.Helper()
	var tk models.Ticket
	if err := e.DB.Take(&tk, "id = ?", ticketID).Error; err != nil {
		t.Fatal(err)
	}
	s, err := models.SLAOf(&tk)
	if err != nil || s == nil {
		t.Fatalf("the ticket's SLA: %v %v", s, err)
	}
	k := s.Clock(models.SLAFirstResponse)
	earlier := k.Since.Add(-d)
	k.Since = &earlier
	body, _ := json.Marshal(s)
	if err := e.DB.Model(&tk).Update("sla_state", string(body)).Error; err != nil {
		t.Fatal(err)
	}
}
