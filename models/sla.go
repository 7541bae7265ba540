package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/business-suite/suite/internal/sla"
)

// A workspace's SLA policy: targets per ticket priority, measured in its
// business hours (internal/sla does the arithmetic).

// SLA target kinds.
const (
	SLAFirstResponse = "firstResponse"
	SLANextResponse  = "nextResponse"
	SLAResolution    = "resolution"
)

// Limits of a policy.
const (
	// MaxSLATargetMinutes is the longest target: a year of business time.
	MaxSLATargetMinutes = 366 * 24 * 60
	// MaxSLAHolidays is how many holidays a policy may list.
	MaxSLAHolidays = 1000
	// AlwaysOpen is the businessHours of a policy that counts every minute.
	AlwaysOpen = "24x7"
)

// SLAPolicy is a workspace's service-level policy as the API reads and
// writes it (PUT /helpdesk/sla-policy).
type SLAPolicy struct {
	// BusinessHours is "24x7" or {"timeZone", "week"} (BusinessHours);
	// it is kept as sent and read by Validate and Calendar.
	BusinessHours json.RawMessage       `json:"businessHours"`
	Holidays      []string              `json:"holidays"`
	Targets       map[string]SLATargets `json:"targets"`
	// WarnBefore is how many business minutes before a target's due time
	// a warning goes out (0: none).
	WarnBefore int           `json:"warnBefore"`
	Escalation SLAEscalation `json:"escalation"`
}

// SLATargets are a priority's targets in business minutes (nil: none).
type SLATargets struct {
	FirstResponse *int `json:"firstResponse"`
	NextResponse  *int `json:"nextResponse"`
	Resolution    *int `json:"resolution"`
}

// SLAEscalation is what happens on a breach besides the notifications to
// the assignee and the workspace's admins, which always go out.
type SLAEscalation struct {
	// RaisePriority raises the ticket's priority one step.
	RaisePriority bool `json:"raisePriority"`
	// ReassignTo assigns the ticket to this member.
	ReassignTo *string `json:"reassignTo"`
}

// BusinessHours are the open hours of a policy that is not 24x7: per
// weekday ("mon" … "sun"), intervals of "HH:MM" clock times in TimeZone.
type BusinessHours struct {
	TimeZone string                 `json:"timeZone"`
	Week     map[string][][2]string `json:"week"`
}

// slaWeekdays are the keys of BusinessHours.Week, by time.Weekday.
var slaWeekdays = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

var clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$`)

// minuteOfDay reads a clock time that clockTime matched.
func minuteOfDay(s string) int {
	h, _ := strconv.Atoi(s[:2])
	m, _ := strconv.Atoi(s[3:])
	return h*60 + m
}

// Validate checks the policy, naming each bad field: businessHours,
// holidays, targets (the four priorities, each target 1 to a year of
// minutes or null), warnBefore and escalation.reassignTo's form (whether
// it names a member is for the caller to check).
func (p *SLAPolicy) Validate() error {
	var bad []FieldError
	add := func(field, code, format string, args ...any) {
		bad = append(bad, FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if _, err := p.Calendar(); err != nil {
		var de *DomainError
		if !errors.As(err, &de) {
			return err
		}
		bad = append(bad, de.Fields...)
	}
	if len(p.Holidays) > MaxSLAHolidays {
		add("holidays", "max", "At most %d holidays.", MaxSLAHolidays)
	}
	for i, d := range p.Holidays {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			add(fmt.Sprintf("holidays[%d]", i), "date", "Must be a date, YYYY-MM-DD.")
		}
	}
	if p.Targets == nil {
		add("targets", "required", "Give the targets of at least one priority (low, normal, high, urgent).")
	}
	for priority, t := range p.Targets {
		if !slices.Contains(TicketPriorities, priority) {
			add("targets."+priority, "unknown_priority", "Priorities are low, normal, high and urgent.")
			continue
		}
		for kind, v := range map[string]*int{SLAFirstResponse: t.FirstResponse, SLANextResponse: t.NextResponse, SLAResolution: t.Resolution} {
			if v != nil && (*v < 1 || *v > MaxSLATargetMinutes) {
				add("targets."+priority+"."+kind, "range", "Must be null or from 1 to %d minutes.", MaxSLATargetMinutes)
			}
		}
	}
	if p.WarnBefore < 0 || p.WarnBefore > MaxSLATargetMinutes {
		add("warnBefore", "range", "Must be from 0 (no warning) to %d minutes.", MaxSLATargetMinutes)
	}
	if r := p.Escalation.ReassignTo; r != nil && !ValidID(*r) {
		add("escalation.reassignTo", "member", "Must be null or a member's id.")
	}
	if len(bad) > 0 {
		slices.SortFunc(bad, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
		return Invalid(bad...)
	}
	return nil
}

// Calendar is the policy's business time: its hours and its holidays. A
// bad businessHours is a validation error naming the field.
func (p *SLAPolicy) Calendar() (sla.Calendar, error) {
	var always string
	if err := json.Unmarshal(p.BusinessHours, &always); err == nil {
		if always != AlwaysOpen {
			return sla.Calendar{}, Invalid(FieldError{Field: "businessHours", Code: "oneof",
				Message: `Must be "24x7" or {"timeZone", "week"}.`})
		}
		return sla.Always(p.Holidays...), nil
	}
	var h BusinessHours
	dec := json.NewDecoder(bytes.NewReader(p.BusinessHours))
	dec.DisallowUnknownFields()
	if len(p.BusinessHours) == 0 || dec.Decode(&h) != nil {
		return sla.Calendar{}, Invalid(FieldError{Field: "businessHours", Code: "oneof",
			Message: `Must be "24x7" or {"timeZone": "Europe/Berlin", "week": {"mon": [["09:00", "17:00"]], …}}.`})
	}
	var bad []FieldError
	loc, err := time.LoadLocation(h.TimeZone)
	if h.TimeZone == "" || h.TimeZone == "Local" || err != nil {
		bad = append(bad, FieldError{Field: "businessHours.timeZone", Code: "time_zone", Message: "Must be an IANA time zone, e.g. Europe/Berlin."})
	}
	c := sla.Calendar{Location: loc, Holidays: map[string]bool{}}
	for _, d := range p.Holidays {
		c.Holidays[d] = true
	}
	for key, intervals := range h.Week {
		day := slices.Index(slaWeekdays[:], key)
		if day < 0 {
			bad = append(bad, FieldError{Field: "businessHours.week." + key, Code: "weekday", Message: "Weekdays are mon, tue, wed, thu, fri, sat and sun."})
			continue
		}
		for i, iv := range intervals {
			field := fmt.Sprintf("businessHours.week.%s[%d]", key, i)
			if !clockTime.MatchString(iv[0]) || !clockTime.MatchString(iv[1]) || iv[0] == "24:00" {
				bad = append(bad, FieldError{Field: field, Code: "interval", Message: `Must be ["HH:MM", "HH:MM"], from 00:00 to 24:00.`})
				continue
			}
			c.Week[day] = append(c.Week[day], sla.Interval{Start: minuteOfDay(iv[0]), End: minuteOfDay(iv[1])})
		}
		slices.SortFunc(c.Week[day], func(a, b sla.Interval) int { return a.Start - b.Start })
	}
	if len(bad) == 0 && loc != nil {
		if err := c.Validate(); err != nil {
			bad = append(bad, FieldError{Field: "businessHours.week", Code: "interval",
				Message: "Each interval must start before it ends, not overlap another, and some hours must be open: " + err.Error() + "."})
		}
	}
	if len(bad) > 0 {
		return sla.Calendar{}, Invalid(bad...)
	}
	return c, nil
}

// Target is the policy's target of kind for priority (ok is false when
// there is none).
func (p *SLAPolicy) Target(priority, kind string) (time.Duration, bool) {
	t, ok := p.Targets[priority]
	if !ok {
		return 0, false
	}
	var v *int
	switch kind {
	case SLAFirstResponse:
		v = t.FirstResponse
	case SLANextResponse:
		v = t.NextResponse
	case SLAResolution:
		v = t.Resolution
	}
	if v == nil {
		return 0, false
	}
	return time.Duration(*v) * time.Minute, true
}
