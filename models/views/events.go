package views

import "github.com/business-suite/suite/models"

// The webhook events of changes, built from views: models decides their
// types (models/event_types.go).

// TicketOpenedEvents are the webhook events of ticket t's opening:
// customer.created when it created newCustomer for its requester, then
// ticket.created.
func TicketOpenedEvents(t *models.Ticket, newCustomer *models.Customer) []models.Event {
	var events []models.Event
	if newCustomer != nil {
		events = append(events, models.Event{OrgID: t.OrgID, Type: models.EventCustomerCreated, Object: ToCustomer(newCustomer)})
	}
	return append(events, models.Event{OrgID: t.OrgID, Type: models.EventTicketCreated, Object: ToTicket(t)})
}

// TicketChangeEvents are the webhook events of a ticket's change from
// before to after, of the types models.TicketChangeTypes decides, with the
// ticket's view and its fields' earlier values (models.ChangeEvents).
func TicketChangeEvents(before, after *models.Ticket) ([]models.Event, error) {
	b, a := ToTicket(before), ToTicket(after)
	return models.ChangeEvents(a.WorkspaceID, b, a, a, models.TicketChangeTypes(before, after)...)
}

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

// LeadChangeTypes are the event types of a lead's change from before to
// after, their views (models.LeadChangeTypes): typ, and lead.scored when
// its score or probability moved.
func LeadChangeTypes(before, after Lead, typ string) []string {
	return models.LeadChangeTypes(typ, before.Score != after.Score || before.Probability != after.Probability)
}
