package models

import (
	"time"

	"gorm.io/gorm"
)

// Moving a workspace's open tickets to its latest SLA policy version
// (POST /helpdesk/sla-policy/apply).

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
