package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/sla"
)

// SLAPolicyVersion is one version of a workspace's SLA policy: a PUT
// records the next one, and a ticket keeps the version it was opened
// under (POST /helpdesk/sla-policy/apply moves open tickets to the
// latest).
type SLAPolicyVersion struct {
	OrgID     string `gorm:"primaryKey"`
	Version   int    `gorm:"primaryKey"`
	Policy    string // SLAPolicy's JSON
	CreatedBy string
	CreatedAt time.Time
}

func (SLAPolicyVersion) TableName() string { return "sla_policies" }

// Parsed is the version's policy.
func (v *SLAPolicyVersion) Parsed() (*SLAPolicy, error) {
	var p SLAPolicy
	if err := json.Unmarshal([]byte(v.Policy), &p); err != nil {
		return nil, fmt.Errorf("SLA policy %s/%d: %w", v.OrgID, v.Version, err)
	}
	return &p, nil
}

// SaveSLAPolicy validates p and records it as the workspace's next policy
// version, by the member or key named by, for the tickets opened from now
// on. escalation.reassignTo must name an active member of the workspace.
func SaveSLAPolicy(tx *gorm.DB, orgID string, p *SLAPolicy, by string, now time.Time) (*SLAPolicyVersion, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if r := p.Escalation.ReassignTo; r != nil {
		active, err := IsActiveMember(tx, orgID, *r)
		if err != nil {
			return nil, err
		}
		if !active {
			return nil, Invalid(FieldError{Field: "escalation.reassignTo", Code: "member", Message: "Must be null or an active member's id."})
		}
	}
	// One version at a time: the workspace's row is the lock.
	if err := LockForUpdate(tx).Select("id").Take(&Organization{}, "id = ?", orgID).Error; err != nil {
		return nil, err
	}
	var latest int
	if err := tx.Model(&SLAPolicyVersion{}).Where("org_id = ?", orgID).Select("COALESCE(MAX(version), 0)").Scan(&latest).Error; err != nil {
		return nil, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	v := &SLAPolicyVersion{OrgID: orgID, Version: latest + 1, Policy: string(body), CreatedBy: by, CreatedAt: now}
	return v, tx.Create(v).Error
}

// ErrNoSLAPolicy is the 404 of a workspace without an SLA policy.
var ErrNoSLAPolicy = Err(ErrNotFound, "not_found", "The workspace has no SLA policy; PUT one.")

// CurrentSLAPolicy is the workspace's latest policy version, or nil when
// it has none.
func CurrentSLAPolicy(db *gorm.DB, orgID string) (*SLAPolicyVersion, error) {
	var v SLAPolicyVersion
	err := db.Where("org_id = ?", orgID).Order("version DESC").Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &v, err
}

// SLAPolicyOf is version version of the workspace's policy.
func SLAPolicyOf(db *gorm.DB, orgID string, version int) (*SLAPolicy, error) {
	var v SLAPolicyVersion
	if err := db.Take(&v, "org_id = ? AND version = ?", orgID, version).Error; err != nil {
		return nil, err
	}
	return v.Parsed()
}

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

// HasSLA tells whether t has SLA clocks: whether an SLA workflow holds
// its timers.
func (t *Ticket) HasSLA() bool { return t.SLAState != nil }

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

// TicketSLAInput is the SLA workflow's input.
type TicketSLAInput struct {
	TicketID string `json:"ticketId"`
	OrgID    string `json:"orgId"`
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

// ApplySLAPolicy moves the workspace's open tickets (neither solved nor
// closed), locked, to its current policy version, at now: each clock
// keeps the business time it has run and takes the new targets of its
// ticket's priority (a kind without one ends); a first response not yet
// given and the resolution start now where they had no clock — on a
// ticket opened before any policy too. It returns the version, how many
// tickets it moved, and those whose clocks moved: their SLA workflows are
// to be woken (record.Tx.WakeTicketSLA, by the caller, in tx). With no
// policy it is a 404.
func ApplySLAPolicy(tx *gorm.DB, orgID string, now time.Time) (version, moved int, wake []*Ticket, err error) {
	v, err := CurrentSLAPolicy(tx, orgID)
	if err != nil {
		return 0, 0, nil, err
	}
	if v == nil {
		return 0, 0, nil, ErrNoSLAPolicy
	}
	p, err := v.Parsed()
	if err != nil {
		return 0, 0, nil, err
	}
	cal, err := p.Calendar()
	if err != nil {
		return 0, 0, nil, err
	}
	var tickets []Ticket
	if err := LockForUpdate(tx).Where("org_id = ? AND status NOT IN ?", orgID, []string{TicketSolved, TicketClosed}).
		Order("id").Find(&tickets).Error; err != nil {
		return 0, 0, nil, err
	}
	for i := range tickets {
		t := &tickets[i]
		s, err := SLAOf(t)
		if err != nil {
			return 0, 0, nil, err
		}
		if s == nil {
			s = &TicketSLA{}
		}
		s.PolicyVersion = v.Version
		s.retarget(p, t.Priority)
		for _, kind := range []string{SLAFirstResponse, SLAResolution} {
			if target, ok := p.Target(t.Priority, kind); ok && s.Clock(kind) == nil && (kind != SLAFirstResponse || t.FirstResponseAt == nil) {
				s.Clocks = append(s.Clocks, SLAClock{Kind: kind, Target: target, Since: &now})
			}
		}
		if t.Status == TicketPending {
			s.pause(cal, now)
		}
		moved, err := s.store(t, p, cal)
		if err != nil {
			return 0, 0, nil, err
		}
		if !moved {
			continue
		}
		if err := saveSLA(tx, t); err != nil {
			return 0, 0, nil, err
		}
		wake = append(wake, t)
	}
	return v.Version, len(tickets), wake, nil
}
