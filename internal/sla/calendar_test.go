package sla_test

import (
	"errors"
	"testing"
	"time"

	"github.com/business-suite/suite/internal/sla"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// officeHours is Monday to Friday, 09:00 to 17:00 in Berlin, closed on
// Christmas Day 2026 (a Friday).
func officeHours(t *testing.T) sla.Calendar {
	c := sla.Calendar{Location: berlin(t), Holidays: map[string]bool{"2026-12-25": true}}
	for d := time.Monday; d <= time.Friday; d++ {
		c.Week[d] = []sla.Interval{{9 * 60, 17 * 60}}
	}
	return c
}

// allDay is every day, all day, in Berlin: what counts is real time.
func allDay(t *testing.T) sla.Calendar {
	c := sla.Calendar{Location: berlin(t)}
	for d := range c.Week {
		c.Week[d] = []sla.Interval{{0, 24 * 60}}
	}
	return c
}

// nightShift is Monday 22:00 to Tuesday 06:00, as two intervals.
func nightShift(t *testing.T) sla.Calendar {
	c := sla.Calendar{Location: berlin(t)}
	c.Week[time.Monday] = []sla.Interval{{22 * 60, 24 * 60}}
	c.Week[time.Tuesday] = []sla.Interval{{0, 6 * 60}}
	return c
}

// at is a wall-clock time in loc ("2006-01-02 15:04").
func at(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAdd(t *testing.T) {
	office, always, night := officeHours(t), allDay(t), nightShift(t)
	loc := berlin(t)
	for _, tc := range []struct {
		name    string
		cal     sla.Calendar
		from    string // in Berlin
		minutes int
		want    string // in Berlin
		wantUTC string // or in UTC, where the wall clock is ambiguous
	}{
		{name: "within the day", cal: office, from: "2026-11-23 10:00", minutes: 60, want: "2026-11-23 11:00"},
		{name: "at the close exactly", cal: office, from: "2026-11-23 16:00", minutes: 60, want: "2026-11-23 17:00"},
		{name: "past the close, on the next morning", cal: office, from: "2026-11-23 16:30", minutes: 60, want: "2026-11-24 09:30"},
		{name: "before opening", cal: office, from: "2026-11-23 07:00", minutes: 30, want: "2026-11-23 09:30"},
		{name: "after closing", cal: office, from: "2026-11-23 18:00", minutes: 30, want: "2026-11-24 09:30"},
		{name: "over the weekend", cal: office, from: "2026-11-27 16:00", minutes: 120, want: "2026-11-30 10:00"},
		{name: "started on a Sunday", cal: office, from: "2026-11-29 12:00", minutes: 15, want: "2026-11-30 09:15"},
		{name: "over a holiday and the weekend", cal: office, from: "2026-12-24 16:30", minutes: 60, want: "2026-12-28 09:30"},
		{name: "several days", cal: office, from: "2026-11-23 09:00", minutes: 3 * 8 * 60, want: "2026-11-25 17:00"},
		{name: "zero is now, even when closed", cal: office, from: "2026-11-28 03:00", minutes: 0, want: "2026-11-28 03:00"},
		{name: "overnight shift", cal: night, from: "2026-11-23 23:00", minutes: 120, want: "2026-11-24 01:00"},
		{name: "overnight shift, the next week", cal: night, from: "2026-11-24 05:00", minutes: 120, want: "2026-11-30 23:00"},
		// 2026-03-29 02:00 CET the clocks jump to 03:00 CEST: four hours
		// from 23:00 end at 04:00 on the clock.
		{name: "spring forward", cal: always, from: "2026-03-28 23:00", minutes: 240, want: "2026-03-29 04:00"},
		// 2026-10-25 03:00 CEST the clocks go back to 02:00 CET: four
		// hours from 23:00 CEST (21:00 UTC) end at 01:00 UTC, 02:00 CET.
		{name: "fall back", cal: always, from: "2026-10-24 23:00", minutes: 240, wantUTC: "2026-10-25 01:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cal.Add(at(t, loc, tc.from), time.Duration(tc.minutes)*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var want time.Time
			if tc.want != "" {
				want = at(t, loc, tc.want)
			} else {
				want = at(t, time.UTC, tc.wantUTC)
			}
			if !got.Equal(want) {
				t.Fatalf("got %s, want %s", got.In(loc), want.In(loc))
			}
		})
	}
}

// 24x7 counts in UTC: from 2026-12-24 23:30 UTC, 30 minutes run before
// the holiday starts at midnight, 30 after it ends.
func TestAlwaysSkipsItsHolidaysInUTC(t *testing.T) {
	from := time.Date(2026, 12, 24, 23, 30, 0, 0, time.UTC)
	got, err := sla.Always("2026-12-25").Add(from, time.Hour)
	if err != nil || !got.Equal(time.Date(2026, 12, 26, 0, 30, 0, 0, time.UTC)) {
		t.Fatalf("got %s, %v", got, err)
	}
}

func TestBetween(t *testing.T) {
	office, always := officeHours(t), allDay(t)
	loc := berlin(t)
	for _, tc := range []struct {
		name     string
		cal      sla.Calendar
		from, to string
		want     time.Duration
	}{
		{"within the day", office, "2026-11-23 10:00", "2026-11-23 12:30", 150 * time.Minute},
		{"across a night", office, "2026-11-23 16:00", "2026-11-24 10:00", 2 * time.Hour},
		{"a whole week", office, "2026-11-23 00:00", "2026-11-30 00:00", 40 * time.Hour},
		{"a week with a holiday", office, "2026-12-21 00:00", "2026-12-28 00:00", 32 * time.Hour},
		{"closed all along", office, "2026-11-28 08:00", "2026-11-29 20:00", 0},
		{"backwards", office, "2026-11-24 10:00", "2026-11-23 10:00", 0},
		{"the short day of spring", always, "2026-03-29 00:00", "2026-03-30 00:00", 23 * time.Hour},
		{"the long day of autumn", always, "2026-10-25 00:00", "2026-10-26 00:00", 25 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cal.Between(at(t, loc, tc.from), at(t, loc, tc.to)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// Add and Between agree: what Add lets run, Between counts.
func TestAddAndBetweenAgree(t *testing.T) {
	office := officeHours(t)
	from := at(t, berlin(t), "2026-12-22 11:17")
	for minutes := 1; minutes < 5000; minutes += 37 {
		d := time.Duration(minutes) * time.Minute
		due, err := office.Add(from, d)
		if err != nil {
			t.Fatal(err)
		}
		if got := office.Between(from, due); got != d {
			t.Fatalf("%s after %s is %s, which counts %s", d, from, due, got)
		}
	}
}

func TestNeverOpen(t *testing.T) {
	c := sla.Calendar{Location: time.UTC, Holidays: map[string]bool{}}
	c.Week[time.Monday] = []sla.Interval{{9 * 60, 10 * 60}}
	from := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for d := from; d.Before(from.AddDate(6, 0, 0)); d = d.AddDate(0, 0, 1) {
		c.Holidays[d.Format(time.DateOnly)] = true
	}
	if _, err := c.Add(from, time.Minute); !errors.Is(err, sla.ErrNeverOpen) {
		t.Fatalf("got %v, want ErrNeverOpen", err)
	}
}

func TestValidate(t *testing.T) {
	good := officeHours(t)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]sla.Calendar{
		"no location":   {Week: good.Week},
		"no open hours": {Location: time.UTC},
		"backwards":     {Location: time.UTC, Week: [7][]sla.Interval{1: {{10 * 60, 9 * 60}}}},
		"past midnight": {Location: time.UTC, Week: [7][]sla.Interval{1: {{22 * 60, 25 * 60}}}},
		"overlapping":   {Location: time.UTC, Week: [7][]sla.Interval{1: {{9 * 60, 12 * 60}, {11 * 60, 13 * 60}}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

func TestClock(t *testing.T) {
	office := officeHours(t)
	loc := berlin(t)
	due := func(k sla.Clock) time.Time {
		t.Helper()
		d, ok, err := k.Due(office)
		if err != nil || !ok {
			t.Fatalf("due: %v %v", ok, err)
		}
		return d
	}
	// Paused for two days: the two hours it ran are kept.
	k := sla.Start(4*time.Hour, at(t, loc, "2026-11-23 10:00"))
	k = k.Pause(office, at(t, loc, "2026-11-23 12:00"))
	if _, ok, _ := k.Due(office); ok || k.Used != 2*time.Hour {
		t.Fatalf("paused: %+v", k)
	}
	k = k.Resume(at(t, loc, "2026-11-25 10:00"))
	if got, want := due(k), at(t, loc, "2026-11-25 12:00"); !got.Equal(want) {
		t.Fatalf("resumed: due %s, want %s", got, want)
	}
	// A pause over the weekend.
	k = sla.Start(2*time.Hour, at(t, loc, "2026-11-27 16:00")).Pause(office, at(t, loc, "2026-11-27 16:30")).Resume(at(t, loc, "2026-11-30 16:00"))
	if got, want := due(k), at(t, loc, "2026-12-01 09:30"); !got.Equal(want) {
		t.Fatalf("over the weekend: due %s, want %s", got, want)
	}
	// Paused and resumed outside business hours: the night does not count.
	k = sla.Start(2*time.Hour, at(t, loc, "2026-11-23 16:00")).Pause(office, at(t, loc, "2026-11-23 20:00")).Resume(at(t, loc, "2026-11-24 08:00"))
	if got, want := due(k), at(t, loc, "2026-11-24 10:00"); !got.Equal(want) || k.Used != time.Hour {
		t.Fatalf("outside hours: due %s, want %s (%+v)", got, want, k)
	}
	// Pausing twice, or resuming a running clock, changes nothing.
	k = sla.Start(time.Hour, at(t, loc, "2026-11-23 09:00"))
	if k.Resume(at(t, loc, "2026-11-23 12:00")) != k {
		t.Fatal("resuming a running clock moved it")
	}
	p := k.Pause(office, at(t, loc, "2026-11-23 09:20"))
	if p.Pause(office, at(t, loc, "2026-11-23 15:00")) != p {
		t.Fatal("pausing a paused clock moved it")
	}
	// Another target keeps the time run: 20 minutes used of a new 30.
	if got, want := due(p.Retarget(30*time.Minute).Resume(at(t, loc, "2026-11-23 10:00"))), at(t, loc, "2026-11-23 10:10"); !got.Equal(want) {
		t.Fatalf("retargeted: due %s, want %s", got, want)
	}
	// A target already used up is due at once.
	if got, want := due(p.Retarget(10*time.Minute).Resume(at(t, loc, "2026-11-23 10:00"))), at(t, loc, "2026-11-23 10:00"); !got.Equal(want) {
		t.Fatalf("used up: due %s, want %s", got, want)
	}
}
