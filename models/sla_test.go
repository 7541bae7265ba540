package models_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/business-suite/suite/models"
)

func policy(t *testing.T, body string) *models.SLAPolicy {
	t.Helper()
	var p models.SLAPolicy
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// The example policy: Berlin office hours, Christmas Day off.
const officePolicy = `{"businessHours": {"timeZone": "Europe/Berlin", "week": {"mon": [["09:00","12:00"], ["13:00","17:00"]],
  "tue": [["09:00","17:00"]], "wed": [["09:00","17:00"]], "thu": [["09:00","17:00"]], "fri": [["09:00","17:00"]]}},
  "holidays": ["2026-12-25"], "targets": {"urgent": {"firstResponse": 60, "nextResponse": 120, "resolution": 480},
  "normal": {"firstResponse": 480, "nextResponse": null, "resolution": null}}, "warnBefore": 15,
  "escalation": {"raisePriority": true, "reassignTo": null}}`

func TestSLAPolicyCalendarAndTargets(t *testing.T) {
	p := policy(t, officePolicy)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cal, err := p.Calendar()
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// Monday 11:30 + 60 business minutes: 30 before lunch, 30 after.
	due, err := cal.Add(time.Date(2026, 11, 23, 11, 30, 0, 0, berlin), time.Hour)
	if err != nil || !due.Equal(time.Date(2026, 11, 23, 13, 30, 0, 0, berlin)) {
		t.Fatalf("due %s, %v", due, err)
	}
	// Christmas Eve, Thursday 16:30 + 60: Friday is a holiday.
	due, _ = cal.Add(time.Date(2026, 12, 24, 16, 30, 0, 0, berlin), time.Hour)
	if !due.Equal(time.Date(2026, 12, 28, 9, 30, 0, 0, berlin)) {
		t.Fatalf("over the holiday: due %s", due)
	}
	if d, ok := p.Target("urgent", models.SLAResolution); !ok || d != 8*time.Hour {
		t.Fatalf("urgent resolution %s %v", d, ok)
	}
	for _, c := range []struct{ priority, kind string }{{"normal", models.SLANextResponse}, {"low", models.SLAFirstResponse}} {
		if _, ok := p.Target(c.priority, c.kind); ok {
			t.Fatalf("%s %s: a target where the policy sets none", c.priority, c.kind)
		}
	}

	always := policy(t, `{"businessHours": "24x7", "holidays": ["2026-12-25"], "targets": {"urgent": {"firstResponse": 1}}}`)
	if err := always.Validate(); err != nil {
		t.Fatal(err)
	}
	cal, _ = always.Calendar()
	from := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	if due, _ := cal.Add(from, time.Minute); !due.Equal(from.Add(time.Minute)) {
		t.Fatalf("24x7: due %s", due)
	}
}

// Each bad value is refused, naming its field.
func TestSLAPolicyValidation(t *testing.T) {
	for _, tc := range []struct{ body, field, code string }{
		{`{"targets": {"urgent": {"firstResponse": 60}}}`, "businessHours", "oneof"},
		{`{"businessHours": "9to5", "targets": {"urgent": {"firstResponse": 60}}}`, "businessHours", "oneof"},
		{`{"businessHours": 7, "targets": {"urgent": {"firstResponse": 60}}}`, "businessHours", "oneof"},
		{`{"businessHours": {"timeZone": "Europe/Berlin", "hours": {}}, "targets": {}}`, "businessHours", "oneof"},
		{`{"businessHours": {"timeZone": "Mars/Olympus", "week": {"mon": [["09:00","17:00"]]}}, "targets": {}}`, "businessHours.timeZone", "time_zone"},
		{`{"businessHours": {"timeZone": "", "week": {"mon": [["09:00","17:00"]]}}, "targets": {}}`, "businessHours.timeZone", "time_zone"},
		{`{"businessHours": {"timeZone": "UTC", "week": {"monday": [["09:00","17:00"]]}}, "targets": {}}`, "businessHours.week.monday", "weekday"},
		{`{"businessHours": {"timeZone": "UTC", "week": {"mon": [["9:00","17:00"]]}}, "targets": {}}`, "businessHours.week.mon[0]", "interval"},
		{`{"businessHours": {"timeZone": "UTC", "week": {"mon": [["24:00","24:00"]]}}, "targets": {}}`, "businessHours.week.mon[0]", "interval"},
		{`{"businessHours": {"timeZone": "UTC", "week": {"mon": [["17:00","09:00"]]}}, "targets": {}}`, "businessHours.week", "interval"},
		{`{"businessHours": {"timeZone": "UTC", "week": {"mon": [["09:00","12:00"], ["11:00","13:00"]]}}, "targets": {}}`, "businessHours.week", "interval"},
		{`{"businessHours": {"timeZone": "UTC", "week": {}}, "targets": {}}`, "businessHours.week", "interval"},
		{`{"businessHours": "24x7", "holidays": ["2026-02-30"], "targets": {}}`, "holidays[0]", "date"},
		{`{"businessHours": "24x7"}`, "targets", "required"},
		{`{"businessHours": "24x7", "targets": {"critical": {"firstResponse": 5}}}`, "targets.critical", "unknown_priority"},
		{`{"businessHours": "24x7", "targets": {"high": {"resolution": 0}}}`, "targets.high.resolution", "range"},
		{`{"businessHours": "24x7", "targets": {"high": {"nextResponse": 527041}}}`, "targets.high.nextResponse", "range"},
		{`{"businessHours": "24x7", "targets": {}, "warnBefore": -1}`, "warnBefore", "range"},
		{`{"businessHours": "24x7", "targets": {}, "escalation": {"reassignTo": "bob"}}`, "escalation.reassignTo", "member"},
	} {
		err := policy(t, tc.body).Validate()
		var de *models.DomainError
		if !errors.As(err, &de) || !errors.Is(err, models.ErrInvalid) {
			t.Errorf("%s: %v, want a validation error", tc.body, err)
			continue
		}
		found := false
		for _, f := range de.Fields {
			found = found || (f.Field == tc.field && f.Code == tc.code && f.Message != "")
		}
		if !found {
			t.Errorf("%s: fields %+v, want %s %s", tc.body, de.Fields, tc.field, tc.code)
		}
	}
	// 24:00 ends a day.
	late := policy(t, `{"businessHours": {"timeZone": "Asia/Tokyo", "week": {"sat": [["18:00","24:00"]]}}, "targets": {}}`)
	if err := late.Validate(); err != nil {
		t.Fatal(err)
	}
}
