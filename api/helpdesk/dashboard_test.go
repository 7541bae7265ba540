package helpdesk_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type dashboardDay struct {
	Date              string
	Created, Resolved int64
}

type dashboard struct {
	Timezone   string
	ByStatus   map[string]int64
	ByPriority map[string]int64
	Trend      []dashboardDay
}

// dashTicket inserts a ticket directly, times in UTC as stored.
type dashTicket struct {
	status, priority string
	created          time.Time
	solved           *time.Time
}

func TestDashboardCountsInTheWorkspaceTimeZone(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Numbers desk")
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other desk")
		key := e.CreateKey(owner, org, "helpdesk")
		const zone = "America/New_York"
		if err := e.DB.Model(&models.Organization{}).Where("id = ?", org).Update("timezone", zone).Error; err != nil {
			t.Fatal(err)
		}
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		get := func() dashboard {
			var d dashboard
			e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: apitest.HelpdeskKey(key, org)}).Expect(200).JSON(&d)
			return d
		}

		// An empty workspace: every key, seven zero days.
		empty := get()
		for _, s := range models.TicketStatuses {
			if v, ok := empty.ByStatus[s]; !ok || v != 0 {
				t.Fatalf("empty byStatus %v", empty.ByStatus)
			}
		}
		if len(empty.ByStatus) != 6 || len(empty.ByPriority) != 4 || len(empty.Trend) != 7 || empty.Timezone != zone {
			t.Fatalf("empty dashboard %+v", empty)
		}

		// today is the local date now; midnight(k) the local midnight k
		// days before it (k = -1: tomorrow). The trend is computed by the
		// server against its own clock: should the local date change
		// while the test runs, it runs again.
		for attempt := 0; ; attempt++ {
			today := time.Now().In(loc)
			y, m, dd := today.Date()
			midnight := func(k int) time.Time { return time.Date(y, m, dd-k, 0, 0, 0, 0, loc) }
			// wall is a local wall-clock time k days ago (out-of-range
			// fields roll over: wall(0, 0, -1, 0) is yesterday 23:59).
			wall := func(k, h, min, sec int) time.Time { return time.Date(y, m, dd-k, h, min, sec, 0, loc) }
			solved := func(t time.Time) *time.Time { return &t }

			if err := e.DB.Where("org_id IN ?", []string{org, otherOrg}).Delete(&models.Ticket{}).Error; err != nil {
				t.Fatal(err)
			}
			long := midnight(30)
			tickets := []dashTicket{
				// Created today just after local midnight, and yesterday
				// just before it: in UTC both are today (04:00–05:00), so
				// bucketing by UTC date would put them on the same day.
				{"new", "normal", wall(0, 0, 1, 0), nil},
				{"new", "urgent", wall(0, 0, -1, 0), nil},
				{"open", "high", wall(0, 20, 0, 0), nil},
				// The first instant of the window counts (oldest day); the
				// instant before it does not.
				{"open", "low", midnight(6), nil},
				{"pending", "normal", midnight(6).Add(-time.Microsecond), nil},
				{"on_hold", "normal", wall(3, 12, 0, 0), nil},
				// Tomorrow's local midnight is outside the window.
				{"new", "low", midnight(-1), nil},
				// Resolved: by solvedAt's local day, whatever the status now.
				{"solved", "high", long, solved(wall(0, 2, 0, 0))},
				{"solved", "normal", long, solved(wall(1, 0, 0, -1))},          // the last second of day(2)
				{"closed", "normal", long, solved(wall(4, 23, 59, 0))},         // late evening, 04:59 UTC the next day
				{"closed", "urgent", long, solved(wall(7, 12, 0, 0))},          // outside the window
				{"solved", "low", wall(2, 9, 0, 0), solved(wall(2, 10, 0, 0))}, // created and solved the same day
			}
			for i, tk := range tickets {
				insertDashTicket(t, e, org, 1001+i, tk)
			}
			// Another workspace's tickets never count.
			insertDashTicket(t, e, otherOrg, 1001, dashTicket{"new", "urgent", wall(0, 1, 0, 0), solved(wall(0, 2, 0, 0))})

			got := get()
			if after := time.Now().In(loc).Format(time.DateOnly); after != today.Format(time.DateOnly) && attempt == 0 {
				continue
			}
			day := func(k int) string { return midnight(k).Format(time.DateOnly) }
			want := dashboard{
				Timezone:   zone,
				ByStatus:   map[string]int64{"new": 3, "open": 2, "pending": 1, "on_hold": 1, "solved": 3, "closed": 2},
				ByPriority: map[string]int64{"low": 3, "normal": 5, "high": 2, "urgent": 2},
				Trend: []dashboardDay{
					{day(6), 1, 0}, // created at its first instant
					{day(5), 0, 0},
					{day(4), 0, 1}, // solved late evening
					{day(3), 1, 0},
					{day(2), 1, 2}, // created and solved; solved in its last second
					{day(1), 1, 0}, // created yesterday 23:59
					{day(0), 2, 1}, // created 00:01 and 20:00; solved 02:00
				},
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("dashboard\n got %s\nwant %s", dashString(got), dashString(want))
			}
			break
		}

		// Every member and key may read it; the credentials rules hold.
		agent := e.AddMember(owner, org, models.RoleAgent)
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: apitest.HelpdeskUser(agent.Token, org)}).Expect(200)
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard"}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: apitest.Bearer(key)}).ExpectProblem(401, "api_key_in_authorization")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: apitest.Bearer(agent.Token)}).ExpectProblem(401, "workspace_required")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: apitest.HelpdeskKey(key, otherOrg)}).ExpectProblem(404, "not_found")
	})
}

func insertDashTicket(t *testing.T, e *apitest.Env, org string, number int, tk dashTicket) {
	t.Helper()
	row := &models.Ticket{ID: models.NewID(), OrgID: org, Number: number, Subject: fmt.Sprintf("Ticket %d", number), Status: tk.status,
		Priority: tk.priority, Channel: "email", Tags: "[]", CreatedAt: tk.created.UTC(), UpdatedAt: tk.created.UTC()}
	if tk.solved != nil {
		s := tk.solved.UTC()
		row.SolvedAt = &s
	}
	if err := e.DB.Create(row).Error; err != nil {
		t.Fatal(err)
	}
}

func dashString(d dashboard) string {
	return fmt.Sprintf("%s status=%v priority=%v trend=%v", d.Timezone, d.ByStatus, d.ByPriority, d.Trend)
}
