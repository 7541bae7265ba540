package ai

import (
	"regexp"
	"strings"
	"time"

	"github.com/olebedev/when"
	"github.com/olebedev/when/rules"
	"github.com/olebedev/when/rules/en"
)

// Due dates are read from an action item's sentence, relative to ref (the
// date of the entry it was written in, else the document's date, else the
// job's time):
//
//	2026-12-01, "before 2026-12-01", "by 2026-12-01"  the date named
//	today, tonight, end of day, EOD, COB               ref
//	tomorrow; the day after tomorrow                  ref + 1; ref + 2
//	by Friday, on Monday, next Tuesday                the next such weekday after ref
//	this week, end of the week, EOW                   Friday of ref's week (Monday-first weeks)
//	next week                                         Friday of the following week
//	end of the month, EOM, this month                 the month's last day
//	next month                                        the last day of next month
//	in 3 days, within two weeks                       ref + that
//	March 5, 5th of March                             that date (next year's once past)
var (
	dueISO       = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})\b`)
	dueToday     = regexp.MustCompile(`(?i)\b(today|tonight|end of (the )?day|eod|cob|close of business)\b`)
	dueDayAfter  = regexp.MustCompile(`(?i)\bday after tomorrow\b`)
	dueTomorrow  = regexp.MustCompile(`(?i)\btomorrow\b`)
	dueThisWeek  = regexp.MustCompile(`(?i)\b(this week|end of (the |this )?week|eow)\b`)
	dueNextWeek  = regexp.MustCompile(`(?i)\bnext week\b`)
	dueThisMonth = regexp.MustCompile(`(?i)\b(this month|end of (the |this )?month|eom)\b`)
	dueNextMonth = regexp.MustCompile(`(?i)\bnext month\b`)
	// What a natural-language match must contain to count: a full weekday
	// name, a day number or ordinal, or a span ("in 3 days") — so "may",
	// "sat" or "wed" used as ordinary words are not dates.
	dueWhenText = regexp.MustCompile(`(?i)\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{1,2}(st|nd|rd|th)?|first|second|third|fourth|fifth|tenth|twentieth|thirtieth)\b|\b(in|within)\b`)
)

var whenParser = func() *when.Parser {
	p := when.New(nil)
	p.Add(en.Weekday(rules.Override), en.Deadline(rules.Override), en.ExactMonthDate(rules.Override))
	return p
}()

// dueDate finds the due date stated in s, relative to ref; "" when none.
func dueDate(s string, ref time.Time) string {
	ref = time.Date(ref.Year(), ref.Month(), ref.Day(), 12, 0, 0, 0, time.UTC)
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	monday := ref.AddDate(0, 0, -((int(ref.Weekday()) + 6) % 7))
	switch {
	case dueISO.MatchString(s):
		if t, err := time.Parse(time.DateOnly, dueISO.FindString(s)); err == nil {
			return day(t)
		}
	case dueDayAfter.MatchString(s):
		return day(ref.AddDate(0, 0, 2))
	case dueTomorrow.MatchString(s):
		return day(ref.AddDate(0, 0, 1))
	case dueToday.MatchString(s):
		return day(ref)
	case dueNextWeek.MatchString(s):
		return day(monday.AddDate(0, 0, 11))
	case dueThisWeek.MatchString(s):
		friday := monday.AddDate(0, 0, 4)
		if friday.Before(ref) {
			friday = friday.AddDate(0, 0, 7)
		}
		return day(friday)
	case dueNextMonth.MatchString(s):
		return day(time.Date(ref.Year(), ref.Month()+2, 0, 12, 0, 0, 0, time.UTC))
	case dueThisMonth.MatchString(s):
		return day(time.Date(ref.Year(), ref.Month()+1, 0, 12, 0, 0, 0, time.UTC))
	}
	r, err := whenParser.Parse(s, ref)
	if err != nil || r == nil || !dueWhenText.MatchString(r.Text) {
		return ""
	}
	t := r.Time
	if t.Before(ref.AddDate(0, 0, -1)) {
		if !strings.ContainsAny(r.Text, "0123456789") && !monthNamed(r.Text) {
			return "" // "last Friday": a past day is no due date
		}
		t = t.AddDate(1, 0, 0) // "March 5" said in April means next March
	}
	return day(t)
}

func monthNamed(s string) bool {
	for _, w := range words(s) {
		if _, ok := en.MONTH_OFFSET[w]; ok && len(w) > 3 {
			return true
		}
	}
	return false
}
