package helpdesk_test

import (
	"fmt"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
)

// Tickets, their comments and customers tell their changes, whether a
// request made them or the e-mail ingest's activity did: a message opens a
// ticket (and its customer), an agent assigns, answers and solves it, the
// customer's reply by e-mail reopens it, an admin deletes it.
func TestWebhooksTellTicketChanges(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		rc := apitest.Subscribe(t, e, d.owner, d.id, "ticket.*", "customer.*")
		admin := apitest.HelpdeskUser(d.owner.Token, d.id)

		customer := apitest.UniqueEmail("maria")
		first := message("Maria Lopez <"+customer+">", d.address, "Printer on fire", "It smells of smoke.")
		if err := deliver(e, customer, []string{d.address}, first); err != nil {
			t.Fatal(err)
		}
		tk := d.ticket(e, *d.inbound(e, messageIDOf(first)).TicketID)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"agentId": d.agentID}}).Expect(200)
		var reply struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent,
			Body: map[string]any{"body": "Unplug it."}}).Expect(201).JSON(&reply)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers,
			Body: map[string]any{"status": "solved"}}).Expect(200)
		answer := message(customer, d.address, fmt.Sprintf("Still smoking [#%d]", tk.Number), "A little.")
		if err := deliver(e, customer, []string{d.address}, answer); err != nil {
			t.Fatal(err)
		}
		answered := d.inbound(e, messageIDOf(answer))
		e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/tickets/" + tk.ID, Headers: admin}).Expect(204)

		var other struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "Ada", "email": apitest.UniqueEmail("ada")}}).Expect(201).JSON(&other)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/customers/" + other.ID, Headers: d.headers,
			Body: map[string]any{"company": "Engines"}}).Expect(200)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/customers/" + other.ID, Headers: d.headers,
			Body: map[string]any{"company": "Engines"}}).Expect(200) // changes nothing: no event
		e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/customers/" + other.ID, Headers: admin}).Expect(204)

		e.Eventually(func() bool { return len(rc.Types(other.ID)) == 3 }, "the customer's events")
		wantTicket := []string{"ticket.created",
			"ticket.updated", "ticket.assigned", // assigned
			"ticket.updated", "ticket.status_changed", // the agent's reply opens it
			"ticket.updated", "ticket.status_changed", // solved
			"ticket.updated", "ticket.status_changed", // the customer's reply by e-mail reopens it
			"ticket.deleted"}
		for _, c := range []struct {
			what, id string
			want     []string
		}{
			{"the ticket", tk.ID, wantTicket},
			{"the agent's reply", reply.ID, []string{"ticket.comment_created"}},
			{"the customer's reply", *answered.CommentID, []string{"ticket.comment_created"}},
			{"the customer the message created", *tk.CustomerID, []string{"customer.created"}},
			{"the customer of the API", other.ID, []string{"customer.created", "customer.updated", "customer.deleted"}},
		} {
			if got := rc.Types(c.id); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s: received %v, want %v", c.what, got, c.want)
			}
		}
		for _, r := range rc.Received() {
			if r.Object.ID == tk.ID && r.Type == "ticket.assigned" && r.Previous["agentId"] != nil {
				t.Errorf("ticket.assigned's previous %v, want agentId null", r.Previous)
			}
		}
	}, apitest.WithWebhookReceivers())
}
