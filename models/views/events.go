package views

import "github.com/business-suite/suite/models"

// The functions that decide a webhook event's type. They stay here, beside
// the views they compare, until they move into models.

// TicketOpenedEvents are the webhook events of ticket t's opening:
// customer.created when it created newCustomer for its requester, then
// ticket.created.
func TicketOpenedEvents(t *models.Ticket, newCustomer *models.Customer) []models.Event {
	var events []models.Event
	if newCustomer != nil {
		events = append(events, models.Event{OrgID: t.OrgID, Type: "customer.created", Object: ToCustomer(newCustomer)})
	}
	return append(events, models.Event{OrgID: t.OrgID, Type: "ticket.created", Object: ToTicket(t)})
}

// TicketChangeEvents are the webhook events of a ticket's change from
// before to after (models.ChangeEvents): ticket.updated, with
// ticket.status_changed when its status moved and ticket.assigned when
// its assignee changed (to null too: unassigned).
func TicketChangeEvents(before, after *models.Ticket) ([]models.Event, error) {
	b, a := ToTicket(before), ToTicket(after)
	types := []string{"ticket.updated"}
	if b.Status != a.Status {
		types = append(types, "ticket.status_changed")
	}
	if !equalID(b.AgentID, a.AgentID) {
		types = append(types, "ticket.assigned")
	}
	return models.ChangeEvents(a.WorkspaceID, b, a, a, types...)
}

func equalID(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// SubscriptionChangedEvents are the webhook events of a change of the
// workspace's billing from before to after: subscription.changed when its
// plan or its Stripe subscription moved, with the object as
// GET /helpdesk/payments/subscription shows it. The change of plan under
// way (pendingChange) is part of the object but moves at every step of
// its workflow, so its moves alone tell nothing: the plan applied, or
// Stripe's subscription changing, does.
func SubscriptionChangedEvents(before, after *models.BillingOverview) ([]models.Event, error) {
	b, a := ToSubscription(before), ToSubscription(after)
	object := a
	b.PendingChange, a.PendingChange = nil, nil
	return models.ChangeEvents(after.OrgID, b, a, object, models.EventSubscriptionChanged)
}

// LeadChangeTypes are the webhook event types of a lead's change from
// before to after: typ (lead.updated, lead.converted, or none when typ is
// ""), and lead.scored when its score moved.
func LeadChangeTypes(before, after Lead, typ string) []string {
	var types []string
	if typ != "" {
		types = append(types, typ)
	}
	if before.Score != after.Score || before.Probability != after.Probability {
		types = append(types, "lead.scored")
	}
	return types
}
