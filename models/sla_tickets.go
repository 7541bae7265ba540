package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/sla"
)

// A ticket's SLA state and its clocks: planned when the ticket is opened
// and moved by each change of it (planSLA), with their due and warning
// times stored on the ticket.

// TicketSLA is a ticket's SLA state (Ticket.SLAState): the clocks that
// still run or wait, and what has happened.
type TicketSLA struct {
	PolicyVersion int `json:"policyVersion"`
	// Clocks are the targets not yet met: a met target's clock is gone.
	Clocks           []SLAClock  `json:"clocks"`
	FirstRespondedAt *time.Time  `json:"firstRespondedAt"`
	Breaches         []SLABreach `json:"breaches"`
}

// SLAClock is one target's clock (sla.Clock) with its due and warning
// times, and whether they fired.
type SLAClock struct {
	Kind   string        `json:"kind"`
	Target time.Duration `json:"target"`
	Used   time.Duration `json:"used"`
	// Since is when it last started running; nil while paused.
	Since    *time.Time `json:"since"`
	DueAt    *time.Time `json:"dueAt"`
	WarnAt   *time.Time `json:"warnAt"`
	Warned   bool       `json:"warned"`
	Breached bool       `json:"breached"`
}

// SLABreach is a target missed.
type SLABreach struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
}

func (k *SLAClock) clock() sla.Clock {
	c := sla.Clock{Target: k.Target, Used: k.Used}
	if k.Since != nil {
		c.Since = *k.Since
	}
	return c
}

func (k *SLAClock) set(c sla.Clock) {
	k.Target, k.Used, k.Since = c.Target, c.Used, nil
	if c.Running() {
		since := c.Since
		k.Since = &since
	}
}

// Clock is the state's clock of kind, or nil.
func (s *TicketSLA) Clock(kind string) *SLAClock {
	for i := range s.Clocks {
		if s.Clocks[i].Kind == kind {
			return &s.Clocks[i]
		}
	}
	return nil
}

// Paused tells whether the ticket's clocks wait (it is pending).
func (s *TicketSLA) Paused() bool {
	return len(s.Clocks) > 0 && !slices.ContainsFunc(s.Clocks, func(k SLAClock) bool { return k.Since != nil })
}

// HasSLA tells whether t runs under an SLA policy (it has an SLA state,
// with or without clocks).
func (t *Ticket) HasSLA() bool { return t.SLAState != nil }

// HasSLATimer tells whether t has a timer to wait for: a clock that runs
// and has not breached (its next due time is set). Only such a ticket
// needs an SLA workflow: a ticket opened without one gets none, and the
// change that first sets one starts it (record.Tx.WakeTicketSLA).
func (t *Ticket) HasSLATimer() bool { return t.SLANextDueAt != nil }

// SLAOf reads a ticket's SLA state (nil: none applies).
func SLAOf(t *Ticket) (*TicketSLA, error) {
	if t.SLAState == nil {
		return nil, nil
	}
	var s TicketSLA
	if err := json.Unmarshal([]byte(*t.SLAState), &s); err != nil {
		return nil, fmt.Errorf("ticket %s's SLA state: %w", t.ID, err)
	}
	return &s, nil
}

// planSLA moves ticket t's SLA clocks for its change from before (nil:
// t is being opened) and the comment cm added with it (nil: none), at
// now, and keeps t's SLA columns; the caller saves t. A ticket opened
// while its workspace has a policy gets clocks for the targets of its
// priority: first response and resolution. Then:
//   - an agent's public reply meets the first response and the next
//     response; a customer's comment starts the next response, unless
//     one already runs (the first unanswered comment counts);
//   - pending pauses every clock, leaving pending resumes them;
//   - solved meets the resolution and ends every clock; reopening starts
//     the resolution again from the reopen; closed ends every clock;
//   - another priority gives the clocks its targets, keeping the time
//     they ran (none: the clock ends).
//
// It reports whether the clocks moved: then t's SLA workflow is to be
// woken to set its timers (record.Tx.WakeTicketSLA, by the caller, in tx).
func planSLA(tx *gorm.DB, before, t *Ticket, cm *TicketComment, now time.Time) (moved bool, err error) {
	var (
		s *TicketSLA
		p *SLAPolicy
	)
	if before == nil {
		v, err := CurrentSLAPolicy(tx, t.OrgID)
		if err != nil || v == nil {
			return false, err
		}
		if p, err = v.Parsed(); err != nil {
			return false, err
		}
		s = &TicketSLA{PolicyVersion: v.Version}
		for _, kind := range []string{SLAFirstResponse, SLAResolution} {
			if target, ok := p.Target(t.Priority, kind); ok {
				s.Clocks = append(s.Clocks, SLAClock{Kind: kind, Target: target, Since: &t.CreatedAt})
			}
		}
	} else {
		if s, err = SLAOf(t); err != nil || s == nil {
			return false, err
		}
		if p, err = SLAPolicyOf(tx, t.OrgID, s.PolicyVersion); err != nil {
			return false, err
		}
	}
	cal, err := p.Calendar()
	if err != nil {
		return false, err
	}
	if before != nil {
		s.move(p, cal, before, t, cm, now)
	} else if t.Status == TicketPending {
		s.pause(cal, now)
	}
	return s.store(t, p, cal)
}

// move applies a change of the ticket from before to t (planSLA).
func (s *TicketSLA) move(p *SLAPolicy, cal sla.Calendar, before, t *Ticket, cm *TicketComment, now time.Time) {
	if cm != nil && cm.Public {
		if cm.AuthorType == AuthorCustomer {
			if s.Clock(SLANextResponse) == nil {
				if target, ok := p.Target(t.Priority, SLANextResponse); ok {
					s.Clocks = append(s.Clocks, SLAClock{Kind: SLANextResponse, Target: target, Since: &now})
				}
			}
		} else {
			if s.Clock(SLAFirstResponse) != nil {
				s.FirstRespondedAt = &now
			}
			s.end(SLAFirstResponse, SLANextResponse)
		}
	}
	switch {
	case t.Status == before.Status:
	case t.Status == TicketSolved, t.Status == TicketClosed:
		s.end(SLAFirstResponse, SLANextResponse, SLAResolution)
	case before.Status == TicketSolved:
		if target, ok := p.Target(t.Priority, SLAResolution); ok {
			s.end(SLAResolution)
			s.Clocks = append(s.Clocks, SLAClock{Kind: SLAResolution, Target: target, Since: &now})
		}
	}
	if t.Status == TicketPending {
		s.pause(cal, now)
	} else if before.Status == TicketPending {
		for i := range s.Clocks {
			s.Clocks[i].set(s.Clocks[i].clock().Resume(now))
		}
	}
	if t.Priority != before.Priority {
		s.retarget(p, t.Priority)
	}
}

// retarget gives the clocks the policy's targets for priority, keeping
// the time they ran; a kind without a target ends.
func (s *TicketSLA) retarget(p *SLAPolicy, priority string) {
	kept := s.Clocks[:0]
	for _, k := range s.Clocks {
		if target, ok := p.Target(priority, k.Kind); ok {
			k.set(k.clock().Retarget(target))
			kept = append(kept, k)
		}
	}
	s.Clocks = kept
}

func (s *TicketSLA) pause(cal sla.Calendar, now time.Time) {
	for i := range s.Clocks {
		s.Clocks[i].set(s.Clocks[i].clock().Pause(cal, now))
	}
}

// end removes the clocks of kinds (met, or moot).
func (s *TicketSLA) end(kinds ...string) {
	s.Clocks = slices.DeleteFunc(s.Clocks, func(k SLAClock) bool { return slices.Contains(kinds, k.Kind) })
}

// store works out the clocks' due and warning times and writes the state
// and its columns on t. It reports whether they moved: the caller wakes
// the ticket's SLA workflow then (but the workflow itself, firing a timer,
// reads them anyway).
func (s *TicketSLA) store(t *Ticket, p *SLAPolicy, cal sla.Calendar) (moved bool, err error) {
	t.SLANextDueAt, t.SLANextWarnAt = nil, nil
	for i := range s.Clocks {
		k := &s.Clocks[i]
		k.DueAt, k.WarnAt = nil, nil
		due, running, err := k.clock().Due(cal)
		if err != nil {
			return false, err
		}
		if !running {
			continue
		}
		k.DueAt = &due
		if p.WarnBefore > 0 && !k.Breached { // kept once warned: the ticket is at risk until met or breached
			early := k.clock().Retarget(max(k.Target-time.Duration(p.WarnBefore)*time.Minute, 0))
			warn, _, err := early.Due(cal)
			if err != nil {
				return false, err
			}
			k.WarnAt = &warn
		}
		if !k.Breached && (t.SLANextDueAt == nil || due.Before(*t.SLANextDueAt)) {
			t.SLANextDueAt = k.DueAt
		}
		if k.WarnAt != nil && (t.SLANextWarnAt == nil || k.WarnAt.Before(*t.SLANextWarnAt)) {
			t.SLANextWarnAt = k.WarnAt
		}
	}
	t.SLABreached = len(s.Breaches) > 0
	body, err := json.Marshal(s)
	if err != nil {
		return false, err
	}
	state := string(body)
	moved = t.SLAState == nil || *t.SLAState != state
	t.SLAState = &state
	return moved, nil
}

// saveSLA writes t's SLA columns alone (store set them).
func saveSLA(tx *gorm.DB, t *Ticket) error {
	return tx.Model(t).Select("sla_state", "sla_breached", "sla_next_due_at", "sla_next_warn_at").Updates(t).Error
}
