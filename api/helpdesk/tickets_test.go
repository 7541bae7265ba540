package helpdesk_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"gorm.io/gorm"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

type ticket struct {
	ID, Status, Priority, Email, Channel string
	Number                               int
	CustomerID, AgentID                  *string
	AllowedStatuses, Tags                []string
	FirstResponseAt, SolvedAt, ClosedAt  *string
}

// desk is a workspace with an owner, an agent, a helpdesk key and headers.
type desk struct {
	id       string
	owner    *apitest.User
	agent    *apitest.User
	agentID  string
	key      string
	headers  map[string]string
	asAgent  map[string]string
	outsider map[string]string
}

func newDesk(t *testing.T, e *apitest.Env) *desk {
	d := &desk{owner: e.SignUp(apitest.UniqueEmail("owner"))}
	d.id = e.CreateOrg(d.owner, "Support Co")
	e.SetPlan(d.id, models.PlanBusiness)
	d.agent = e.AddMember(d.owner, d.id, models.RoleAgent)
	d.key = e.CreateKey(d.owner, d.id, "helpdesk")
	d.headers = apitest.HelpdeskKey(d.key, d.id)
	d.asAgent = apitest.HelpdeskUser(d.agent.Token, d.id)
	var m models.Member
	if err := e.DB.Take(&m, "org_id = ? AND role = ?", d.id, models.RoleAgent).Error; err != nil {
		t.Fatal(err)
	}
	d.agentID = m.ID
	other := e.SignUp(apitest.UniqueEmail("other"))
	otherOrg := e.CreateOrg(other, "Other desk")
	d.outsider = apitest.HelpdeskKey(e.CreateKey(other, otherOrg, "helpdesk"), otherOrg)
	return d
}

func (d *desk) create(e *apitest.Env, body map[string]any) ticket {
	var t ticket
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers, Body: body}).Expect(201).JSON(&t)
	return t
}

func TestTicketsLifecycle(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		first := d.create(e, map[string]any{"subject": "Printer on fire", "description": "Help", "email": "Bob@Example.com", "channel": "email", "tags": []string{"Hardware"}})
		second := d.create(e, map[string]any{"subject": "Again", "email": "bob@example.com", "priority": "urgent"})
		if first.Number != 1001 || second.Number != 1002 || first.Status != models.TicketNew || first.Priority != "normal" ||
			first.CustomerID == nil || *first.CustomerID != *second.CustomerID || first.Tags[0] != "hardware" {
			t.Fatalf("created: %+v / %+v", first, second)
		}
		path := "/helpdesk/tickets/" + first.ID
		put := func(h map[string]string, body map[string]any) *apitest.Response {
			return e.Do(apitest.Request{Method: "PUT", Path: path, Headers: h, Body: body})
		}
		put(d.headers, map[string]any{"status": "solved"}).ExpectProblem(409, "assignee_required")
		put(d.headers, map[string]any{"agentId": models.NewID()}).ExpectProblem(422, "validation_failed")
		var tk ticket
		put(d.headers, map[string]any{"agentId": d.agentID, "priority": "high"}).Expect(200).JSON(&tk)
		if tk.AgentID == nil || *tk.AgentID != d.agentID || tk.Priority != "high" {
			t.Fatalf("assign: %+v", tk)
		}
		var notes int64
		e.DB.Model(&models.Notification{}).Where("member_id = ? AND type = ?", d.agentID, "ticket_assigned").Count(&notes)
		if notes != 1 {
			t.Fatalf("%d assignment notifications", notes)
		}
		// The agent's first public reply records the first response and opens the ticket.
		e.Do(apitest.Request{Method: "POST", Path: path + "/comments", Headers: d.asAgent, Body: map[string]any{"body": "Internal", "public": false}}).Expect(201)
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200).JSON(&tk)
		if tk.FirstResponseAt != nil {
			t.Fatal("an internal note counted as the first response")
		}
		e.Do(apitest.Request{Method: "POST", Path: path + "/comments", Headers: d.asAgent, Body: map[string]any{"body": "On it"}}).Expect(201)
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200).JSON(&tk)
		if tk.FirstResponseAt == nil || tk.Status != models.TicketOpen {
			t.Fatalf("after the first reply: %+v", tk)
		}
		put(d.headers, map[string]any{"status": "solved"}).Expect(200).JSON(&tk)
		if tk.SolvedAt == nil || len(tk.AllowedStatuses) != 3 {
			t.Fatalf("solved: %+v", tk)
		}
		p := put(d.headers, map[string]any{"status": "closed"}).ExpectProblem(409, "illegal_status_transition")
		if p["detail"] != "A solved ticket can move to: [open pending on_hold]." {
			t.Fatalf("409 must name the allowed moves: %v", p["detail"])
		}
		put(d.headers, map[string]any{"status": "new"}).ExpectProblem(409, "illegal_status_transition")
		// "" (an unset variable in a script) never unassigns; null does, and
		// a solved ticket keeps its assignee.
		if p := put(d.headers, map[string]any{"agentId": ""}).ExpectProblem(422, "validation_failed"); !strings.Contains(fmt.Sprint(p["errors"]), "agentId") {
			t.Fatalf("422 does not name agentId: %v", p)
		}
		put(d.headers, map[string]any{"agentId": nil}).ExpectProblem(409, "assignee_required")
		// A customer's reply reopens a solved ticket and notifies the agent.
		e.Do(apitest.Request{Method: "POST", Path: path + "/comments", Headers: d.headers,
			Body: map[string]any{"body": "Still burning", "author": "customer"}}).Expect(201)
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200).JSON(&tk)
		if tk.Status != models.TicketOpen || tk.SolvedAt != nil {
			t.Fatalf("after the customer's reply: %+v", tk)
		}
		e.DB.Model(&models.Notification{}).Where("member_id = ? AND type = ?", d.agentID, "customer_replied").Count(&notes)
		if notes != 1 {
			t.Fatalf("%d reply notifications", notes)
		}
		var comments struct{ Data []struct{ AuthorType string } }
		e.Do(apitest.Request{Method: "GET", Path: path + "/comments", Headers: d.headers}).Expect(200).JSON(&comments)
		if len(comments.Data) != 3 || comments.Data[0].AuthorType != "customer" {
			t.Fatalf("comments: %+v", comments)
		}

		// Lists and filters.
		var list struct{ Data []ticket }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?priority=urgent", Headers: d.headers}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != second.ID {
			t.Fatalf("priority filter: %+v", list)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?agentId=" + d.agentID + "&q=printer", Headers: d.asAgent}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != first.ID {
			t.Fatalf("agent + q filter: %+v", list)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?status=done", Headers: d.headers}).ExpectProblem(422, "validation_failed")

		// Leaving agentId out keeps the assignee; null unassigns.
		other := "/helpdesk/tickets/" + second.ID
		e.Do(apitest.Request{Method: "PUT", Path: other, Headers: d.headers, Body: map[string]any{"agentId": d.agentID}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: other, Headers: d.headers, Body: map[string]any{"priority": "low"}}).Expect(200).JSON(&tk)
		if tk.AgentID == nil || *tk.AgentID != d.agentID {
			t.Fatalf("a body without agentId changed the assignee: %+v", tk)
		}
		e.Do(apitest.Request{Method: "PUT", Path: other, Headers: d.headers, Body: map[string]any{"agentId": nil}}).Expect(200).JSON(&tk)
		if tk.AgentID != nil {
			t.Fatalf("agentId null did not unassign: %+v", tk)
		}

		// Bad bodies, other workspaces, wrong credentials.
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers,
			Body: map[string]any{"subject": " ", "email": "nope", "priority": "asap", "channel": "fax"}}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.outsider}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: path, Headers: d.outsider, Body: map[string]any{"priority": "low"}}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets", Headers: map[string]string{"Authorization": "Bearer " + d.key, "X-Workspace-Id": d.id}}).ExpectProblem(401, "api_key_in_authorization")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets", Headers: map[string]string{"X-Api-Key": d.key}}).ExpectProblem(401, "workspace_required")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets"}).ExpectProblem(401, "unauthorized")
		crmKey := e.CreateKey(d.owner, d.id, "crm")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets", Headers: apitest.HelpdeskKey(crmKey, d.id)}).ExpectProblem(403, "wrong_service_key")
		// Deleting is for admins.
		e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/tickets/" + second.ID, Headers: d.asAgent}).ExpectProblem(403, "admin_required")
		e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/tickets/" + second.ID, Headers: d.headers}).Expect(204)
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + second.ID, Headers: d.headers}).ExpectProblem(404, "not_found")
	})
}

// Limits are checked in the creating transaction under a lock: concurrent
// creations cannot overbook the month, and seats over the plan block tickets.
func TestTicketLimitsAreRaceSafe(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		three, seats := 3, 25
		if err := e.DB.Create(&models.Plan{Name: "tiny", Seats: &seats, TicketsPerMonth: &three, CreatedAt: models.Now(), UpdatedAt: models.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		e.SetPlan(d.id, "tiny")
		var wg sync.WaitGroup
		statuses := make(chan int, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers,
					Body: map[string]any{"subject": "Rush", "email": apitest.UniqueEmail("c")}})
				statuses <- r.Status
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[201] != 3 || count[402] != 3 {
			t.Fatalf("statuses %v, want 3×201 and 3×402", count)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers,
			Body: map[string]any{"subject": "One more", "email": "x@example.com"}}).ExpectProblem(402, "ticket_limit_reached")

		one := 1
		e.DB.Model(&models.Plan{}).Where("name = ?", "tiny").Updates(map[string]any{"seats": &one, "tickets_per_month": nil})
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: d.headers,
			Body: map[string]any{"subject": "Seats", "email": "x@example.com"}}).ExpectProblem(402, "seat_limit_reached")
	})
}

// Solved tickets close on a durable timer unless reopened first.
func TestSolvedTicketsCloseAutomatically(t *testing.T) {
	e := apitest.New(t, database.SQLite, apitest.WithTicketAutoClose(time.Second), apitest.WithWebhookReceivers())
	d := newDesk(t, e)
	rc := apitest.Subscribe(t, e, d.owner, d.id, "ticket.status_changed")
	solve := func(tk ticket) {
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"agentId": d.agentID, "status": "solved"}}).Expect(200)
	}
	closes := d.create(e, map[string]any{"subject": "Will close", "email": "a@example.com"})
	reopened := d.create(e, map[string]any{"subject": "Will reopen", "email": "b@example.com"})
	solve(closes)
	solve(reopened)
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + reopened.ID + "/comments", Headers: d.headers,
		Body: map[string]any{"body": "Not fixed", "author": "customer"}}).Expect(201)
	e.Eventually(func() bool {
		var tk models.Ticket
		return e.DB.Take(&tk, "id = ?", closes.ID).Error == nil && tk.Status == models.TicketClosed && tk.ClosedAt != nil
	}, "the solved ticket to close")
	// The close is told as the auto-close activity made it.
	e.Eventually(func() bool { return len(rc.Types(closes.ID)) == 2 }, "the closed ticket's status changes")
	var told []apitest.WebhookDelivery
	for _, r := range rc.Received() {
		if r.Object.ID == closes.ID {
			told = append(told, r)
		}
	}
	if told[1].Previous["status"] != models.TicketSolved {
		t.Fatalf("the close was told with previous %v, want status %s", told[1].Previous, models.TicketSolved)
	}
	// Once the reopened ticket's timer is over (fired as a no-op, or
	// cancelled by the reopen), nothing can close the ticket any more.
	e.Eventually(func() bool {
		st := workflowStatus(e, names.TicketAutoCloseID(reopened.ID, 1))
		return st != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED && st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, "the reopened ticket's timer to end")
	var tk models.Ticket
	e.DB.Take(&tk, "id = ?", reopened.ID)
	if tk.Status != models.TicketOpen {
		t.Fatalf("a reopened ticket was closed: %s", tk.Status)
	}
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + closes.ID + "/comments", Headers: d.headers,
		Body: map[string]any{"body": "Hello?", "author": "customer"}}).ExpectProblem(409, "ticket_closed")
	e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + closes.ID, Headers: d.headers,
		Body: map[string]any{"priority": "urgent"}}).ExpectProblem(409, "ticket_closed")
}

// workflowStatus is the status of the workflow id (unspecified while it does
// not exist yet).
func workflowStatus(e *apitest.Env, id string) enumspb.WorkflowExecutionStatus {
	d, err := e.Temporal.DescribeWorkflowExecution(e.T.Context(), id, "")
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// Leaving the solved state — a customer's reply, a move by an agent, a
// deletion — cancels the running auto-close timer, so operators see only
// live timers; a timer that is already gone is fine.
func TestLeavingSolvedCancelsTheAutoCloseTimer(t *testing.T) {
	e := apitest.New(t, database.SQLite) // the default four-day timer
	d := newDesk(t, e)
	solved := func(subject string) ticket {
		tk := d.create(e, map[string]any{"subject": subject, "email": "c@example.com"})
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"agentId": d.agentID, "status": "solved"}}).Expect(200)
		e.Eventually(func() bool {
			return workflowStatus(e, names.TicketAutoCloseID(tk.ID, 1)) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}, "the timer of %s to run", subject)
		return tk
	}
	replied, moved, deleted, gone := solved("Replied"), solved("Moved"), solved("Deleted"), solved("Gone")

	// An operator terminated this one's timer by hand.
	if err := e.Temporal.TerminateWorkflow(e.T.Context(), names.TicketAutoCloseID(gone.ID, 1), "", "by hand"); err != nil {
		t.Fatal(err)
	}
	comment := func(tk ticket) {
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.headers,
			Body: map[string]any{"body": "Still broken", "author": "customer"}}).Expect(201)
	}
	comment(replied)
	comment(gone)
	e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + moved.ID, Headers: d.headers,
		Body: map[string]any{"status": "pending"}}).Expect(200)
	e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/tickets/" + deleted.ID, Headers: d.headers}).Expect(204)

	for _, tk := range []ticket{replied, moved, deleted, gone} {
		e.Eventually(func() bool {
			return workflowStatus(e, names.TicketAutoCloseCancelID(tk.ID, 1)) == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, "the cancellation of %s's timer to complete", tk.ID)
	}
	for id, want := range map[string]enumspb.WorkflowExecutionStatus{
		replied.ID: enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
		moved.ID:   enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
		deleted.ID: enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
		gone.ID:    enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
	} {
		if got := workflowStatus(e, names.TicketAutoCloseID(id, 1)); got != want {
			t.Errorf("timer of %s: %s, want %s", id, got, want)
		}
	}

	// Solving again starts a fresh timer (generation 2), left running.
	e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + replied.ID, Headers: d.headers,
		Body: map[string]any{"status": "solved"}}).Expect(200)
	e.Eventually(func() bool {
		return workflowStatus(e, names.TicketAutoCloseID(replied.ID, 2)) == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, "the second timer to run")
}

// A ticket of a workspace with nothing else to mind (no plan limit, SLA
// policy or webhook endpoint) is opened in one statement on PostgreSQL
// (models.OpenTicketAtOnce), outside any request transaction, and answers
// and records what the transaction's way does; anywhere else the ticket
// is opened in the request's transaction.
func TestTicketsOpenInOneStatementWhereTheyCan(t *testing.T) {
	var transactions atomic.Int32
	// The creates below carry an X-Request-Id of "count-…": the
	// transactions that commit in them are counted.
	countTransactions := apitest.WithCommitHook(func(tx *gorm.DB) error {
		if strings.HasPrefix(telemetry.RequestID(tx.Statement.Context), "count-") {
			transactions.Add(1)
		}
		return nil
	})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		open := func(email string) (ticket, int32) {
			t.Helper()
			transactions.Store(0)
			headers := maps.Clone(d.headers)
			headers["X-Request-Id"] = "count-" + models.NewID()
			var tk ticket
			e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: headers,
				Body: map[string]any{"subject": " Printer on fire ", "email": email, "priority": "high", "tags": []string{"HW"}}}).Expect(201).JSON(&tk)
			return tk, transactions.Load()
		}
		oneStatement := database.DialectFor(e.DB) == database.Postgres && !e.Keyed
		e.SetPlan(d.id, models.PlanEnterprise)
		tk, txs := open("Maria@Acme.io")
		if want := map[bool]int32{true: 0, false: 1}[oneStatement]; txs != want {
			t.Fatalf("opened in %d request transactions, want %d", txs, want)
		}
		if tk.Number != models.FirstTicketNumber || tk.Email != "maria@acme.io" || tk.Priority != "high" || tk.Status != models.TicketNew ||
			tk.CustomerID == nil || strings.Join(tk.Tags, ",") != "hw" || tk.Channel != "web" {
			t.Fatalf("the ticket: %+v", tk)
		}
		var history struct {
			Data []struct{ Type, Summary, Actor string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers/" + *tk.CustomerID + "/activity", Headers: d.headers}).Expect(200).JSON(&history)
		if len(history.Data) != 2 || history.Data[0].Summary != fmt.Sprintf("Ticket #%d opened: Printer on fire", tk.Number) ||
			history.Data[1].Type != "customer_created" || history.Data[0].Actor != history.Data[1].Actor || history.Data[0].Actor == "" {
			t.Fatalf("the customer's history: %+v", history.Data)
		}
		if again, _ := open("maria@acme.io"); again.Number != tk.Number+1 || *again.CustomerID != *tk.CustomerID {
			t.Fatalf("the requester's second ticket: %+v", again)
		}

		// A webhook endpoint's events are recorded with the ticket, in the
		// request's transaction.
		now := models.Now()
		if err := e.DB.Create(&models.WebhookEndpoint{ID: models.NewID(), OrgID: d.id, URL: "https://hooks.acme.io/", Events: `["ticket.*"]`,
			Secret: "whsec_x", Status: models.WebhookEnabled, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		withHook, txs := open("omar@acme.io")
		var events int64
		e.DB.Model(&models.WebhookEvent{}).Where("org_id = ? AND type = ?", d.id, "ticket.created").Count(&events)
		if txs != 1 || events != 1 || withHook.Number != tk.Number+2 {
			t.Fatalf("with an endpoint: %d transactions, %d ticket.created events, %+v", txs, events, withHook)
		}
	}, countTransactions)
}
