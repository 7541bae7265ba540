package activities

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
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

// SLAFired is what firing a timer did: the ticket's timers after it (read
// in the same transaction: the workflow needs no second read). Push, the
// notifications for the workflow to push, is no longer set — the push is
// started with each notification (record.Tx.Notify) — and stays for the
// executions that recorded it before (docs/decisions.md, "Notifications").
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
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		out = SLAFired{}
		t, fired, err := models.FireSLATimer(tx.DB, ticketID, timer)
		if err == nil && fired {
			err = a.tell(tx, t, timer)
		}
		if err != nil {
			return err
		}
		out.Plan.Timers, out.Plan.Live, err = models.SLATimers(tx.DB, ticketID)
		return err
	})
	return out, err
}

// tell records what a fired timer sets off (FireSLATimer), in its
// transaction.
func (a *SLA) tell(tx *record.Tx, t *models.Ticket, timer models.SLATimer) error {
	now := models.Now()
	event := models.TicketSLAEventType(timer.Fire)
	if timer.Fire == models.SLABreachTimer {
		var err error
		if t, err = a.escalate(tx, t, now); err != nil {
			return err
		}
	}
	if err := tx.Emit(models.Event{OrgID: t.OrgID, Type: event, Object: views.ToTicket(t)}); err != nil {
		return err
	}
	recipients, err := slaRecipients(tx.DB, t, timer.Fire == models.SLABreachTimer)
	if err != nil || len(recipients) == 0 {
		return err
	}
	for _, member := range recipients {
		n := models.SLANotice(t, timer, member, now)
		n.ID = models.DerivedID(t.ID, timer.Kind, timer.Fire, timer.At.UTC().Format(time.RFC3339Nano), member)
		if _, err := tx.Notify(n); err != nil {
			return err
		}
	}
	return nil
}

// escalate applies the policy's escalation to a breached ticket.
func (a *SLA) escalate(tx *record.Tx, t *models.Ticket, now time.Time) (*models.Ticket, error) {
	s, err := models.SLAOf(t)
	if err != nil {
		return nil, err
	}
	v, err := models.SLAPolicyOf(tx.DB, t.OrgID, s.PolicyVersion)
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
		active, err := models.IsActiveMember(tx.DB, t.OrgID, *r)
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
	after, change, err := models.UpdateTicket(tx.DB, t.OrgID, t.ID, u, models.ActorSystem, now)
	if err != nil {
		return nil, err
	}
	if change.SLAMoved {
		if err := tx.WakeTicketSLA(after); err != nil {
			return nil, err
		}
	}
	events, err := views.TicketChangeEvents(&change.Before, after)
	if err != nil {
		return nil, err
	}
	return after, tx.Emit(events...)
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
