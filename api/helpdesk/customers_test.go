package helpdesk_test

import (
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

func TestCustomersHistoryAndTime(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		var cust struct{ ID, Email, Name string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "Carol", "email": "Carol@Example.com", "company": "Acme"}}).Expect(201).JSON(&cust)
		if cust.Email != "carol@example.com" {
			t.Fatalf("customer: %+v", cust)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "Dup", "email": "carol@example.com"}}).ExpectProblem(409, "email_taken")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "", "email": "x", "age": 3}}).ExpectProblem(422, "validation_failed")
		base := "/helpdesk/customers/" + cust.ID
		e.Do(apitest.Request{Method: "PUT", Path: base, Headers: d.headers, Body: map[string]any{"phone": "+1 555 0100"}}).Expect(200)

		// A ticket from her address links to her.
		tk := d.create(e, map[string]any{"subject": "Login fails", "email": "carol@example.com"})
		other := d.create(e, map[string]any{"subject": "Other person", "email": "dave@example.com"})
		if tk.CustomerID == nil || *tk.CustomerID != cust.ID {
			t.Fatalf("ticket not linked: %+v", tk)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent, Body: map[string]any{"body": "Try again"}}).Expect(201)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent, Body: map[string]any{"body": "note", "public": false}}).Expect(201)

		var tickets struct{ Data []ticket }
		e.Do(apitest.Request{Method: "GET", Path: base + "/tickets", Headers: d.headers}).Expect(200).JSON(&tickets)
		if len(tickets.Data) != 1 || tickets.Data[0].ID != tk.ID {
			t.Fatalf("customer tickets: %+v", tickets)
		}
		var inter struct {
			Data []struct{ Kind, Text string }
		}
		e.Do(apitest.Request{Method: "GET", Path: base + "/interactions", Headers: d.headers}).Expect(200).JSON(&inter)
		if len(inter.Data) != 2 || inter.Data[0].Kind != "comment" || inter.Data[0].Text != "Try again" || inter.Data[1].Kind != "ticket" {
			t.Fatalf("interactions (internal note must not show): %+v", inter)
		}

		// Time entries: bounds, ownership, totals.
		for _, tc := range []struct {
			body   map[string]any
			status int
		}{
			{map[string]any{"minutes": 30, "description": "Call", "ticketId": tk.ID}, 201},
			{map[string]any{"minutes": 45, "ticketId": tk.ID, "billable": false}, 201},
			{map[string]any{"minutes": 0, "ticketId": tk.ID}, 422},
			{map[string]any{"minutes": 1441, "ticketId": tk.ID}, 422},
			{map[string]any{"minutes": 10, "ticketId": other.ID}, 422},
			{map[string]any{"minutes": 10}, 422},
		} {
			e.Do(apitest.Request{Method: "POST", Path: base + "/time-entries", Headers: d.asAgent, Body: tc.body}).Expect(tc.status)
		}
		var entries struct {
			Data                          []struct{ Minutes int }
			TotalMinutes, BillableMinutes int
		}
		e.Do(apitest.Request{Method: "GET", Path: base + "/time-entries?limit=1", Headers: d.headers}).Expect(200).JSON(&entries)
		if len(entries.Data) != 1 || entries.TotalMinutes != 75 || entries.BillableMinutes != 30 {
			t.Fatalf("time entries: %+v", entries)
		}

		var feed struct{ Data []struct{ Type string } }
		e.Do(apitest.Request{Method: "GET", Path: base + "/activity?limit=100", Headers: d.headers}).Expect(200).JSON(&feed)
		types := map[string]int{}
		for _, ev := range feed.Data {
			types[ev.Type]++
		}
		if types["customer_created"] != 1 || types["customer_updated"] != 1 || types["ticket_created"] != 1 || types["comment_added"] != 1 || types["time_logged"] != 2 {
			t.Fatalf("activity feed: %v", types)
		}

		// Other workspaces see nothing.
		for _, p := range []string{base, base + "/tickets", base + "/interactions", base + "/activity", base + "/time-entries"} {
			e.Do(apitest.Request{Method: "GET", Path: p, Headers: d.outsider}).ExpectProblem(404, "not_found")
		}
		e.Do(apitest.Request{Method: "DELETE", Path: base, Headers: d.asAgent}).ExpectProblem(403, "admin_required")
		e.Do(apitest.Request{Method: "DELETE", Path: base, Headers: d.headers}).Expect(204)
		var left models.Ticket
		e.DB.Take(&left, "id = ?", tk.ID)
		if left.CustomerID != nil {
			t.Fatal("the deleted customer's ticket still points at them")
		}
	})
}
