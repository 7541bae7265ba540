package crm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type automation struct {
	ID, Name, Object, Refire string
	Active                   bool
	Version                  int
	CancelledRuns            int
}

type automationRun struct {
	ID, Status, ObjectID, Reason, WaitingFor, WorkflowID, TemporalURL string
	Depth                                                             int
	Steps                                                             []struct {
		Index   int
		Action  string
		Outcome string
		Detail  string
	}
}

type autoTicket struct {
	ID, Status, Priority string
	Number               int
	AgentID              *string
	Tags                 []string
}

// automationDesk is a CRM organization (two agents) with its Helpdesk key.
type automationDesk struct {
	*crmOrg
	hd   map[string]string
	base string
}

// The enterprise plan has no ticket limit: without its rules, the
// workspace's tickets would open in one statement that records no event
// (models.OpenTicketAtOnce), and a rule must still see them.
func newAutomationDesk(t *testing.T, e *apitest.Env) *automationDesk {
	o := newCRMOrg(t, e)
	e.SetPlan(o.id, models.PlanEnterprise)
	return &automationDesk{crmOrg: o, hd: apitest.HelpdeskKey(e.CreateKey(o.owner, o.id, "helpdesk"), o.id),
		base: "/crm/organization/" + o.id + "/automations"}
}

// escalation is the README's rule, with a delay of seconds.
func escalation(delay string) map[string]any {
	return map[string]any{
		"name": "Escalate unanswered VIP tickets", "object": "ticket", "on": []string{"created", "updated"},
		"conditions": map[string]any{
			"all": []any{map[string]any{"field": "priority", "operator": "is", "value": "urgent"}},
			"any": []any{map[string]any{"field": "tags", "operator": "includes", "value": "vip"},
				map[string]any{"field": "requester.email", "operator": "ends_with", "value": "@bigco.example"}},
		},
		"steps": []any{
			map[string]any{"action": "set", "field": "agentId", "value": "round_robin"},
			map[string]any{"action": "add_tags", "value": []string{"escalated"}},
			map[string]any{"action": "delay", "duration": delay},
			map[string]any{"action": "comment", "public": false, "body": "Still open: {{ticket.number}}"},
			map[string]any{"action": "notify", "to": "admins", "body": "Ticket {{ticket.number}} needs you"},
		},
		"refire": "once",
	}
}

func (d *automationDesk) openTicket(e *apitest.Env, priority string, tags ...string) autoTicket {
	var tk autoTicket
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.hd,
		Body: map[string]any{"subject": "Engines down", "email": "ops@bigco.example", "priority": priority, "tags": tags}}).Expect(201).JSON(&tk)
	return tk
}

func (d *automationDesk) runs(e *apitest.Env, ruleID, query string) []automationRun {
	var page struct{ Data []automationRun }
	e.Do(apitest.Request{Method: "GET", Path: d.base + "/" + ruleID + "/runs" + query, Headers: d.owner.Auth()}).Expect(200).JSON(&page)
	return page.Data
}

// waitRun waits for the object's run of the rule to reach status.
func (d *automationDesk) waitRun(e *apitest.Env, ruleID, objectID, status string) automationRun {
	var run automationRun
	e.Eventually(func() bool {
		runs := d.runs(e, ruleID, "?objectId="+objectID)
		if len(runs) == 1 {
			run = runs[0]
		}
		return run.Status == status
	}, "the run of %s on %s to be %s (it is %+v)", ruleID, objectID, status, &run)
	return run
}

// The README's walkthrough: a rule assigns an urgent VIP ticket at once,
// tags it, and after its delay adds an internal note and notifies the
// admins; the run lists each step's outcome and links to its workflow. A
// ticket the conditions do not hold for starts nothing; a rule that runs
// once per object does not run again when the ticket changes.
func TestAutomationEscalatesAVIPTicket(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		var rule automation
		e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: escalation("PT2S")}).Expect(201).JSON(&rule)
		if !rule.Active || rule.Version != 1 || rule.Refire != "once" {
			t.Fatalf("created: %+v", rule)
		}

		plain := d.openTicket(e, "normal", "vip")
		tk := d.openTicket(e, "urgent", "vip")
		run := d.waitRun(e, rule.ID, tk.ID, models.RunCompleted)
		var after autoTicket
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.hd}).Expect(200).JSON(&after)
		if after.AgentID == nil || (*after.AgentID != d.memberA && *after.AgentID != d.memberB) || !slices.Contains(after.Tags, "escalated") {
			t.Fatalf("the ticket after its run: %+v", after)
		}
		var outcomes []string
		for _, s := range run.Steps {
			outcomes = append(outcomes, s.Action+":"+s.Outcome)
		}
		if want := "set:done add_tags:done delay:waited comment:done notify:done"; strings.Join(outcomes, " ") != want {
			t.Fatalf("steps %q, want %q (%+v)", strings.Join(outcomes, " "), want, run)
		}
		if run.WorkflowID != "automation/"+rule.ID+"/"+tk.ID || run.Depth != 1 {
			t.Fatalf("run: %+v", run)
		}
		var comments struct {
			Data []struct {
				Body   string
				Public bool
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.hd}).Expect(200).JSON(&comments)
		if len(comments.Data) != 1 || comments.Data[0].Public || comments.Data[0].Body != "Still open: "+models.Itoa(tk.Number) {
			t.Fatalf("comments: %+v", comments.Data)
		}
		var notes struct {
			Data []struct{ Type, Title, Body, ResourceID string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications", Headers: apitest.HelpdeskUser(d.owner.Token, d.id)}).Expect(200).JSON(&notes)
		if !slices.ContainsFunc(notes.Data, func(n struct{ Type, Title, Body, ResourceID string }) bool {
			return n.Type == models.NotifyAutomation && n.Title == "Escalate unanswered VIP tickets" && n.ResourceID == tk.ID &&
				n.Body == "Ticket "+models.Itoa(tk.Number)+" needs you"
		}) {
			t.Fatalf("the owner's notifications: %+v", notes.Data)
		}

		// Changing the ticket matches "updated", but the rule ran for it.
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.hd, Body: map[string]any{"subject": "Engines still down"}}).Expect(200)
		// The plain ticket made no run: the one run of the rule is the VIP's.
		e.Eventually(func() bool {
			return apitest.Count(t, e.DB, &models.WorkflowStart{}, "status = ?", models.StartPending) == 0
		},
			"the outbox to be dispatched")
		if runs := d.runs(e, rule.ID, ""); len(runs) != 1 || runs[0].ObjectID != tk.ID {
			t.Fatalf("runs of the rule: %+v (the plain ticket is %s)", runs, plain.ID)
		}
	})
}

// After a delay the run reads its ticket again: one solved meanwhile no
// longer holds, and the run stops there, saying why; a run cancelled
// during its delay never takes the steps after it; disabling the rule
// cancels the runs under way and says how many.
func TestAutomationRunsStopCancelAndDisable(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		rule := escalation("PT1H")
		rule["conditions"] = map[string]any{"all": []any{
			map[string]any{"field": "priority", "operator": "is", "value": "urgent"},
			map[string]any{"field": "status", "operator": "is_not", "value": "solved"}}}
		var r automation
		e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: rule}).Expect(201).JSON(&r)

		first, second, third := d.openTicket(e, "urgent"), d.openTicket(e, "urgent"), d.openTicket(e, "urgent")
		for _, tk := range []autoTicket{first, second, third} {
			d.waitRun(e, r.ID, tk.ID, models.RunWaiting)
		}

		run := d.runs(e, r.ID, "?objectId="+second.ID)[0]
		var cancelled automationRun
		e.Do(apitest.Request{Method: "POST", Path: d.base + "/" + r.ID + "/runs/" + run.ID + "/cancel", Headers: d.owner.Auth()}).Expect(200).JSON(&cancelled)
		if cancelled.Status != models.RunCancelled {
			t.Fatalf("cancelled: %+v", cancelled)
		}
		e.Do(apitest.Request{Method: "POST", Path: d.base + "/" + r.ID + "/runs/" + run.ID + "/cancel", Headers: d.owner.Auth()}).
			ExpectProblem(409, "run_finished")

		// Disabling cancels the two runs still waiting.
		rule["active"] = false
		var disabled automation
		e.Do(apitest.Request{Method: "PUT", Path: d.base + "/" + r.ID, Headers: d.owner.Auth(), Body: rule}).Expect(200).JSON(&disabled)
		if disabled.Active || disabled.Version != 2 || disabled.CancelledRuns != 2 {
			t.Fatalf("disabled: %+v, want inactive, version 2, 2 runs cancelled", disabled)
		}
		if runs := d.runs(e, r.ID, "?status=cancelled"); len(runs) != 3 {
			t.Fatalf("cancelled runs: %+v", runs)
		}
		// Their workflows end without another step.
		for _, tk := range []autoTicket{first, second, third} {
			e.Eventually(func() bool {
				desc, err := e.Temporal.DescribeWorkflowExecution(t.Context(), "automation/"+r.ID+"/"+tk.ID, "")
				return err == nil && desc.WorkflowExecutionInfo.CloseTime != nil
			}, "the run's workflow to end")
			if steps := d.runs(e, r.ID, "?objectId="+tk.ID)[0].Steps; len(steps) != 2 {
				t.Fatalf("a cancelled run took %d steps, want the 2 before its delay: %+v", len(steps), steps)
			}
		}

		// Re-checked after the delay: a ticket solved meanwhile stops the run.
		rule["active"] = true
		rule["steps"] = []any{map[string]any{"action": "delay", "duration": "PT2S"},
			map[string]any{"action": "add_tags", "value": []string{"late"}}}
		e.Do(apitest.Request{Method: "PUT", Path: d.base + "/" + r.ID, Headers: d.owner.Auth(), Body: rule}).Expect(200)
		tk := d.openTicket(e, "urgent")
		d.waitRun(e, r.ID, tk.ID, models.RunWaiting)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.hd, Body: map[string]any{"agentId": d.memberA, "status": "solved"}}).Expect(200)
		stopped := d.waitRun(e, r.ID, tk.ID, models.RunStopped)
		if !strings.Contains(stopped.Reason, "no longer held") || len(stopped.Steps) != 1 {
			t.Fatalf("stopped: %+v", stopped)
		}
		var after autoTicket
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.hd}).Expect(200).JSON(&after)
		if slices.Contains(after.Tags, "late") {
			t.Fatalf("the step after the delay ran on a solved ticket: %+v", after)
		}
	})
}

// A rule's definition is checked as a whole, each problem named by its
// JSON path; the test endpoint says whether a ticket matches and what
// each step would do, changing nothing; rules are admins' and their
// organization's only.
func TestAutomationRulesAreValidatedAndPrivate(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		bad := escalation("PT2H")
		bad["on"] = []string{"created", "exploded"}
		bad["conditions"] = map[string]any{"all": []any{map[string]any{"field": "priority", "operator": "resembles", "value": "urgent"}},
			"any": []any{map[string]any{"field": "colour", "operator": "is", "value": "red"},
				map[string]any{"field": "subject.text", "operator": "is", "value": "x"}}}
		bad["steps"] = []any{
			map[string]any{"action": "delay", "duration": "P2Y"},
			map[string]any{"action": "comment", "body": "{{ticket.colour}}"},
			map[string]any{"action": "teleport"},
			map[string]any{"action": "notify", "to": "admins", "bodyy": "typo"},
			map[string]any{"action": "set", "field": "agentId", "value": models.NewID()},
		}
		problem := e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: bad}).ExpectProblem(422, "validation_failed")
		var fields []string
		for _, f := range problem["errors"].([]any) {
			fields = append(fields, f.(map[string]any)["field"].(string))
		}
		for _, want := range []string{"on[1]", "conditions.all[0].operator", "conditions.any[0].field", "conditions.any[1].field", "steps[0].duration", "steps[1].body", "steps[2].action",
			"steps[3].bodyy", "steps[4].value"} {
			if !slices.Contains(fields, want) {
				t.Errorf("no error names %s: %v", want, fields)
			}
		}
		if n := apitest.Count(t, e.DB, &models.Automation{}, "org_id = ?", d.id); n != 0 {
			t.Fatalf("a refused rule was stored (%d)", n)
		}

		var rule automation
		e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: escalation("PT2H")}).Expect(201).JSON(&rule)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/organization/" + d.id + "/automations/" + rule.ID, Headers: d.owner.Auth(),
			Body: map[string]any{"name": "x"}}).ExpectProblem(422, "validation_failed")

		// Deactivate it, so the ticket below starts no run, then test it.
		off := escalation("PT2H")
		off["active"] = false
		e.Do(apitest.Request{Method: "PUT", Path: d.base + "/" + rule.ID, Headers: d.owner.Auth(), Body: off}).Expect(200)
		tk := d.openTicket(e, "urgent", "vip")
		var test struct {
			Matches    bool
			Conditions []struct {
				Group, Field string
				Holds        bool
			}
			Steps []struct{ Action, Would string }
		}
		e.Do(apitest.Request{Method: "POST", Path: d.base + "/" + rule.ID + "/test", Headers: d.owner.Auth(),
			Body: map[string]any{"objectId": tk.ID}}).Expect(200).JSON(&test)
		if !test.Matches || len(test.Conditions) != 3 || len(test.Steps) != 5 || test.Steps[3].Would != "add an internal note: Still open: "+models.Itoa(tk.Number) {
			t.Fatalf("test: %+v", test)
		}
		// The requester is the ticket's customer, whose e-mail is the bigco one.
		if c := test.Conditions[2]; c.Field != "requester.email" || !c.Holds {
			t.Fatalf("the requester's condition: %+v", c)
		}
		if n := apitest.Count(t, e.DB, &models.AutomationRun{}, "org_id = ?", d.id); n != 0 {
			t.Fatalf("testing a rule ran it (%d runs)", n)
		}

		// Another organization sees none of it; an agent may not manage rules.
		other := newCRMOrg(t, e)
		otherBase := "/crm/organization/" + other.id + "/automations/" + rule.ID
		e.Do(apitest.Request{Method: "GET", Path: otherBase, Headers: other.owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: otherBase + "/test", Headers: other.owner.Auth(), Body: map[string]any{"objectId": tk.ID}}).
			ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: d.base + "/" + rule.ID, Headers: other.owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: d.base, Headers: d.agentA.Auth()}).ExpectProblem(403, "admin_required")
		var mine automation
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + other.id + "/automations", Headers: other.owner.Auth(),
			Body: escalation("PT2H")}).Expect(201).JSON(&mine)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + other.id + "/automations/" + mine.ID + "/test",
			Headers: other.owner.Auth(), Body: map[string]any{"objectId": tk.ID}}).ExpectProblem(404, "not_found")

		var gone automation
		e.Do(apitest.Request{Method: "DELETE", Path: d.base + "/" + rule.ID, Headers: d.owner.Auth()}).Expect(200).JSON(&gone)
		e.Do(apitest.Request{Method: "GET", Path: d.base + "/" + rule.ID, Headers: d.owner.Auth()}).ExpectProblem(404, "not_found")
	})
}

// A rule never matches its own changes, and a chain of rules — each
// one's change matching the next — stops at depth 5, recorded as a
// stopped run that starts no workflow.
func TestAutomationLoopsEnd(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		rule := func(name string, when map[string]any, then, tag string) automation {
			var r automation
			e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: map[string]any{
				"name": name, "object": "ticket", "on": []string{"updated"}, "refire": "every_match",
				"conditions": map[string]any{"all": []any{when, map[string]any{"field": "tags", "operator": "includes", "value": tag}}},
				"steps":      []any{map[string]any{"action": "set", "field": "priority", "value": then}}}}).Expect(201).JSON(&r)
			return r
		}
		changedTo := func(v string) map[string]any {
			return map[string]any{"field": "priority", "operator": "changed_to", "value": v}
		}
		// Its own change (priority changed) matches it again, were it not
		// made by it.
		self := rule("Self", map[string]any{"field": "priority", "operator": "changed"}, "urgent", "self")
		tk := d.openTicket(e, "low", "self")
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.hd, Body: map[string]any{"priority": "high"}}).Expect(200)
		run := d.waitRun(e, self.ID, tk.ID, models.RunCompleted)
		e.Eventually(func() bool {
			return apitest.Count(t, e.DB, &models.WorkflowStart{}, "status = ?", models.StartPending) == 0
		},
			"the outbox to be dispatched")
		if runs := d.runs(e, self.ID, ""); len(runs) != 1 || len(runs[0].Steps) != 1 {
			t.Fatalf("a rule matched its own change: %+v (first %+v)", runs, run)
		}

		// Two rules that undo each other's change: a chain.
		up, down := rule("Up", changedTo("normal"), "high", "ping"), rule("Down", changedTo("high"), "normal", "ping")
		ping := d.openTicket(e, "low", "ping")
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + ping.ID, Headers: d.hd, Body: map[string]any{"priority": "normal"}}).Expect(200)
		var stopped []automationRun
		e.Eventually(func() bool {
			stopped = append(d.runs(e, up.ID, "?status=stopped"), d.runs(e, down.ID, "?status=stopped")...)
			return len(stopped) == 1
		}, "the chain to stop")
		if s := stopped[0]; s.Depth != models.MaxAutomationDepth+1 || !strings.Contains(s.Reason, "depth 5") || s.TemporalURL != "" {
			t.Fatalf("the chain's end: %+v", s)
		}
		if n := apitest.Count(t, e.DB, &models.AutomationRun{}, "object_id = ?", ping.ID); n != int64(models.MaxAutomationDepth+1) {
			t.Fatalf("%d runs for the chain, want %d", n, models.MaxAutomationDepth+1)
		}
	})
}

// A rule about deals moves a large new deal to QUALIFIED, gives it an
// owner in turn and tells that owner; its stage move is in the deal's
// history as the rule's. A rule about leads gives each new one an owner
// and marks it contacted.
func TestAutomationMovesADeal(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		var r automation
		e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: map[string]any{
			"name": "Qualify large deals", "object": "deal", "on": []string{"created"},
			"conditions": map[string]any{"all": []any{map[string]any{"field": "amount", "operator": "greater_than", "value": 10000}}},
			"steps": []any{map[string]any{"action": "set", "field": "stage", "value": models.StageQualified},
				map[string]any{"action": "set", "field": "assignedToId", "value": "round_robin"},
				map[string]any{"action": "notify", "to": "assignee", "body": "{{deal.title}} is yours"}}}}).Expect(201).JSON(&r)
		type dealView struct {
			ID, Stage    string
			AssignedToID *string
			History      []struct{ To, ChangedBy string }
		}
		create := func(amount int) dealView {
			var dv dealView
			e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: d.owner.Auth(),
				Body: map[string]any{"orgId": d.id, "title": "Engines", "amount": amount}}).Expect(201).JSON(&dv)
			return dv
		}
		small, large := create(500), create(50_000)
		run := d.waitRun(e, r.ID, large.ID, models.RunCompleted)
		var after dealView
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals/" + large.ID + "?orgId=" + d.id, Headers: d.owner.Auth()}).Expect(200).JSON(&after)
		if after.Stage != models.StageQualified || after.AssignedToID == nil || (*after.AssignedToID != d.memberA && *after.AssignedToID != d.memberB) {
			t.Fatalf("the deal after its run: %+v (run %+v)", after, run)
		}
		if !slices.ContainsFunc(after.History, func(h struct{ To, ChangedBy string }) bool {
			return h.To == models.StageQualified && h.ChangedBy == "automation:"+r.ID
		}) {
			t.Fatalf("the deal's history: %+v", after.History)
		}
		if n := apitest.Count(t, e.DB, &models.Notification{}, "member_id = ? AND type = ? AND resource_id = ? AND body = ?",
			*after.AssignedToID, models.NotifyAutomation, large.ID, "Engines is yours"); n != 1 {
			t.Fatalf("the new owner was told %d times", n)
		}
		if runs := d.runs(e, r.ID, ""); len(runs) != 1 || runs[0].ObjectID == small.ID {
			t.Fatalf("runs: %+v", runs)
		}

		// A rule about leads: every new lead is contacted by the next agent.
		var lr automation
		e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: map[string]any{
			"name": "Contact new leads", "object": "lead", "on": []string{"created"},
			"steps": []any{map[string]any{"action": "set", "field": "assignedToId", "value": "round_robin"},
				map[string]any{"action": "set", "field": "status", "value": models.LeadContacted}}}}).Expect(201).JSON(&lr)
		var lead struct{ ID, Status string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: d.owner.Auth(),
			Body: map[string]any{"orgId": d.id, "name": "Ada", "email": "ada@lovelace.example"}}).Expect(201).JSON(&lead)
		d.waitRun(e, lr.ID, lead.ID, models.RunCompleted)
		var got struct {
			Status       string
			AssignedToID *string
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + lead.ID + "?orgId=" + d.id, Headers: d.owner.Auth()}).Expect(200).JSON(&got)
		if got.Status != models.LeadContacted || got.AssignedToID == nil {
			t.Fatalf("the lead after its run: %+v", got)
		}
	})
}

// A rule about deals creates a task for the next agent, due two days on;
// a rule about tickets has each new one summarized by an AI job (the
// run's child workflow) into an internal note; a rule on email.received
// tags a ticket only when a message from bigco arrives. A plan without AI
// cannot save an ai_summarize step, and a ticket takes no task.
func TestAutomationTasksSummariesAndMail(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newAutomationDesk(t, e)
		create := func(body map[string]any) automation {
			var r automation
			e.Do(apitest.Request{Method: "POST", Path: d.base, Headers: d.owner.Auth(), Body: body}).Expect(201).JSON(&r)
			return r
		}
		tasks := create(map[string]any{"name": "Call new deals", "object": "deal", "on": []string{"created"},
			"steps": []any{map[string]any{"action": "create_task", "title": "Call about {{deal.title}}", "body": "{{deal.amount}} {{deal.currency}}",
				"priority": "HIGH", "dueIn": "P2D", "to": "round_robin"}}})
		var deal struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: d.owner.Auth(),
			Body: map[string]any{"orgId": d.id, "title": "Engines", "amount": 5000}}).Expect(201).JSON(&deal)
		run := d.waitRun(e, tasks.ID, deal.ID, models.RunCompleted)
		var task struct {
			ID, Title, Description, Priority string
			DueDate, AssignedToID, DealID    *string
		}
		taskID := strings.TrimPrefix(run.Steps[0].Detail, "task ")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks/" + taskID + "?orgId=" + d.id, Headers: d.owner.Auth()}).Expect(200).JSON(&task)
		due := models.Now().AddDate(0, 0, 2).UTC().Format("2006-01-02")
		if task.Title != "Call about Engines" || task.Description != "5000 USD" || task.Priority != "HIGH" || task.DueDate == nil ||
			*task.DueDate != due || task.DealID == nil || *task.DealID != deal.ID || task.AssignedToID == nil ||
			(*task.AssignedToID != d.memberA && *task.AssignedToID != d.memberB) {
			t.Fatalf("the rule's task: %+v (run %+v)", task, run)
		}

		summaries := create(map[string]any{"name": "Summarize", "object": "ticket", "on": []string{"created"},
			"steps": []any{map[string]any{"action": "ai_summarize", "length": "short"}}})
		var tk autoTicket
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.hd, Body: map[string]any{"subject": "Engines down",
			"email": "ops@bigco.example", "description": "Both engines stopped at noon. The backup generator did not start either."}}).Expect(201).JSON(&tk)
		run = d.waitRun(e, summaries.ID, tk.ID, models.RunCompleted)
		jobID := strings.TrimSuffix(strings.TrimPrefix(run.Steps[0].Detail, "AI job "), ", as an internal note")
		var job struct {
			ID, Status string
			Result     struct{ Summary string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/v1/ai/jobs/" + jobID, Headers: apitest.Bearer(e.CreateKey(d.owner, d.id, "ai"))}).Expect(200).JSON(&job)
		if job.Status != models.AIJobSucceeded {
			t.Fatalf("the summary's job: %+v (run %+v)", job, run)
		}
		var comments struct {
			Data []struct {
				Body   string
				Public bool
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.hd}).Expect(200).JSON(&comments)
		if len(comments.Data) != 1 || comments.Data[0].Public || comments.Data[0].Body != "AI summary:\n\n"+job.Result.Summary || !strings.Contains(job.Result.Summary, "engines") {
			t.Fatalf("comments: %+v (the job: %+v)", comments.Data, job)
		}
		e.Do(apitest.Request{Method: "DELETE", Path: d.base + "/" + summaries.ID, Headers: d.owner.Auth()}).Expect(200)

		mail := create(map[string]any{"name": "Mail from bigco", "object": "ticket", "on": []string{"email.received"},
			"conditions": map[string]any{"all": []any{map[string]any{"field": "message.from", "operator": "ends_with", "value": "@bigco.example"}}},
			"steps":      []any{map[string]any{"action": "add_tags", "value": []string{"bigco-mail"}}}})
		send := func(from string) string {
			raw := "From: " + from + "\r\nTo: desk@example.com\r\nSubject: Engines\r\nMessage-ID: <" + models.NewID() + "@sender.example>\r\n" +
				"Content-Type: text/plain\r\n\r\nThey are down.\r\n"
			var in struct{ ID string }
			e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: []byte(raw),
				Headers: map[string]string{"X-Api-Key": d.hd["X-Api-Key"], "X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}}).Expect(202).JSON(&in)
			var m models.InboundEmail
			e.Eventually(func() bool {
				return e.DB.Take(&m, "id = ? AND status = ?", in.ID, models.InboundProcessed).Error == nil
			}, "message %s to become a ticket", in.ID)
			return *m.TicketID
		}
		other, big := send("ann@other.example"), send("ops@bigco.example")
		d.waitRun(e, mail.ID, big, models.RunCompleted)
		var tagged autoTicket
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + big, Headers: d.hd}).Expect(200).JSON(&tagged)
		if !slices.Contains(tagged.Tags, "bigco-mail") {
			t.Fatalf("the bigco ticket: %+v", tagged)
		}
		if runs := d.runs(e, mail.ID, "?objectId="+other); len(runs) != 0 {
			t.Fatalf("a message from elsewhere ran the rule: %+v", runs)
		}

		free := newCRMOrg(t, e)
		e.SetPlan(free.id, models.PlanStarter)
		problem := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + free.id + "/automations", Headers: free.owner.Auth(),
			Body: map[string]any{"name": "x", "object": "ticket", "on": []string{"created"},
				"steps": []any{map[string]any{"action": "ai_summarize"}, map[string]any{"action": "create_task", "title": "x"}}}}).
			ExpectProblem(422, "validation_failed")
		codes := apitest.ProblemCodes(problem)
		if !slices.Contains(codes, "steps[0].action:plan_upgrade_required") || !slices.Contains(codes, "steps[1].action:not_available") {
			t.Fatalf("errors: %v", codes)
		}
	})
}
