package sla

import "time"

// A Clock measures one target — a first response, a next response, a
// resolution — in a calendar's business time. It runs from its start,
// stops while paused (a ticket waiting on its customer) and runs on when
// resumed; it falls due once Target of business time has run.
type Clock struct {
	Target time.Duration
	// Used is the business time run before Since.
	Used time.Duration
	// Since is when the clock last started running; zero while paused.
	Since time.Time
}

// Start is a clock of target running from at.
func Start(target time.Duration, at time.Time) Clock {
	return Clock{Target: target, Since: at}
}

// Running tells whether the clock runs (is not paused).
func (k Clock) Running() bool { return !k.Since.IsZero() }

// Pause stops the clock at at, keeping the business time it ran.
func (k Clock) Pause(c Calendar, at time.Time) Clock {
	if !k.Running() {
		return k
	}
	k.Used += c.Between(k.Since, at)
	k.Since = time.Time{}
	return k
}

// Resume runs a paused clock on from at.
func (k Clock) Resume(at time.Time) Clock {
	if k.Running() {
		return k
	}
	k.Since = at
	return k
}

// Due is when the clock falls due (ok is false while it is paused, when
// it has no due time).
func (k Clock) Due(c Calendar) (due time.Time, ok bool, err error) {
	if !k.Running() {
		return time.Time{}, false, nil
	}
	due, err = c.Add(k.Since, k.Target-k.Used)
	return due, err == nil, err
}

// Retarget gives the clock another target (a priority changed), keeping
// the business time it has run.
func (k Clock) Retarget(target time.Duration) Clock {
	k.Target = target
	return k
}
