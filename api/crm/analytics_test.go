package crm_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type analyticsOut struct {
	Currency string
	Counts   struct {
		Contacts, Leads, OpenDeals, WonDeals, LostDeals, OpenTasks, OverdueTasks int64
	}
	PipelineValue, WeightedPipelineValue, WonRevenue float64
	DealsByStage                                     []stageOut
}

type stageOut struct {
	Stage       string
	Count       int64
	Amount      float64
	Probability float64
}

type leaderOut struct {
	MemberID, Name, Email string
	WonAmount             float64
	WonCount              int64
	Target                float64
	Attainment            *float64
}

type leaderboardOut struct {
	Period, Currency string
	From, To         time.Time
	Data             []leaderOut
}

// stages builds dealsByStage from counts and amounts per stage; stages not
// named have zeros.
func stages(got map[string]stageOut) []stageOut {
	prob := map[string]float64{"NEW": 0.1, "QUALIFIED": 0.25, "MEETING": 0.4, "PROPOSAL": 0.6, "NEGOTIATION": 0.8, "WON": 1, "LOST": 0}
	var out []stageOut
	for _, s := range []string{"NEW", "QUALIFIED", "MEETING", "PROPOSAL", "NEGOTIATION", "WON", "LOST"} {
		row := got[s]
		row.Stage, row.Probability = s, prob[s]
		out = append(out, row)
	}
	return out
}

func TestAnalyticsDashboard(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Numbers")
		e.SetPlan(orgID, models.PlanBusiness)
		agent1 := e.AddMember(owner, orgID, models.RoleAgent)
		agent2 := e.AddMember(owner, orgID, models.RoleAgent)
		ids := memberIDs(e, owner, orgID, agent1, agent2)
		a1, a2 := ids[0], ids[1]
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Elsewhere")
		q := "?orgId=" + orgID

		now := models.Now()
		yesterday := now.AddDate(0, 0, -1).Format(time.DateOnly)
		tomorrow := now.AddDate(0, 0, 1).Format(time.DateOnly)
		newDeal := func(org, stage string, amount float64, assignee *string) *models.Deal {
			d := &models.Deal{ID: models.NewID(), OrgID: org, Title: stage, Amount: amount, Currency: "USD", Stage: stage,
				AssignedToID: assignee, StageChangedAt: now, CreatedAt: now, UpdatedAt: now}
			switch stage {
			case models.StageWon:
				d.WonAt = &now
			case models.StageLost:
				d.LostReason = "Budget"
			}
			return d
		}
		newTask := func(org, status, due string, assignee *string) *models.Task {
			return &models.Task{ID: models.NewID(), OrgID: org, Title: status + " " + due, DueDate: due, Priority: "MEDIUM",
				Status: status, AssignedToID: assignee, CreatedAt: now, UpdatedAt: now}
		}
		newLead := func(org string, assignee *string) *models.Lead {
			return &models.Lead{ID: models.NewID(), OrgID: org, Name: "Lead", Status: models.LeadNew, ScoreFactors: "[]",
				AssignedToID: assignee, CreatedAt: now, UpdatedAt: now}
		}
		newContact := func(org string) *models.Contact {
			return &models.Contact{ID: models.NewID(), OrgID: org, Name: "C", Type: models.ContactPerson, CreatedAt: now, UpdatedAt: now}
		}
		longAgo := now.AddDate(0, 0, -400)
		oldWin := newDeal(orgID, models.StageWon, 300, &a2)
		oldWin.WonAt = &longAgo
		rows := []any{
			// Open: 100 + 1000 + 2000 + 333.33 + 50 = 3483.33;
			// weighted 10 + 600 + 1600 + 133.332 + 12.5 = 2355.832.
			newDeal(orgID, models.StageNew, 100, &a1),
			newDeal(orgID, models.StageProposal, 1000, &a1),
			newDeal(orgID, models.StageNegotiation, 2000, &a2),
			newDeal(orgID, models.StageMeeting, 333.33, nil),
			newDeal(orgID, models.StageQualified, 50, &a2),
			// Won: 1000.50 + 250 + 500 + 300 = 2050.50 (all time).
			newDeal(orgID, models.StageWon, 1000.50, &a1),
			newDeal(orgID, models.StageWon, 250, &a1),
			newDeal(orgID, models.StageWon, 500, &a2),
			oldWin,
			newDeal(orgID, models.StageLost, 700, &a1),
			// Tasks: 4 open, 2 overdue (a DONE task is never overdue).
			newTask(orgID, "OPEN", yesterday, &a1),
			newTask(orgID, "OPEN", tomorrow, &a1),
			newTask(orgID, "OPEN", "", &a2),
			newTask(orgID, "DONE", yesterday, &a1),
			newTask(orgID, "OPEN", "2000-01-01", nil),
			newLead(orgID, &a1), newLead(orgID, &a1), newLead(orgID, nil),
			newContact(orgID), newContact(orgID),
			// Another organization's data never counts.
			newDeal(otherOrg, models.StageWon, 9999, nil), newDeal(otherOrg, models.StageNew, 9999, nil),
			newTask(otherOrg, "OPEN", "2000-01-01", nil), newLead(otherOrg, nil), newContact(otherOrg),
		}
		for _, row := range rows {
			if err := e.DB.Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}

		type counts = struct {
			Contacts, Leads, OpenDeals, WonDeals, LostDeals, OpenTasks, OverdueTasks int64
		}
		cases := []struct {
			name    string
			headers map[string]string
			want    analyticsOut
		}{
			{"owner sees everything", owner.Auth(), analyticsOut{Currency: "USD",
				Counts:        counts{Contacts: 2, Leads: 3, OpenDeals: 5, WonDeals: 4, LostDeals: 1, OpenTasks: 4, OverdueTasks: 2},
				PipelineValue: 3483.33, WeightedPipelineValue: 2355.83, WonRevenue: 2050.50,
				DealsByStage: stages(map[string]stageOut{"NEW": {Count: 1, Amount: 100}, "QUALIFIED": {Count: 1, Amount: 50},
					"MEETING": {Count: 1, Amount: 333.33}, "PROPOSAL": {Count: 1, Amount: 1000}, "NEGOTIATION": {Count: 1, Amount: 2000},
					"WON": {Count: 4, Amount: 2050.50}, "LOST": {Count: 1, Amount: 700}})}},
			{"agent1 sees their own", agent1.Auth(), analyticsOut{Currency: "USD",
				Counts:        counts{Contacts: 2, Leads: 2, OpenDeals: 2, WonDeals: 2, LostDeals: 1, OpenTasks: 2, OverdueTasks: 1},
				PipelineValue: 1100, WeightedPipelineValue: 610, WonRevenue: 1250.50,
				DealsByStage: stages(map[string]stageOut{"NEW": {Count: 1, Amount: 100}, "PROPOSAL": {Count: 1, Amount: 1000},
					"WON": {Count: 2, Amount: 1250.50}, "LOST": {Count: 1, Amount: 700}})}},
			{"agent2 sees their own", agent2.Auth(), analyticsOut{Currency: "USD",
				Counts:        counts{Contacts: 2, Leads: 0, OpenDeals: 2, WonDeals: 2, LostDeals: 0, OpenTasks: 1, OverdueTasks: 0},
				PipelineValue: 2050, WeightedPipelineValue: 1612.5, WonRevenue: 800,
				DealsByStage: stages(map[string]stageOut{"QUALIFIED": {Count: 1, Amount: 50}, "NEGOTIATION": {Count: 1, Amount: 2000},
					"WON": {Count: 2, Amount: 800}})}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var got analyticsOut
				e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics" + q, Headers: tc.headers}).Expect(200).JSON(&got)
				if got.Currency != tc.want.Currency || got.Counts != tc.want.Counts || got.PipelineValue != tc.want.PipelineValue ||
					got.WeightedPipelineValue != tc.want.WeightedPipelineValue || got.WonRevenue != tc.want.WonRevenue ||
					!slices.Equal(got.DealsByStage, tc.want.DealsByStage) {
					t.Fatalf("got  %+v\nwant %+v", got, tc.want)
				}
			})
		}
		// A key sees the whole organization, like an ADMIN.
		var byKey analyticsOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics", Headers: apitest.Bearer(e.CreateKey(owner, orgID, "crm"))}).Expect(200).JSON(&byKey)
		if byKey.Counts != cases[0].want.Counts || byKey.PipelineValue != 3483.33 {
			t.Fatalf("key: %+v", byKey)
		}

		// An organization with nothing: zeros, all seven stages, its currency.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/organization/" + otherOrg, Headers: other.Auth(),
			Body: map[string]any{"currency": "EUR"}}).Expect(200)
		empty := e.SignUp(apitest.UniqueEmail("empty"))
		emptyOrg := e.CreateOrg(empty, "Empty")
		var none analyticsOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics?orgId=" + emptyOrg, Headers: empty.Auth()}).Expect(200).JSON(&none)
		want := analyticsOut{Currency: "USD", DealsByStage: stages(nil)}
		if none.Currency != want.Currency || none.Counts != want.Counts || none.PipelineValue != 0 || none.WeightedPipelineValue != 0 ||
			none.WonRevenue != 0 || !slices.Equal(none.DealsByStage, want.DealsByStage) {
			t.Fatalf("empty organization: %+v", none)
		}
		var eur analyticsOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics?orgId=" + otherOrg, Headers: other.Auth()}).Expect(200).JSON(&eur)
		if eur.Currency != "EUR" || eur.WonRevenue != 9999 || eur.PipelineValue != 9999 || eur.WeightedPipelineValue != 999.9 ||
			eur.Counts.OverdueTasks != 1 || eur.Counts.Contacts != 1 {
			t.Fatalf("other organization: %+v", eur)
		}

		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics" + q}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics?orgId=" + otherOrg, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
		p := e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics", Headers: owner.Auth()}).ExpectProblem(422, "validation_failed")
		expectFields(t, p, "orgId")
	})
}

// Overdue means before today in the organization's time zone: a task due
// "today" in UTC is already overdue where it is tomorrow.
func TestAnalyticsOverdueUsesTheOrganizationsTimeZone(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Zones")
		now := time.Now()
		// Kiritimati is UTC+14 and Niue UTC-11: one of them is always on
		// another date than UTC.
		zone := "Pacific/Kiritimati"
		if now.In(mustZone(t, zone)).Format(time.DateOnly) == now.UTC().Format(time.DateOnly) {
			zone = "Pacific/Niue"
		}
		local := now.In(mustZone(t, zone)).Format(time.DateOnly)
		utc := now.UTC().Format(time.DateOnly)
		ts := models.Now()
		for _, due := range []string{local, utc} {
			if err := e.DB.Create(&models.Task{ID: models.NewID(), OrgID: orgID, Title: due, DueDate: due, Priority: "LOW",
				Status: "OPEN", CreatedAt: ts, UpdatedAt: ts}).Error; err != nil {
				t.Fatal(err)
			}
		}
		overdue := func() int64 {
			var got analyticsOut
			e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics?orgId=" + orgID, Headers: owner.Auth()}).Expect(200).JSON(&got)
			return got.Counts.OverdueTasks
		}
		// In UTC, only a task due on the zone's date can be overdue: when
		// that date is UTC's yesterday.
		want := int64(0)
		if local < utc {
			want = 1
		}
		if n := overdue(); n != want {
			t.Fatalf("UTC (%s; %s is on %s): %d overdue, want %d", utc, zone, local, n, want)
		}
		// In the zone, the task due on UTC's date is overdue when the zone
		// is already on the next day.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/organization/" + orgID, Headers: owner.Auth(),
			Body: map[string]any{"timezone": zone}}).Expect(200)
		want = 0
		if utc < local {
			want = 1
		}
		if n := overdue(); n != want {
			t.Fatalf("%s (%s; UTC %s): %d overdue, want %d", zone, local, utc, n, want)
		}
	})
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s unavailable: %v", name, err)
	}
	return loc
}

func TestLeaderboard(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Board")
		e.SetPlan(orgID, models.PlanBusiness)
		agent1 := e.AddMember(owner, orgID, models.RoleAgent)
		agent2 := e.AddMember(owner, orgID, models.RoleAgent)
		members := "/crm/organization/" + orgID + "/members"
		var invited member
		e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
			Body: map[string]any{"email": apitest.UniqueEmail("invited"), "role": "AGENT", "target": 10}}).Expect(201).JSON(&invited)
		ids := memberIDs(e, owner, orgID, owner, agent1, agent2)
		own, a1, a2 := ids[0], ids[1], ids[2]
		// Monthly targets: agent1 1000, owner 500, agent2 none.
		for id, target := range map[string]float64{a1: 1000, own: 500} {
			e.Do(apitest.Request{Method: "PUT", Path: members + "/" + id, Headers: owner.Auth(), Body: map[string]any{"target": target}}).Expect(200)
		}
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Elsewhere")

		// The org's time zone is UTC, so the periods are calendar periods in UTC.
		now := time.Now().UTC()
		monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		quarterStart := time.Date(now.Year(), (now.Month()-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)
		yearStart := time.Date(now.Year(), time.January, 1, 0, 0, 0, 0, time.UTC)
		ts := models.Now()
		won := func(org string, amount float64, assignee string, at time.Time, stage string) {
			t.Helper()
			at = at.UTC().Truncate(time.Microsecond)
			d := &models.Deal{ID: models.NewID(), OrgID: org, Title: "won", Amount: amount, Currency: "USD", Stage: stage,
				AssignedToID: &assignee, StageChangedAt: at, WonAt: &at, CreatedAt: ts, UpdatedAt: ts}
			if err := e.DB.Create(d).Error; err != nil {
				t.Fatal(err)
			}
		}
		won(orgID, 1000.50, a1, ts, models.StageWon)                       // this month
		won(orgID, 250, a1, yearStart, models.StageWon)                    // this year; this quarter/month only early in the year
		won(orgID, 120, a1, monthStart.Add(-time.Second), models.StageWon) // last month
		won(orgID, 500, a2, ts, models.StageWon)                           // this month
		won(orgID, 300, a2, ts.AddDate(0, 0, -400), models.StageWon)       // never in the current year
		won(orgID, 800, a2, ts, models.StageNegotiation)                   // a won_at left on a reopened deal does not count
		won(orgID, 5000, invited.ID, ts, models.StageWon)                  // invited members are not on the board
		won(otherOrg, 7777, a1, ts, models.StageWon)                       // another organization's deal

		in := func(at, from time.Time) bool { return !at.Before(from) }
		type expect struct {
			amount float64
			count  int64
		}
		sum := func(from time.Time, wins map[time.Time]float64) expect {
			var x expect
			for at, amount := range wins {
				if in(at, from) {
					x.amount += amount
					x.count++
				}
			}
			x.amount = math.Round(x.amount*100) / 100
			return x
		}
		a1Wins := map[time.Time]float64{ts: 1000.50, yearStart: 250, monthStart.Add(-time.Second): 120}
		a2Wins := map[time.Time]float64{ts: 500, ts.AddDate(0, 0, -400): 300}
		periods := []struct {
			period   string
			from, to time.Time
			months   float64
		}{
			{"month", monthStart, monthStart.AddDate(0, 1, 0), 1},
			{"quarter", quarterStart, quarterStart.AddDate(0, 3, 0), 3},
			{"year", yearStart, yearStart.AddDate(1, 0, 0), 12},
		}
		for _, pc := range periods {
			t.Run(pc.period, func(t *testing.T) {
				x1, x2 := sum(pc.from, a1Wins), sum(pc.from, a2Wins)
				att := func(amount, monthly float64) *float64 {
					a := math.Round(amount/(monthly*pc.months)*10000) / 10000
					return &a
				}
				want := []leaderOut{
					{MemberID: a1, Name: agent1.Name, Email: models.NormalizeEmail(agent1.Email), WonAmount: x1.amount, WonCount: x1.count,
						Target: 1000 * pc.months, Attainment: att(x1.amount, 1000)},
					{MemberID: a2, Name: agent2.Name, Email: models.NormalizeEmail(agent2.Email), WonAmount: x2.amount, WonCount: x2.count, Target: 0},
					{MemberID: own, Name: owner.Name, Email: models.NormalizeEmail(owner.Email), Target: 500 * pc.months, Attainment: att(0, 500)},
				}
				for _, caller := range []*apitest.User{owner, agent2} { // a team board: AGENTs see it whole
					var got leaderboardOut
					e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID + "&period=" + pc.period,
						Headers: caller.Auth()}).Expect(200).JSON(&got)
					if got.Period != pc.period || got.Currency != "USD" || !got.From.Equal(pc.from) || !got.To.Equal(pc.to) ||
						got.From.Location() != time.UTC || len(got.Data) != len(want) {
						t.Fatalf("got %+v", got)
					}
					for i := range want {
						g, w := got.Data[i], want[i]
						if g.MemberID != w.MemberID || g.Name != w.Name || g.Email != w.Email || g.WonAmount != w.WonAmount ||
							g.WonCount != w.WonCount || g.Target != w.Target || (g.Attainment == nil) != (w.Attainment == nil) ||
							(g.Attainment != nil && *g.Attainment != *w.Attainment) {
							t.Fatalf("row %d: got %+v (attainment %v), want %+v (attainment %v)", i, g, deref(g.Attainment), w, deref(w.Attainment))
						}
					}
				}
			})
		}
		// The numbers of the month, spelled out.
		var month leaderboardOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID, Headers: agent1.Auth()}).Expect(200).JSON(&month)
		if month.Period != "month" || month.Data[0].MemberID != a1 || month.Data[1].WonAmount != 500 || month.Data[1].WonCount != 1 ||
			month.Data[1].Attainment != nil || *month.Data[2].Attainment != 0 {
			t.Fatalf("default period: %+v", month)
		}
		if now.Month() != time.January {
			if month.Data[0].WonAmount != 1000.5 || month.Data[0].WonCount != 1 || *month.Data[0].Attainment != 1.0005 {
				t.Fatalf("agent1's month: %+v", month.Data[0])
			}
		}

		var raw map[string]any
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID + "&period=year", Headers: owner.Auth()}).Expect(200).JSON(&raw)
		if raw["from"] != yearStart.Format(time.RFC3339) || raw["to"] != yearStart.AddDate(1, 0, 0).Format(time.RFC3339) {
			t.Fatalf("from/to are not RFC 3339 UTC: %v %v", raw["from"], raw["to"])
		}

		// Periods follow the organization's time zone.
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/organization/" + orgID, Headers: owner.Auth(),
			Body: map[string]any{"timezone": "Asia/Kolkata"}}).Expect(200)
		kolkata := mustZone(t, "Asia/Kolkata")
		local := time.Now().In(kolkata)
		wantFrom := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, kolkata)
		var zoned leaderboardOut
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID + "&period=month", Headers: owner.Auth()}).Expect(200).JSON(&zoned)
		if !zoned.From.Equal(wantFrom) || !zoned.To.Equal(wantFrom.AddDate(0, 1, 0)) || zoned.From.Location() != time.UTC {
			t.Fatalf("Asia/Kolkata month: %v – %v, want from %v", zoned.From, zoned.To, wantFrom.UTC())
		}

		p := e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID + "&period=week", Headers: owner.Auth()}).
			ExpectProblem(422, "validation_failed")
		expectFields(t, p, "period")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + orgID}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/analytics/leaderboard?orgId=" + otherOrg, Headers: owner.Auth()}).ExpectProblem(404, "not_found")
	})
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
