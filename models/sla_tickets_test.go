package models_test

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// slaDesk is a desk whose workspace has a 24x7 policy: urgent tickets
// answered within 60 minutes, answered again within 30, solved within
// 240, warned 10 minutes ahead; no targets for low.
func slaDesk(t *testing.T, db *gorm.DB) (deskFixture, *models.Organization) {
	t.Helper()
	d := newDesk(t, db)
	p := policy(t, `{"businessHours": "24x7", "warnBefore": 10,
		"targets": {"urgent": {"firstResponse": 60, "nextResponse": 30, "resolution": 240}}}`)
	if _, err := models.SaveSLAPolicy(db, d.org, p, "test", models.Now()); err != nil {
		t.Fatal(err)
	}
	org, err := models.FindOrg(t.Context(), db, d.org)
	if err != nil {
		t.Fatal(err)
	}
	return d, org
}

func openUrgent(t *testing.T, db *gorm.DB, org *models.Organization, at time.Time) *models.Ticket {
	t.Helper()
	tk := &models.Ticket{ID: models.NewID(), OrgID: org.ID, Subject: "Down", Status: models.TicketNew, Priority: "urgent",
		Channel: "web", RequesterEmail: "maria@acme.io", Tags: "[]", CreatedAt: at, UpdatedAt: at}
	if err := db.Transaction(func(tx *gorm.DB) error {
		_, err := models.OpenTicket(tx, org, tk, "", models.ActorSystem, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tk
}

func slaState(t *testing.T, tk *models.Ticket) *models.TicketSLA {
	t.Helper()
	s, err := models.SLAOf(tk)
	if err != nil || s == nil {
		t.Fatalf("the ticket's SLA: %v, %v", s, err)
	}
	return s
}

// due is the due time of the state's clock of kind (zero: none, or paused).
func due(s *models.TicketSLA, kind string) time.Time {
	if k := s.Clock(kind); k != nil && k.DueAt != nil {
		return *k.DueAt
	}
	return time.Time{}
}

// A ticket's clocks through its life: opened (first response and
// resolution run), answered (first response met), the customer writes
// (next response runs), pending (all wait), the customer writes again
// (they run on, the time before the pause kept), a priority without
// targets (they end). Each move is told to the caller (SLAMoved; an
// opened ticket has clocks), which wakes the SLA workflow in the
// transaction of the change.
func TestTicketSLAClocks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		d, org := slaDesk(t, db)
		t0 := time.Now().UTC().Truncate(time.Second)
		min := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
		tk := openUrgent(t, db, org, t0)
		s := slaState(t, tk)
		if !due(s, models.SLAFirstResponse).Equal(min(60)) || !due(s, models.SLAResolution).Equal(min(240)) ||
			s.Clock(models.SLANextResponse) != nil || s.PolicyVersion != 1 {
			t.Fatalf("opened: %+v", s)
		}
		if tk.SLANextDueAt == nil || !tk.SLANextDueAt.Equal(min(60)) || tk.SLANextWarnAt == nil || !tk.SLANextWarnAt.Equal(min(50)) {
			t.Fatalf("opened: next due %v, next warning %v", tk.SLANextDueAt, tk.SLANextWarnAt)
		}
		if !tk.HasSLA() || !tk.HasSLATimer() {
			t.Fatalf("opened under a policy: SLA %v, a timer %v", tk.HasSLA(), tk.HasSLATimer())
		}
		moves := 1 // the opening's

		comment := func(author string, at time.Time) *models.Ticket {
			t.Helper()
			cm := &models.TicketComment{ID: models.NewID(), OrgID: d.org, AuthorType: author, Body: "…", Public: true, CreatedAt: at}
			if author == models.AuthorAgent {
				cm.AuthorMemberID = &d.agent
			}
			after, change, err := models.AddTicketComment(db, d.org, tk.ID, cm, models.ActorSystem, at)
			if err != nil {
				t.Fatal(err)
			}
			if change.SLAMoved {
				moves++
			}
			return after
		}
		update := func(u models.TicketUpdate, at time.Time) *models.Ticket {
			t.Helper()
			after, change, err := models.UpdateTicket(db, d.org, tk.ID, u, models.ActorSystem, at)
			if err != nil {
				t.Fatal(err)
			}
			if change.SLAMoved {
				moves++
			}
			return after
		}

		tk = comment(models.AuthorAgent, min(20))
		s = slaState(t, tk)
		if s.Clock(models.SLAFirstResponse) != nil || s.FirstRespondedAt == nil || !s.FirstRespondedAt.Equal(min(20)) {
			t.Fatalf("answered: %+v", s)
		}
		tk = comment(models.AuthorCustomer, min(30))
		if s = slaState(t, tk); !due(s, models.SLANextResponse).Equal(min(60)) {
			t.Fatalf("the customer wrote: %+v", s)
		}
		tk = update(models.TicketUpdate{Status: ptr(models.TicketPending)}, min(40))
		s = slaState(t, tk)
		if !s.Paused() || !due(s, models.SLAResolution).IsZero() || tk.SLANextDueAt != nil || s.Clock(models.SLAResolution).Used != 40*time.Minute {
			t.Fatalf("pending: %+v", s)
		}
		if tk.HasSLATimer() { // paused clocks: nothing for a workflow to wait for
			t.Fatal("a pending ticket has a timer")
		}
		// A customer's reply reopens it: 200 minutes of resolution left,
		// 20 of the next response.
		tk = comment(models.AuthorCustomer, min(100))
		s = slaState(t, tk)
		if s.Paused() || !due(s, models.SLAResolution).Equal(min(300)) || !due(s, models.SLANextResponse).Equal(min(120)) {
			t.Fatalf("resumed: %+v", s)
		}
		if !tk.HasSLATimer() {
			t.Fatal("a resumed ticket has no timer")
		}
		if moves != 5 {
			t.Fatalf("%d moves told, want 5", moves)
		}
		tk = update(models.TicketUpdate{Priority: ptr("low")}, min(110))
		if s = slaState(t, tk); len(s.Clocks) != 0 || tk.SLANextDueAt != nil {
			t.Fatalf("low has no targets: %+v", s)
		}
		if !tk.HasSLA() || tk.HasSLATimer() {
			t.Fatalf("low: SLA %v, a timer %v; want the state and no timer", tk.HasSLA(), tk.HasSLATimer())
		}
		// A change that moves no clock wakes nothing.
		update(models.TicketUpdate{Subject: ptr("Still down")}, min(120))
		if moves != 6 {
			t.Fatalf("%d moves told, want 6", moves)
		}
	})
}

// Solving meets the resolution and ends every clock; reopening starts the
// resolution again from the reopen.
func TestTicketSLASolveAndReopen(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		d, org := slaDesk(t, db)
		t0 := time.Now().UTC().Truncate(time.Second)
		tk := openUrgent(t, db, org, t0)
		tk, _, err := models.UpdateTicket(db, d.org, tk.ID, models.TicketUpdate{SetAgent: true, Agent: &d.agent,
			Status: ptr(models.TicketSolved)}, models.ActorSystem, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if s := slaState(t, tk); len(s.Clocks) != 0 {
			t.Fatalf("solved: %+v", s)
		}
		tk, _, err = models.UpdateTicket(db, d.org, tk.ID, models.TicketUpdate{Status: ptr(models.TicketOpen)}, models.ActorSystem, t0.Add(2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if s := slaState(t, tk); !due(s, models.SLAResolution).Equal(t0.Add(6*time.Hour)) || len(s.Clocks) != 1 {
			t.Fatalf("reopened: %+v", s)
		}
	})
}

// A ticket opened before the workspace had a policy has no clocks.
func TestTicketSLAOnlyUnderAPolicy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		d := newDesk(t, db)
		org, _ := models.FindOrg(t.Context(), db, d.org)
		tk := openUrgent(t, db, org, models.Now())
		if tk.HasSLA() {
			t.Fatalf("an SLA without a policy: %v", tk.SLAState)
		}
	})
}

// A timer fires once, and only while it stands: its clock still due at
// that time, not re-planned, met or paused since it was read.
func TestFireSLATimerOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		d, org := slaDesk(t, db)
		t0 := time.Now().UTC().Truncate(time.Second)
		tk := openUrgent(t, db, org, t0)
		timers, live, err := models.SLATimers(db, tk.ID)
		if err != nil || !live || len(timers) != 4 {
			t.Fatalf("timers %+v %v %v", timers, live, err)
		}
		first := timers[0]
		if first.Kind != models.SLAFirstResponse || first.Fire != models.SLAWarningTimer || !first.At.Equal(t0.Add(50*time.Minute)) {
			t.Fatalf("the first timer %+v", first)
		}
		breach := models.SLATimer{Kind: models.SLAFirstResponse, Fire: models.SLABreachTimer, At: t0.Add(time.Hour)}
		fire := func(timer models.SLATimer) bool {
			t.Helper()
			var fired bool
			err := db.Transaction(func(tx *gorm.DB) error {
				var err error
				_, fired, err = models.FireSLATimer(tx, tk.ID, timer)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return fired
		}
		if fire(models.SLATimer{Kind: breach.Kind, Fire: breach.Fire, At: breach.At.Add(time.Minute)}) {
			t.Fatal("a breach at a time the clock is not due fired")
		}
		if !fire(breach) || fire(breach) {
			t.Fatal("the breach did not fire exactly once")
		}
		reread, _ := models.FindInOrg[models.Ticket](db, d.org, tk.ID, "The ticket")
		s := slaState(t, reread)
		if !reread.SLABreached || len(s.Breaches) != 1 || s.Breaches[0].Kind != models.SLAFirstResponse || !s.Breaches[0].At.Equal(breach.At) {
			t.Fatalf("after the breach: %+v", s)
		}
		timers, _, _ = models.SLATimers(db, tk.ID)
		for _, tm := range timers {
			if tm.Kind == models.SLAFirstResponse {
				t.Fatalf("the breached clock still has a timer: %+v", tm)
			}
		}
		// Met since: the resolution's warning no longer stands.
		if _, _, err := models.UpdateTicket(db, d.org, tk.ID, models.TicketUpdate{SetAgent: true, Agent: &d.agent,
			Status: ptr(models.TicketSolved)}, models.ActorSystem, t0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if fire(models.SLATimer{Kind: models.SLAResolution, Fire: models.SLAWarningTimer, At: t0.Add(230 * time.Minute)}) {
			t.Fatal("a met clock's warning fired")
		}
		// Solved, it has no timer, but may be reopened: its workflow waits.
		// Closed (final), the workflow ends.
		if timers, live, _ := models.SLATimers(db, tk.ID); !live || len(timers) != 0 {
			t.Fatalf("solved: timers %+v, live %v", timers, live)
		}
		if err := db.Model(&models.Ticket{}).Where("id = ?", tk.ID).Update("status", models.TicketClosed).Error; err != nil {
			t.Fatal(err)
		}
		if _, live, _ := models.SLATimers(db, tk.ID); live {
			t.Fatal("a closed ticket's workflow is to go on")
		}
	})
}

// Applying the current policy moves the open tickets to it: a ticket
// opened before any policy gets clocks from now, one under an earlier
// version keeps the time it ran and takes the new targets; a solved
// ticket is left as it is.
func TestApplySLAPolicy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		d := newDesk(t, db)
		org, _ := models.FindOrg(t.Context(), db, d.org)
		if _, _, _, err := models.ApplySLAPolicy(db, d.org, models.Now()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("without a policy: %v", err)
		}
		t0 := time.Now().UTC().Truncate(time.Second)
		before := openUrgent(t, db, org, t0)
		*d.tickets += 100 // numbered apart from those OpenTicket numbers
		solved := d.ticket(t, db, models.TicketSolved)
		if _, err := models.SaveSLAPolicy(db, d.org, policy(t, `{"businessHours": "24x7",
			"targets": {"urgent": {"firstResponse": 60, "resolution": 240}, "normal": {"resolution": 600}}}`), "test", t0); err != nil {
			t.Fatal(err)
		}
		under1 := openUrgent(t, db, org, t0.Add(10*time.Minute))
		if _, err := models.SaveSLAPolicy(db, d.org, policy(t, `{"businessHours": "24x7",
			"targets": {"urgent": {"firstResponse": 30}}}`), "test", t0); err != nil {
			t.Fatal(err)
		}
		version, moved, wake, err := models.ApplySLAPolicy(db, d.org, t0.Add(20*time.Minute))
		if err != nil || version != 2 || moved != 2 || len(wake) != 2 {
			t.Fatalf("applied version %d to %d tickets, %d to wake: %v", version, moved, len(wake), err)
		}
		reread := func(id string) *models.Ticket {
			tk, err := models.FindInOrg[models.Ticket](db, d.org, id, "The ticket")
			if err != nil {
				t.Fatal(err)
			}
			return tk
		}
		s := slaState(t, reread(before.ID))
		if s.PolicyVersion != 2 || !due(s, models.SLAFirstResponse).Equal(t0.Add(50*time.Minute)) || len(s.Clocks) != 1 {
			t.Fatalf("the ticket opened before any policy: %+v", s)
		}
		s = slaState(t, reread(under1.ID))
		if s.PolicyVersion != 2 || !due(s, models.SLAFirstResponse).Equal(t0.Add(40*time.Minute)) || s.Clock(models.SLAResolution) != nil {
			t.Fatalf("the ticket under version 1: %+v", s)
		}
		if reread(solved.ID).SLAState != nil {
			t.Fatal("a solved ticket was given clocks")
		}
	})
}
