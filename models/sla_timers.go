package models

import (
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"
)

// The timers a ticket's SLA workflow sets and fires: a warning before
// each running clock's due time and the breach at it.

// TicketSLAInput is the SLA workflow's input.
type TicketSLAInput struct {
	TicketID string `json:"ticketId"`
	OrgID    string `json:"orgId"`
	// LocalSteps: the workflow reads and fires its timers as local
	// activities, inside its workflow task, rather than through the
	// server's activity queue. Every run started since 2026-11-30 has it
	// (and every run continued as new); a run started before replays its
	// history without it, with the activities it ran then.
	LocalSteps bool `json:"localSteps,omitempty"`
}

// SLA timer kinds: a warning before a due time, and the breach at it.
const (
	SLAWarningTimer = "warning"
	SLABreachTimer  = "breach"
)

// SLATimer is one timer of a ticket's SLA workflow: the warning or the
// breach of a clock, at At.
type SLATimer struct {
	Kind string    `json:"kind"` // the clock's: firstResponse, nextResponse, resolution
	Fire string    `json:"fire"` // SLAWarningTimer or SLABreachTimer
	At   time.Time `json:"at"`
}

// SLATimers are the timers ticket ticketID's SLA workflow is to set now:
// every warning and breach not yet fired of its running clocks (none
// while they wait, or are all met: a change may start them again). ok is
// false once the ticket is closed (final) or deleted — the workflow ends;
// it is never started again, as Temporal refuses to reuse a finished
// workflow's ID for a signal-with-start.
func SLATimers(db *gorm.DB, ticketID string) (timers []SLATimer, ok bool, err error) {
	var t Ticket
	err = db.Select("id", "status", "sla_state").Take(&t, "id = ?", ticketID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil || t.Status == TicketClosed {
		return nil, false, err
	}
	s, err := SLAOf(&t)
	if err != nil || s == nil {
		return nil, false, err
	}
	for _, k := range s.Clocks {
		if k.WarnAt != nil && !k.Warned && !k.Breached {
			timers = append(timers, SLATimer{Kind: k.Kind, Fire: SLAWarningTimer, At: *k.WarnAt})
		}
		if k.DueAt != nil && !k.Breached {
			timers = append(timers, SLATimer{Kind: k.Kind, Fire: SLABreachTimer, At: *k.DueAt})
		}
	}
	slices.SortFunc(timers, func(a, b SLATimer) int { return a.At.Compare(b.At) })
	return timers, true, nil
}

// FireSLATimer records timer as fired on the ticket, locked, once: a
// warning marks its clock warned; a breach marks it breached and adds it
// to the ticket's breaches. It returns the ticket and whether the timer
// fired now — false when it fired before, or no longer stands (the clock
// was met, paused or re-planned since the workflow read it, or the ticket
// is gone).
func FireSLATimer(tx *gorm.DB, ticketID string, timer SLATimer) (*Ticket, bool, error) {
	var t Ticket
	err := LockForUpdate(tx).Take(&t, "id = ?", ticketID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	s, err := SLAOf(&t)
	if err != nil || s == nil {
		return nil, false, err
	}
	k := s.Clock(timer.Kind)
	switch {
	case k == nil:
		return &t, false, nil
	case timer.Fire == SLAWarningTimer && k.WarnAt != nil && k.WarnAt.Equal(timer.At) && !k.Warned && !k.Breached:
		k.Warned = true
	case timer.Fire == SLABreachTimer && k.DueAt != nil && k.DueAt.Equal(timer.At) && !k.Breached:
		k.Breached = true
		s.Breaches = append(s.Breaches, SLABreach{Kind: k.Kind, At: timer.At})
	default:
		return &t, false, nil
	}
	p, err := SLAPolicyOf(tx, t.OrgID, s.PolicyVersion)
	if err != nil {
		return nil, false, err
	}
	cal, err := p.Calendar()
	if err != nil {
		return nil, false, err
	}
	if _, err := s.store(&t, p, cal); err != nil {
		return nil, false, err
	}
	return &t, true, saveSLA(tx, &t)
}
