// Package sla is the arithmetic of service-level targets: which minutes
// count (a Calendar of business hours, in a time zone, with holidays) and
// when a target falls due (a Clock that runs, pauses and resumes). It is
// pure — no clock of its own, no I/O — so that the due times a ticket
// shows, and the timers its workflow sets, come from one function that is
// tested on its own (calendar_test.go: overnight, weekends, holidays,
// daylight saving time, pauses across days).
package sla

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// A Calendar tells which instants are business time: on each weekday, in
// Location, the open Intervals, except on Holidays (dates in Location,
// closed all day). Minutes count as they pass: an interval that spans a
// daylight saving change is an hour shorter or longer than its clock
// times say.
type Calendar struct {
	Location *time.Location
	// Week holds each weekday's open intervals (indexed by time.Weekday),
	// in order and not overlapping.
	Week [7][]Interval
	// Holidays are closed days, as "2006-01-02" dates in Location.
	Holidays map[string]bool
}

// An Interval is the part of a day from Start to End, in minutes after
// local midnight: 0 ≤ Start < End ≤ 1440 ("24:00" ends the day).
type Interval struct{ Start, End int }

// maxSearchDays bounds how far Add looks for open time: a calendar open
// at least once a week finds it within days, unless the holidays close
// years on end.
const maxSearchDays = 5 * 366

// ErrNeverOpen is Add's error for a calendar with no open time ahead.
var ErrNeverOpen = errors.New("the calendar has no open time ahead")

// Always is the 24x7 calendar: every minute counts, but on holidays
// (taken as UTC dates).
func Always(holidays ...string) Calendar {
	c := Calendar{Location: time.UTC, Holidays: holidaySet(holidays)}
	for d := range c.Week {
		c.Week[d] = []Interval{{0, 24 * 60}}
	}
	return c
}

func holidaySet(dates []string) map[string]bool {
	set := make(map[string]bool, len(dates))
	for _, d := range dates {
		set[d] = true
	}
	return set
}

// Validate checks the calendar's shape: a location, intervals within the
// day, in order and apart, and some open time in the week.
func (c Calendar) Validate() error {
	if c.Location == nil {
		return errors.New("no time zone")
	}
	open := false
	for d, day := range c.Week {
		for i, iv := range day {
			if iv.Start < 0 || iv.End > 24*60 || iv.Start >= iv.End {
				return fmt.Errorf("%s: interval %d is not a part of the day", time.Weekday(d), i)
			}
			if i > 0 && iv.Start < day[i-1].End {
				return fmt.Errorf("%s: interval %d overlaps the one before it", time.Weekday(d), i)
			}
			open = true
		}
	}
	if !open {
		return errors.New("no open hours in the week")
	}
	return nil
}

// openOn calls fn with each open interval of the local date of day (any
// instant of it), as instants, in order; fn returns false to stop. It
// reports whether fn stopped it.
func (c Calendar) openOn(day time.Time, fn func(start, end time.Time) bool) bool {
	y, m, d := day.Date()
	if c.Holidays[day.Format(time.DateOnly)] {
		return false
	}
	for _, iv := range c.Week[day.Weekday()] {
		start := time.Date(y, m, d, 0, iv.Start, 0, 0, c.Location)
		end := time.Date(y, m, d, 0, iv.End, 0, 0, c.Location)
		if !end.After(start) { // an interval inside a skipped hour
			continue
		}
		if fn(start, end) {
			return true
		}
	}
	return false
}

// nextDay is local midnight of the day after day's date.
func (c Calendar) nextDay(day time.Time) time.Time {
	y, m, d := day.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, c.Location)
}

// Add is the instant at which d of business time has passed since from:
// from itself when d is 0 (or less) — even outside business hours.
func (c Calendar) Add(from time.Time, d time.Duration) (time.Time, error) {
	if d <= 0 {
		return from, nil
	}
	left, due := d, time.Time{}
	day := from.In(c.Location)
	for range maxSearchDays {
		if c.openOn(day, func(start, end time.Time) bool {
			if start.Before(from) {
				start = from
			}
			if !end.After(start) {
				return false
			}
			if open := end.Sub(start); left > open {
				left -= open
				return false
			}
			due = start.Add(left)
			return true
		}) {
			return due, nil
		}
		day = c.nextDay(day)
	}
	return time.Time{}, ErrNeverOpen
}

// Between is the business time from from to to (0 when to is not after
// from).
func (c Calendar) Between(from, to time.Time) time.Duration {
	var sum time.Duration
	for day := from.In(c.Location); day.Before(to); day = c.nextDay(day) {
		c.openOn(day, func(start, end time.Time) bool {
			start, end = latest(start, from), earliest(end, to)
			if end.After(start) {
				sum += end.Sub(start)
			}
			return false
		})
	}
	return sum
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// SortedHolidays lists the calendar's holidays in order.
func (c Calendar) SortedHolidays() []string {
	out := make([]string, 0, len(c.Holidays))
	for d := range c.Holidays {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
