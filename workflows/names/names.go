// Package names is the one place for the names of the suite's workflows:
// the task queue, every workflow type and its Kind search attribute, the
// ID format of every workflow (built from business keys), and the signal
// and query names. Handlers, workers, activities, the recording of work
// (models/record) and tests import it.
//
// It is a package of its own, below package workflows, because the layers
// that record work in a transaction — activities, the recording package —
// must name the workflows they wake (a ticket's SLA, a webhook endpoint's
// delivery, a notification's push), and package workflows imports
// activities (its workflows call their methods). It imports nothing of the
// suite, so every layer may import it (docs/decisions.md, "Names").
package names

import (
	"strconv"

	"go.temporal.io/sdk/temporal"
)

// TaskQueue is the one task queue every suite worker polls.
const TaskQueue = "suite"

// Custom search attributes, set on every workflow the suite starts so that
// operators can filter in the Temporal UI (`OrgId = "…" AND Kind = "…"`).
// They must be registered on the namespace (Keyword type); the dev server
// and tests do it automatically, production does it once (deploy/README.md).
var (
	SearchAttrOrgID = temporal.NewSearchAttributeKeyKeyword("OrgId")
	SearchAttrKind  = temporal.NewSearchAttributeKeyKeyword("Kind")
)

// SearchAttributeNames lists the custom search attribute names (all Keyword).
var SearchAttributeNames = []string{SearchAttrOrgID.GetName(), SearchAttrKind.GetName()}

// SearchAttributes builds the attributes for a workflow of kind for org.
func SearchAttributes(orgID, kind string) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{SearchAttrKind.ValueSet(kind)}
	if orgID != "" {
		updates = append(updates, SearchAttrOrgID.ValueSet(orgID))
	}
	return temporal.NewSearchAttributes(updates...)
}

// Priority is the Temporal priority of a workflow started for org: the
// organization is its fairness key. Where the task queue has fairness on
// (matching.enableFairness: `suite temporal` turns it on, `suite dev`'s
// embedded server leaves it off), the tasks of the workflow and of its
// activities and children (which inherit its priority) are dispatched in
// turns across organizations instead of first come, first served: one
// organization's backlog of thousands of workflows does not queue
// another's behind it.
func Priority(orgID string) temporal.Priority {
	return temporal.Priority{FairnessKey: orgID}
}

// Workflow type names (registered under these names; started by name from
// the outbox).
const (
	OrgRegistrationWorkflow = "OrgRegistration"
	OrgSyncWorkflow         = "OrgSync"
)

// Kinds, the value of the Kind search attribute.
const (
	KindOrgRegistration = "org-registration"
	KindOrgSync         = "org-sync"
)

// OrgRegistrationID is the ID of an organization's registration: one per
// organization, ever.
func OrgRegistrationID(orgID string) string { return "org-registration/" + orgID }

// OrgSyncID is the ID of the identity-service sync that follows one change
// of an organization's name or members.
func OrgSyncID(orgID, changeID string) string { return "org-sync/" + orgID + "/" + changeID }

// LeadIntakeWorkflow processes one web-form (or API) lead submission.
const (
	LeadIntakeWorkflow = "LeadIntake"
	KindLeadIntake     = "lead-intake"
)

// LeadIntakeID is the ID of one submission's processing: the caller's
// Idempotency-Key, or a hash of the submission, so a resent form is
// processed once.
func LeadIntakeID(orgID, key string) string { return "lead-intake/" + orgID + "/" + key }

// TicketAutoCloseWorkflow closes a solved ticket after a delay.
const (
	TicketAutoCloseWorkflow = "TicketAutoClose"
	KindTicketAutoClose     = "ticket-close"
)

// TicketAutoCloseID is one solved state's timer: a ticket solved, reopened
// and solved again gets a new timer (generation n).
func TicketAutoCloseID(ticketID string, n int) string {
	return "ticket-close/" + ticketID + "/" + strconv.Itoa(n)
}

// TicketAutoCloseCancelWorkflow cancels the timer of a solved state the
// ticket has left (reopened, moved, deleted), so that the Temporal UI shows
// only live timers.
const (
	TicketAutoCloseCancelWorkflow = "TicketAutoCloseCancel"
	KindTicketAutoCloseCancel     = "ticket-close-cancel"
)

// TicketAutoCloseCancelID cancels the timer TicketAutoCloseID(ticketID, n):
// a solved state is left once, so its timer is cancelled once.
func TicketAutoCloseCancelID(ticketID string, n int) string {
	return "ticket-close-cancel/" + ticketID + "/" + strconv.Itoa(n)
}

// NotificationDeliveryWorkflow pushes one notification to the member's
// browsers (web push).
const (
	NotificationDeliveryWorkflow = "NotificationDelivery"
	KindNotificationDelivery     = "notification-delivery"
)

// NotificationDeliveryID is the ID of one notification's delivery: one per
// notification, ever.
func NotificationDeliveryID(notificationID string) string { return "notify/" + notificationID }

// AIJobWorkflow runs one AI job (summarize, action items, analyze).
const (
	AIJobWorkflow = "AIJob"
	KindAIJob     = "ai-job"
)

// AIJobID is the ID of a job's workflow: one per job, ever.
func AIJobID(jobID string) string { return "ai-job/" + jobID }

// SubscriptionChangeWorkflow carries one change of an organization's plan
// through Stripe: customer, subscription, payment, plan applied.
const (
	SubscriptionChangeWorkflow = "SubscriptionChange"
	KindSubscriptionChange     = "subscription-change"
	// SignalStripeEvent delivers a Stripe event (StripeEventSignal) that
	// concerns the change, relayed from the webhook through the outbox.
	SignalStripeEvent = "stripe-event"
	// QuerySubscriptionChangeStep answers the step the change is at.
	QuerySubscriptionChangeStep = "current-step"
)

// SubscriptionChangeID is the ID of one run of a change: the first run is
// subscription/<org>/<change>; billing-staff retry n runs as
// subscription/<org>/<change>/retry-<n> (each ID runs once, ever).
func SubscriptionChangeID(orgID, changeID string, retry int) string {
	id := "subscription/" + orgID + "/" + changeID
	if retry > 0 {
		id += "/retry-" + strconv.Itoa(retry)
	}
	return id
}

// InvitationEmailWorkflow e-mails one invitation to the invited address.
const (
	InvitationEmailWorkflow = "InvitationEmail"
	KindInvitationEmail     = "invitation-email"
)

// InvitationEmailID is the ID of one invitation's e-mail: one per
// invitation, ever (a resend is a new invitation).
func InvitationEmailID(invitationID string) string { return "invitation-email/" + invitationID }

// The e-mail channel's workflows: reading a received message into a ticket
// or a comment, sending a public reply to the ticket's requester, and
// mailing a support address its verification.
const (
	EmailIngestWorkflow = "EmailIngest"
	KindEmailIngest     = "email-ingest"
	EmailSendWorkflow   = "EmailSend"
	KindEmailSend       = "email-send"
	EmailVerifyWorkflow = "EmailAddressVerify"
	KindEmailVerify     = "email-verify"
)

// EmailIngestID is one received message's processing.
func EmailIngestID(orgID, inboundID string) string { return "email-ingest/" + orgID + "/" + inboundID }

// EmailIngestRetryID is retry retryID of the ingest of a rejected message
// (each read of a message has an id of its own).
func EmailIngestRetryID(orgID, inboundID, retryID string) string {
	return EmailIngestID(orgID, inboundID) + "/retry/" + retryID
}

// EmailSendID is one public reply's delivery by e-mail.
func EmailSendID(orgID, commentID string) string { return "email-send/" + orgID + "/" + commentID }

// EmailVerifyID is one support address's verification message.
func EmailVerifyID(orgID, addressID string) string { return "email-verify/" + orgID + "/" + addressID }

// WebhookEndpointWorkflow delivers one webhook endpoint's events, for as
// long as the endpoint exists (continuing as new).
const (
	WebhookEndpointWorkflow = "WebhookEndpoint"
	KindWebhookEndpoint     = "webhook-endpoint"
	// SignalWebhookWake tells it that deliveries were recorded.
	SignalWebhookWake = "webhook-wake"
)

// WebhookEndpointID is the ID of an endpoint's delivery workflow: one per
// endpoint, ever.
func WebhookEndpointID(orgID, endpointID string) string {
	return "webhook-endpoint/" + orgID + "/" + endpointID
}

// TicketSLAWorkflow holds one ticket's SLA timers (workflows.TicketSLA).
// Every change that moves the ticket's clocks wakes it in the change's
// transaction (signal-with-start).
const (
	TicketSLAWorkflow = "TicketSLA"
	KindTicketSLA     = "ticket-sla"
	// SignalTicketSLAWake tells the workflow that the clocks moved.
	SignalTicketSLAWake = "sla-wake"
)

// TicketSLAID is the ID of a ticket's SLA workflow: one per ticket.
func TicketSLAID(ticketID string) string { return "ticket-sla/" + ticketID }

// AutomationRunWorkflow carries out one match of an automation rule: its
// steps in order, its delays as durable timers, its waits for a change of
// the object it is about.
const (
	AutomationRunWorkflow = "AutomationRun"
	KindAutomationRun     = "automation"
	// SignalAutomationEvent tells a waiting run of a change of its object
	// (models.AutomationEvent).
	SignalAutomationEvent = "automation-event"
	// SignalAutomationRestart tells a run of an every_match rule that the
	// rule matched its object again: it starts over (a burst of changes
	// makes one run, not one each).
	SignalAutomationRestart = "automation-restart"
	// SignalAutomationCancel ends a run where it stands: an administrator
	// cancelled it, or disabled or deleted its rule.
	SignalAutomationCancel = "automation-cancel"
)

// AutomationRunID is the ID of the run of rule ruleID for the object
// objectID: one per object for a rule that runs once per object. A rule
// that runs on every match gives each run its own ID below it
// (AutomationRunEveryID).
func AutomationRunID(ruleID, objectID string) string { return "automation/" + ruleID + "/" + objectID }

// AutomationRunEveryID is the ID of run runID of an every_match rule.
func AutomationRunEveryID(ruleID, objectID, runID string) string {
	return AutomationRunID(ruleID, objectID) + "/" + runID
}

// FieldChangeWorkflow rewrites the values stored for a custom field after
// a change of its definition (its deletion), in batches.
const (
	FieldChangeWorkflow = "FieldChange"
	KindFieldChange     = "field-change"
)

// FieldChangeID is the ID of the change of custom field fieldID of orgID
// (one at a time per field).
func FieldChangeID(orgID, fieldID string) string { return "field-change/" + orgID + "/" + fieldID }

// FieldOptionsChangeID is the ID of change changeID of the options of
// custom field fieldID of orgID (a field's options may change many times;
// its deletion is FieldChangeID).
func FieldOptionsChangeID(orgID, fieldID, changeID string) string {
	return FieldChangeID(orgID, fieldID) + "/options/" + changeID
}

// FieldTypeChangeID is the ID of change changeID of the type of custom
// field fieldID of orgID (a field may change its type many times).
func FieldTypeChangeID(orgID, fieldID, changeID string) string {
	return FieldChangeID(orgID, fieldID) + "/type/" + changeID
}

// PersonMergeWorkflow merges a duplicate contact or customer into a
// survivor: what points at it moves, then it is folded in and deleted.
const (
	PersonMergeWorkflow = "PersonMerge"
	KindPersonMerge     = "person-merge"
)

// PersonMergeID is the ID of the merge of fromID into intoID in orgID.
func PersonMergeID(orgID, fromID, intoID string) string {
	return "merge/" + orgID + "/" + fromID + "->" + intoID
}

// ImportWorkflow reads an uploaded file into an organization's contacts,
// customers…, a chunk at a time; ExportWorkflow writes them out to one.
const (
	ImportWorkflow = "Import"
	KindImport     = "import"
	ExportWorkflow = "Export"
	KindExport     = "export"
)

// ImportID is the ID of import importID of orgID.
func ImportID(orgID, importID string) string { return "import/" + orgID + "/" + importID }

// ExportID is the ID of export exportID of orgID.
func ExportID(orgID, exportID string) string { return "export/" + orgID + "/" + exportID }

// ErasureWorkflow erases a person's data (GDPR article 17), a step at a
// time, once an OWNER has confirmed it.
const (
	ErasureWorkflow = "Erasure"
	KindErasure     = "erasure"
)

// ErasureID is the ID of erasure erasureID of orgID.
func ErasureID(orgID, erasureID string) string { return "erasure/" + orgID + "/" + erasureID }
