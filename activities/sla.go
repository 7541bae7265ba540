package activities

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// SLA are the activities of a ticket's SLA workflow: read its timers, and
// fire one.
type SLA struct {
	DB *gorm.DB
}

// SLAPlan is what the workflow waits for: Timers in order; Live is false
// when the ticket is gone or has no clock left (the workflow ends).
type SLAPlan struct {
	Timers []models.SLATimer `json:"timers"`
	Live   bool              `json:"live"`
}

// SLATimers reads the ticket's timers (models.SLATimers).
func (a *SLA) SLATimers(ctx context.Context, ticketID string) (SLAPlan, error) {
	timers, live, err := models.SLATimers(a.DB.WithContext(ctx), ticketID)
	return SLAPlan{Timers: timers, Live: live}, err
}

// SLAFired is what firing a timer did: the notifications it stored for
// members with a browser subscribed, for the workflow to push, and the
// ticket's timers after it (read in the same transaction: the workflow
// needs no second read).
type SLAFired struct {
	Push []string `json:"push"`
	Plan SLAPlan  `json:"plan"`
}

// FireSLATimer fires timer on the ticket, once (models.FireSLATimer), in
// one transaction with what it sets off (tell), and returns the ticket's
// timers after it: a warning tells the assignee
// (sla_warning); a breach tells the assignee and the workspace's admins
// (sla_breached) and escalates as the policy says — priority one step up,
// reassignment. Each is told to webhooks too (ticket.sla_warning,
// ticket.sla_breached, with the ticket; an escalation's ticket.updated).
// A timer that fired before, or no longer stands, does nothing: so a
// retried or repeated activity, or one that runs long after its due time
// because the worker or Temporal was down, fires it exactly once.
func (a *SLA) FireSLATimer(ctx context.Context, ticketID string, timer models.SLATimer) (SLAFired, error) {
	var out SLAFired
	err := a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		out = SLAFired{}
		t, fired, err := models.FireSLATimer(tx, ticketID, timer)
		if err == nil && fired {
			err = a.tell(tx, t, timer, &out)
		}
		if err != nil {
			return err
		}
		out.Plan.Timers, out.Plan.Live, err = models.SLATimers(tx, ticketID)
		return err
	})
	return out, err
}

// tell records what a fired timer sets off (FireSLATimer), in its
// transaction.
func (a *SLA) tell(tx *gorm.DB, t *models.Ticket, timer models.SLATimer, out *SLAFired) error {
	now := models.Now()
	typ, event := "sla_warning", "ticket.sla_warning"
	if timer.Fire == models.SLABreachTimer {
		typ, event = "sla_breached", "ticket.sla_breached"
		var err error
		if t, err = a.escalate(tx, t, now); err != nil {
			return err
		}
	}
	if err := emit(tx, models.Event{OrgID: t.OrgID, Type: event, Object: views.ToTicket(t)}); err != nil {
		return err
	}
	recipients, err := slaRecipients(tx, t, timer.Fire == models.SLABreachTimer)
	if err != nil || len(recipients) == 0 {
		return err
	}
	var subscribed []string
	if err := tx.Model(&models.PushSubscription{}).Where("org_id = ? AND member_id IN ?", t.OrgID, recipients).
		Distinct("member_id").Pluck("member_id", &subscribed).Error; err != nil {
		return err
	}
	for _, member := range recipients {
		n := &models.Notification{ID: models.DerivedID(t.ID, timer.Kind, timer.Fire, timer.At.UTC().Format(time.RFC3339Nano), member),
			OrgID: t.OrgID, MemberID: member, Type: typ, Title: slaTitle(t, timer), Body: t.Subject,
			ResourceType: "ticket", ResourceID: t.ID, CreatedAt: now}
		created, err := models.Notify(tx, n)
		if err != nil {
			return err
		}
		if created && slices.Contains(subscribed, member) {
			out.Push = append(out.Push, n.ID)
		}
	}
	return nil
}

// escalate applies the policy's escalation to a breached ticket.
func (a *SLA) escalate(tx *gorm.DB, t *models.Ticket, now time.Time) (*models.Ticket, error) {
	s, err := models.SLAOf(t)
	if err != nil {
		return nil, err
	}
	v, err := models.SLAPolicyOf(tx, t.OrgID, s.PolicyVersion)
	if err != nil {
		return nil, err
	}
	var u models.TicketUpdate
	if v.Escalation.RaisePriority {
		if i := slices.Index(models.TicketPriorities, t.Priority); i >= 0 && i+1 < len(models.TicketPriorities) {
			u.Priority = &models.TicketPriorities[i+1]
		}
	}
	if r := v.Escalation.ReassignTo; r != nil && (t.AgentID == nil || *t.AgentID != *r) {
		active, err := models.IsActiveMember(tx, t.OrgID, *r)
		if err != nil {
			return nil, err
		}
		if active {
			u.SetAgent, u.Agent = true, r
		}
	}
	if u.Priority == nil && !u.SetAgent {
		return t, nil
	}
	after, change, err := models.UpdateTicket(tx, t.OrgID, t.ID, u, models.ActorSystem, now)
	if err != nil {
		return nil, err
	}
	events, err := views.TicketChangeEvents(&change.Before, after)
	if err != nil {
		return nil, err
	}
	return after, emit(tx, events...)
}

// slaRecipients are the members a timer of t tells: its assignee, and on
// a breach the workspace's active owners and admins too.
func slaRecipients(tx *gorm.DB, t *models.Ticket, breach bool) ([]string, error) {
	var out []string
	if t.AgentID != nil {
		out = append(out, *t.AgentID)
	}
	if !breach {
		return out, nil
	}
	admins, err := models.ActiveAdminIDs(tx, t.OrgID)
	if err != nil {
		return nil, err
	}
	for _, id := range admins {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

var slaKindNames = map[string]string{
	models.SLAFirstResponse: "first response", models.SLANextResponse: "next response", models.SLAResolution: "resolution",
}

func slaTitle(t *models.Ticket, timer models.SLATimer) string {
	what := "due soon"
	if timer.Fire == models.SLABreachTimer {
		what = "breached"
	}
	return "Ticket #" + models.Itoa(t.Number) + ": " + slaKindNames[timer.Kind] + " target " + what
}
