package models

// Webhook event types. Every type of event the suite emits is named here,
// and where a change's types depend on what changed, the function below
// that decides them is the one place that does (the callers build the
// events' objects — their views — and record them with record.Tx.Emit or
// EmitChange). docs/openapi.yaml lists the same types under
// POST /crm/organization/{id}/webhooks; TestEveryEventTypeIsDocumentedAndEmitted
// checks both lists and that no other file spells a type.
const (
	EventContactCreated = "contact.created"
	EventContactUpdated = "contact.updated"
	EventContactDeleted = "contact.deleted"
	// EventContactMerged and EventCustomerMerged tell that a duplicate was
	// merged into a survivor (the merge: both ids).
	EventContactMerged = "contact.merged"

	EventDealCreated      = "deal.created"
	EventDealUpdated      = "deal.updated"
	EventDealStageChanged = "deal.stage_changed"
	EventDealWon          = "deal.won"
	EventDealLost         = "deal.lost"
	EventDealDeleted      = "deal.deleted"

	EventLeadCreated   = "lead.created"
	EventLeadScored    = "lead.scored"
	EventLeadUpdated   = "lead.updated"
	EventLeadConverted = "lead.converted"
	EventLeadDeleted   = "lead.deleted"

	EventTaskCreated = "task.created"
	EventTaskUpdated = "task.updated"
	EventTaskDeleted = "task.deleted"

	EventTicketCreated        = "ticket.created"
	EventTicketUpdated        = "ticket.updated"
	EventTicketStatusChanged  = "ticket.status_changed"
	EventTicketAssigned       = "ticket.assigned"
	EventTicketDeleted        = "ticket.deleted"
	EventTicketCommentCreated = "ticket.comment_created"
	EventTicketSLAWarning     = "ticket.sla_warning"
	EventTicketSLABreached    = "ticket.sla_breached"
	// EventTicketEmailReceived tells that an e-mail opened a ticket or
	// added a comment to one (after its ticket.created or
	// ticket.comment_created): the message, with its ticket.
	EventTicketEmailReceived = "ticket.email_received"
	// EventEmailRejected tells that an inbound message was accepted (250,
	// 202) and then rejected by a rule that needs the workspace (a limit,
	// an erased sender): the message, with the reason.
	EventEmailRejected = "email.rejected"

	EventCustomerCreated = "customer.created"
	EventCustomerUpdated = "customer.updated"
	EventCustomerDeleted = "customer.deleted"
	EventCustomerMerged  = "customer.merged"

	EventMemberInvited = "member.invited"
	EventMemberJoined  = "member.joined"
	EventMemberRemoved = "member.removed"

	// EventSubscriptionChanged tells that an organization's plan or its
	// Stripe subscription changed.
	EventSubscriptionChanged = "subscription.changed"

	EventAIJobSucceeded = "ai.job.succeeded"
	EventAIJobFailed    = "ai.job.failed"

	// EventAutomationRunFailed tells that a rule's run failed for good (a
	// step refused, or failing past its retries). A rule's webhook step
	// sends events of its own type, "automation.<name>" (AutomationEventType).
	EventAutomationRunFailed = "automation.run.failed"
)

// EventTypes are the event types an endpoint may subscribe to, by name or
// by their group ("deal.*"), or all of them ("*").
var EventTypes = []string{
	EventContactCreated, EventContactUpdated, EventContactDeleted, EventContactMerged,
	EventDealCreated, EventDealUpdated, EventDealStageChanged, EventDealWon, EventDealLost, EventDealDeleted,
	EventLeadCreated, EventLeadScored, EventLeadUpdated, EventLeadConverted, EventLeadDeleted,
	EventTaskCreated, EventTaskUpdated, EventTaskDeleted,
	EventTicketCreated, EventTicketUpdated, EventTicketStatusChanged, EventTicketAssigned, EventTicketDeleted, EventTicketCommentCreated,
	EventTicketSLAWarning, EventTicketSLABreached, EventTicketEmailReceived, EventEmailRejected,
	EventCustomerCreated, EventCustomerUpdated, EventCustomerDeleted, EventCustomerMerged,
	EventMemberInvited, EventMemberJoined, EventMemberRemoved,
	EventSubscriptionChanged,
	EventAIJobSucceeded, EventAIJobFailed,
	EventAutomationRunFailed,
}

// AutomationEventType tells whether typ is an event type a rule's webhook
// step may send: "automation." and a name (automation.escalated), which an
// endpoint subscribes to by name, as "automation.*" or "*".
func AutomationEventType(typ string) bool {
	return automationSlug.MatchString(typ) && typ != EventAutomationRunFailed
}

// DealChangeTypes are the event types of a deal's change from stage
// before to stage after: deal.updated, and when its stage moved,
// deal.stage_changed, then deal.won or deal.lost when it moved there.
func DealChangeTypes(before, after string) []string {
	types := []string{EventDealUpdated}
	if before != after {
		types = append(types, EventDealStageChanged)
		switch after {
		case StageWon:
			types = append(types, EventDealWon)
		case StageLost:
			types = append(types, EventDealLost)
		}
	}
	return types
}

// TicketChangeTypes are the event types of a ticket's change from before
// to after: ticket.updated, with ticket.status_changed when its status
// moved and ticket.assigned when its assignee changed (to none too:
// unassigned).
func TicketChangeTypes(before, after *Ticket) []string {
	types := []string{EventTicketUpdated}
	if before.Status != after.Status {
		types = append(types, EventTicketStatusChanged)
	}
	if !sameID(before.AgentID, after.AgentID) {
		types = append(types, EventTicketAssigned)
	}
	return types
}

// LeadChangeTypes are the event types of a lead's change: typ (lead.updated,
// lead.converted, or none when typ is "": a change the intake or the
// timeline made), and lead.scored when scoreMoved (its score or its
// probability moved).
func LeadChangeTypes(typ string, scoreMoved bool) []string {
	var types []string
	if typ != "" {
		types = append(types, typ)
	}
	if scoreMoved {
		types = append(types, EventLeadScored)
	}
	return types
}

// TicketSLAEventType is the event type of a fired SLA timer (fire is
// SLAWarningTimer or SLABreachTimer).
func TicketSLAEventType(fire string) string {
	if fire == SLABreachTimer {
		return EventTicketSLABreached
	}
	return EventTicketSLAWarning
}

// AIJobEventType is the event type of an AI job that ended in status (""
// for a status that emits none: a cancelled job tells nobody).
func AIJobEventType(status string) string {
	switch status {
	case AIJobSucceeded:
		return EventAIJobSucceeded
	case AIJobFailed:
		return EventAIJobFailed
	}
	return ""
}

// SubjectKey is the field under which a rule about an event's Subject
// (a ticket) sees the event's Object: the comment of
// ticket.comment_created, the message of ticket.email_received.
func SubjectKey(eventType string) string {
	if eventType == EventTicketEmailReceived {
		return "message"
	}
	return "comment"
}
