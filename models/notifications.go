package models

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Notification types. Every notification the suite sends to a member is
// built by one of the constructors below, where its title and body are
// worded; it is stored and pushed by record.Tx.Notify.
const (
	NotifyTicketAssigned  = "ticket_assigned"
	NotifyCustomerReplied = "customer_replied"
	NotifyLeadAssigned    = "lead_assigned"
	NotifySLAWarning      = "sla_warning"
	NotifySLABreached     = "sla_breached"
	NotifyWebhookDisabled = "webhook_disabled"
	// NotifyAutomation: a rule's notify step (AutomationNotice).
	NotifyAutomation = "automation"
)

// NotificationDeliveryInput is the input of a notification's push, the
// NotificationDelivery workflow (workflows.NotificationDelivery).
type NotificationDeliveryInput struct {
	NotificationID string `json:"notificationId"`
	OrgID          string `json:"orgId"`
}

// TicketAssignedNotice tells memberID that ticket t was assigned to them.
func TicketAssignedNotice(t *Ticket, memberID string, now time.Time) *Notification {
	return ticketNotice(t, memberID, NotifyTicketAssigned, "Ticket #"+Itoa(t.Number)+" assigned to you", now)
}

// CustomerRepliedNotice tells memberID, ticket t's assignee, that its
// customer replied.
func CustomerRepliedNotice(t *Ticket, memberID string, now time.Time) *Notification {
	return ticketNotice(t, memberID, NotifyCustomerReplied, "Customer replied on ticket #"+Itoa(t.Number), now)
}

var slaKindNames = map[string]string{
	SLAFirstResponse: "first response", SLANextResponse: "next response", SLAResolution: "resolution",
}

// SLANotice tells memberID that timer of ticket t fired: a target due
// soon (warning) or breached.
func SLANotice(t *Ticket, timer SLATimer, memberID string, now time.Time) *Notification {
	typ, what := NotifySLAWarning, "due soon"
	if timer.Fire == SLABreachTimer {
		typ, what = NotifySLABreached, "breached"
	}
	return ticketNotice(t, memberID, typ, "Ticket #"+Itoa(t.Number)+": "+slaKindNames[timer.Kind]+" target "+what, now)
}

func ticketNotice(t *Ticket, memberID, typ, title string, now time.Time) *Notification {
	return &Notification{OrgID: t.OrgID, MemberID: memberID, Type: typ, Title: title, Body: t.Subject,
		ResourceType: "ticket", ResourceID: t.ID, CreatedAt: now}
}

// LeadAssignedNotice tells memberID that lead l was assigned to them.
func LeadAssignedNotice(l *Lead, memberID string, now time.Time) *Notification {
	body := l.Name
	if body == "" {
		body = l.Email
	}
	if l.Company != "" {
		body += " (" + l.Company + ")"
	}
	return &Notification{OrgID: l.OrgID, MemberID: memberID, Type: NotifyLeadAssigned, Title: "New lead assigned to you", Body: body,
		ResourceType: "lead", ResourceID: l.ID, CreatedAt: now}
}

// WebhookDisabledNotice tells memberID, an admin, that delivery disabled
// endpoint e, and why.
func WebhookDisabledNotice(e *WebhookEndpoint, reason, memberID string, now time.Time) *Notification {
	return &Notification{OrgID: e.OrgID, MemberID: memberID, Type: NotifyWebhookDisabled, Title: "A webhook endpoint was disabled",
		Body: e.URL + ": " + reason, ResourceType: "webhook_endpoint", ResourceID: e.ID, CreatedAt: now}
}

// Notify stores a notification once (give it an id derived from the event
// to make the call idempotent) and reports whether it was new. It only
// stores: record.Tx.Notify stores through it and starts the push.
func Notify(tx *gorm.DB, n *Notification) (bool, error) {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(n)
	return res.RowsAffected == 1, res.Error
}

// PushSubscribed tells whether member has a browser subscribed to web push
// in the organization: a notification of a member without one is stored
// and listed, but not pushed.
func PushSubscribed(db *gorm.DB, orgID, memberID string) (bool, error) {
	var n int64
	err := db.Model(&PushSubscription{}).Where("org_id = ? AND member_id = ?", orgID, memberID).Limit(1).Count(&n).Error
	return n > 0, err
}
