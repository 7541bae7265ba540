package models_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// deskFixture is a workspace with a customer and an agent.
type deskFixture struct {
	org, agent, customer string
	tickets              *int
}

func newDesk(t *testing.T, db *gorm.DB) deskFixture {
	t.Helper()
	org := newOrg(t, db, models.PlanBusiness, "UTC")
	now := models.Now()
	uid := models.NewID()
	agent := models.Member{ID: models.NewID(), OrgID: org.ID, UserID: &uid, Email: "dana@suite.io", Role: models.RoleAgent,
		Status: models.MemberActive, CreatedAt: now, UpdatedAt: now}
	cust := models.Customer{ID: models.NewID(), OrgID: org.ID, Name: "Maria", Email: "maria@acme.io", CreatedAt: now, UpdatedAt: now}
	for _, v := range []any{&agent, &cust} {
		if err := db.Create(v).Error; err != nil {
			t.Fatal(err)
		}
	}
	return deskFixture{org: org.ID, agent: agent.ID, customer: cust.ID, tickets: new(int)}
}

// ticket stores a ticket of the fixture's customer in status (solved
// tickets are assigned and counted once solved).
func (d deskFixture) ticket(t *testing.T, db *gorm.DB, status string) *models.Ticket {
	t.Helper()
	now := models.Now()
	*d.tickets++
	tk := &models.Ticket{ID: models.NewID(), OrgID: d.org, Number: 1000 + *d.tickets, Subject: "Printer", Status: status, Priority: "normal",
		Channel: "web", CustomerID: &d.customer, RequesterEmail: "maria@acme.io", Tags: "[]", CreatedAt: now, UpdatedAt: now}
	if status == models.TicketSolved {
		tk.AgentID, tk.SolvedAt, tk.SolveCount = &d.agent, &now, 1
	}
	if err := db.Create(tk).Error; err != nil {
		t.Fatal(err)
	}
	return tk
}

// UpdateTicket's rules, each case on a fresh ticket: what it refuses (with
// which code), what it changes, what it asks the caller to do (timers,
// notification) and what it tells the customer's history.
func TestUpdateTicketRules(t *testing.T) {
	cases := []struct {
		name   string
		status string // of the ticket before
		update func(d deskFixture) models.TicketUpdate
		code   string // refused with this code, or ""
		check  func(t *testing.T, tk *models.Ticket, ch models.TicketChange)
		events int
	}{
		{name: "solving needs an assignee", status: models.TicketOpen,
			update: func(deskFixture) models.TicketUpdate { return models.TicketUpdate{Status: ptr(models.TicketSolved)} },
			code:   "assignee_required"},
		{name: "nothing returns to new", status: models.TicketOpen,
			update: func(deskFixture) models.TicketUpdate { return models.TicketUpdate{Status: ptr(models.TicketNew)} },
			code:   "illegal_status_transition"},
		{name: "closed is final", status: models.TicketClosed,
			update: func(deskFixture) models.TicketUpdate { return models.TicketUpdate{Priority: ptr("high")} },
			code:   "ticket_closed"},
		{name: "a solved ticket keeps its assignee", status: models.TicketSolved,
			update: func(deskFixture) models.TicketUpdate { return models.TicketUpdate{SetAgent: true} },
			code:   "assignee_required"},
		{name: "assigned and solved at once", status: models.TicketNew,
			update: func(d deskFixture) models.TicketUpdate {
				return models.TicketUpdate{SetAgent: true, Agent: &d.agent, Status: ptr(models.TicketSolved)}
			},
			check: func(t *testing.T, tk *models.Ticket, ch models.TicketChange) {
				if !ch.Solved || ch.Unsolved || ch.Notify == nil || *ch.Notify != *tk.AgentID || tk.SolveCount != 1 || tk.SolvedAt == nil {
					t.Fatalf("change %+v, ticket %+v", ch, tk)
				}
			},
			events: 2},
		{name: "reopening a solved ticket", status: models.TicketSolved,
			update: func(deskFixture) models.TicketUpdate { return models.TicketUpdate{Status: ptr(models.TicketOpen)} },
			check: func(t *testing.T, tk *models.Ticket, ch models.TicketChange) {
				if ch.Solved || !ch.Unsolved || ch.Notify != nil || tk.SolvedAt != nil || tk.SolveCount != 1 {
					t.Fatalf("change %+v, ticket %+v", ch, tk)
				}
			},
			events: 1},
		{name: "fields only", status: models.TicketOpen,
			update: func(deskFixture) models.TicketUpdate {
				return models.TicketUpdate{Priority: ptr("urgent"), Subject: ptr("  Toner  "), Tags: ptr(`["a"]`)}
			},
			check: func(t *testing.T, tk *models.Ticket, ch models.TicketChange) {
				if tk.Priority != "urgent" || tk.Subject != "Toner" || tk.Tags != `["a"]` || asks(ch) || ch.Before.Subject != "Printer" {
					t.Fatalf("change %+v, ticket %+v", ch, tk)
				}
			}},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				d := newDesk(t, db)
				tk := d.ticket(t, db, tc.status)
				var got *models.Ticket
				var change models.TicketChange
				err := db.Transaction(func(tx *gorm.DB) (err error) {
					got, change, err = models.UpdateTicket(tx, d.org, tk.ID, tc.update(d), models.ActorSystem, models.Now())
					return err
				})
				if tc.code != "" {
					if code := domainCode(err); code != tc.code {
						t.Fatalf("error %v, want code %s", err, tc.code)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, got, change)
				var stored models.Ticket
				if err := db.Take(&stored, "id = ?", tk.ID).Error; err != nil || stored.Status != got.Status || stored.Priority != got.Priority {
					t.Fatalf("stored %+v, returned %+v, %v", stored, got, err)
				}
				var events int64
				db.Model(&models.CustomerEvent{}).Where("ticket_id = ? AND type = ?", tk.ID, "ticket_updated").Count(&events)
				if events != int64(tc.events) {
					t.Fatalf("%d history entries, want %d", events, tc.events)
				}
			})
		}
		t.Run("another workspace's ticket", func(t *testing.T) {
			d, other := newDesk(t, db), newDesk(t, db)
			tk := d.ticket(t, db, models.TicketOpen)
			_, _, err := models.UpdateTicket(db, other.org, tk.ID, models.TicketUpdate{Priority: ptr("low")}, models.ActorSystem, models.Now())
			if !errors.Is(err, models.ErrNotFound) {
				t.Fatalf("%v, want not found", err)
			}
		})
	})
}

// AddTicketComment: a customer's reply reopens and tells the assignee; the
// first public agent reply is the first response and opens a new ticket;
// an internal note is neither; a closed ticket takes nothing.
func TestAddTicketCommentRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		add := func(d deskFixture, tk *models.Ticket, author string, public bool) (*models.Ticket, models.TicketChange, error) {
			cm := &models.TicketComment{ID: models.NewID(), OrgID: d.org, AuthorType: author, Body: "Hello", Public: public, CreatedAt: models.Now()}
			return models.AddTicketComment(db, d.org, tk.ID, cm, models.ActorSystem, models.Now().Add(time.Minute))
		}
		d := newDesk(t, db)
		solved := d.ticket(t, db, models.TicketSolved)
		tk, ch, err := add(d, solved, models.AuthorCustomer, false)
		if err != nil || tk.Status != models.TicketOpen || !ch.Unsolved || ch.Notify == nil || *ch.Notify != d.agent {
			t.Fatalf("a customer's reply on a solved ticket: %+v %+v %v", tk, ch, err)
		}
		fresh := d.ticket(t, db, models.TicketNew)
		if tk, ch, err := add(d, fresh, models.AuthorAgent, false); err != nil || tk.FirstResponseAt != nil || tk.Status != models.TicketNew || asks(ch) {
			t.Fatalf("an internal note: %+v %+v %v", tk, ch, err)
		}
		tk, _, err = add(d, fresh, models.AuthorAgent, true)
		if err != nil || tk.FirstResponseAt == nil || tk.Status != models.TicketOpen {
			t.Fatalf("the first public reply: %+v %v", tk, err)
		}
		first := *tk.FirstResponseAt
		if tk, _, err := add(d, fresh, models.AuthorAgent, true); err != nil || !tk.FirstResponseAt.Equal(first) {
			t.Fatalf("a later reply moved the first response: %+v %v", tk, err)
		}
		closed := d.ticket(t, db, models.TicketClosed)
		if _, _, err := add(d, closed, models.AuthorCustomer, true); domainCode(err) != "ticket_closed" {
			t.Fatalf("a comment on a closed ticket: %v", err)
		}
		var comments int64
		db.Model(&models.TicketComment{}).Where("ticket_id = ?", closed.ID).Count(&comments)
		if comments != 0 {
			t.Fatal("the closed ticket took a comment")
		}
	})
}

// asks tells whether a change asks its caller for anything: a timer to
// start or cancel, a member to tell.
func asks(ch models.TicketChange) bool { return ch.Solved || ch.Unsolved || ch.Notify != nil }

// newTicket is a new normal-priority web ticket of org, requested by
// email, to be opened.
func newTicket(orgID, email string) *models.Ticket {
	now := models.Now()
	return &models.Ticket{ID: models.NewID(), OrgID: orgID, Subject: "Printer", Status: models.TicketNew, Priority: "normal",
		Channel: "web", RequesterEmail: email, Tags: "[]", CreatedAt: now, UpdatedAt: now}
}

// openTickets opens n tickets at once in org, each in its own
// transaction, and returns their numbers, or the codes of the refusals.
func openTickets(t *testing.T, db *gorm.DB, org *models.Organization, n int) (numbers []int, refused []string) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tk := newTicket(org.ID, fmt.Sprintf("c%d@acme.io", i))
			err := db.Transaction(func(tx *gorm.DB) error {
				_, err := models.OpenTicket(tx, org, tk, "", models.ActorSystem, nil)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				numbers = append(numbers, tk.Number)
			case domainCode(err) != "":
				refused = append(refused, domainCode(err))
			default:
				t.Errorf("open a ticket: %v", err)
			}
		})
	}
	wg.Wait()
	slices.Sort(numbers)
	return numbers, refused
}

// Tickets opened at once in one workspace take consecutive numbers, each
// once, continuing from the numbers the workspace used before PostgreSQL's
// numbering moved to a sequence (the counter row): on PostgreSQL the
// first of them race to create the workspace's sequence.
func TestTicketNumbersAreUniqueAndContinue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := newOrg(t, db, models.PlanEnterprise, "UTC")
		if err := db.Create(&models.TicketCounter{OrgID: org.ID, LastNumber: 1499, Month: "2026-01", MonthCount: 7, UpdatedAt: models.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		numbers, refused := openTickets(t, db, org, 20)
		want := make([]int, 20)
		for i := range want {
			want[i] = 1500 + i
		}
		if !slices.Equal(numbers, want) || len(refused) > 0 {
			t.Fatalf("numbers %v (refused %v), want 1500…1519", numbers, refused)
		}
		fresh := newOrg(t, db, models.PlanEnterprise, "UTC")
		if numbers, _ := openTickets(t, db, fresh, 3); !slices.Equal(numbers, []int{1001, 1002, 1003}) {
			t.Fatalf("a new workspace's numbers %v, want 1001…1003", numbers)
		}
	})
}

// A limited plan's monthly allowance holds under concurrent creations; a
// workspace that moves to it from an unlimited plan has its whole
// allowance for the rest of the month (the month counts the tickets opened
// on a limited plan). The count is a creation's last statement: on
// PostgreSQL a creation refused there has taken its number, and leaves a
// gap; one refused once the month is used (checked first) takes none.
func TestMonthlyTicketAllowance(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		three := 3
		if err := db.Create(&models.Plan{Name: "tiny", TicketsPerMonth: &three, CreatedAt: models.Now(), UpdatedAt: models.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		org := newOrg(t, db, models.PlanEnterprise, "UTC")
		if numbers, refused := openTickets(t, db, org, 5); len(numbers) != 5 || len(refused) > 0 {
			t.Fatalf("on enterprise: numbers %v, refused %v", numbers, refused)
		}
		org.Plan = "tiny"
		numbers, refused := openTickets(t, db, org, 6)
		if len(numbers) != 3 || numbers[0] < 1006 || numbers[2] > 1011 || numbers[0] == numbers[1] || numbers[1] == numbers[2] ||
			!slices.Equal(refused, []string{"ticket_limit_reached", "ticket_limit_reached", "ticket_limit_reached"}) {
			t.Fatalf("on tiny: numbers %v, refused %v; want 3 of 1006…1011 and 3 × ticket_limit_reached", numbers, refused)
		}
		// A creation refused once the month is used is refused before it
		// takes a number: the numbers on either side of it follow each other.
		next := func(plan string) (numbers []int, refused []string) {
			org.Plan = plan
			return openTickets(t, db, org, 1)
		}
		before, _ := next(models.PlanEnterprise)
		if _, refused := next("tiny"); !slices.Equal(refused, []string{"ticket_limit_reached"}) {
			t.Fatalf("on tiny with the month used: refused %v", refused)
		}
		if after, _ := next(models.PlanEnterprise); len(before) != 1 || len(after) != 1 || after[0] != before[0]+1 {
			t.Fatalf("numbers %v then %v around a refusal, want consecutive", before, after)
		}
	})
}

// A creation records what its opening sets off before it counts the
// month's ticket: the counter row is locked from the count to the commit,
// and what record does (events, automation rules) is not done under it.
func TestTicketCountedLast(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ten := 10
		if err := db.Create(&models.Plan{Name: "ten", TicketsPerMonth: &ten, CreatedAt: models.Now(), UpdatedAt: models.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		org := newOrg(t, db, "ten", "UTC")
		counted := func(tx *gorm.DB) int {
			var c models.TicketCounter
			if err := tx.Take(&c, "org_id = ?", org.ID).Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
				t.Fatal(err)
			}
			return c.MonthCount
		}
		for want := range 2 {
			var during int
			err := db.Transaction(func(tx *gorm.DB) error {
				_, err := models.OpenTicket(tx, org, newTicket(org.ID, fmt.Sprintf("r%d@acme.io", want)), "", models.ActorSystem,
					func(*models.Customer) error { during = counted(tx); return nil })
				return err
			})
			if err != nil || during != want || counted(db) != want+1 {
				t.Fatalf("ticket %d: %v; counted %d while recording (want %d), %d after", want+1, err, during, want, counted(db))
			}
		}
	})
}

// The allowance stays exact when the plan changes in the month: on a
// smaller plan whose allowance the month has already passed nothing more
// opens, and a larger plan after it still counts every ticket of the
// month. The count the counter row holds is kept, and a count of an
// earlier month counts as nothing.
func TestMonthlyTicketAllowanceAcrossPlanChangesAndMonths(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		plan := func(name string, perMonth int) {
			if err := db.Create(&models.Plan{Name: name, TicketsPerMonth: &perMonth, CreatedAt: models.Now(), UpdatedAt: models.Now()}).Error; err != nil {
				t.Fatal(err)
			}
		}
		plan("mid", 64)
		plan("small", 10)
		plan("large", 100)
		org := newOrg(t, db, "mid", "UTC")
		month := models.Now().Format("2006-01")
		// 30 counted already.
		if err := db.Create(&models.TicketCounter{OrgID: org.ID, LastNumber: 1000, Month: month, MonthCount: 30, UpdatedAt: models.Now()}).Error; err != nil {
			t.Fatal(err)
		}
		opened := func(plan string, n, want int) {
			t.Helper()
			org.Plan = plan
			numbers, refused := openTickets(t, db, org, n)
			if len(numbers) != want || len(refused) != n-want {
				t.Fatalf("on %s, %d creations: %d opened, refused %v; want %d opened", plan, n, len(numbers), refused, want)
			}
		}
		opened("mid", 40, 34)
		opened("small", 5, 0)
		// A caller that goes on after the refusal commits what the refusal
		// wrote: the month's count must survive it.
		org.Plan = "small"
		if err := db.Transaction(func(tx *gorm.DB) error {
			if _, err := models.OpenTicket(tx, org, newTicket(org.ID, "late@acme.io"), "", models.ActorSystem, nil); domainCode(err) != "ticket_limit_reached" {
				t.Errorf("on small after 64: %v, want ticket_limit_reached", err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		opened("large", 40, 36)
		opened("large", 1, 0)
		var counter models.TicketCounter
		if err := db.Take(&counter, "org_id = ?", org.ID).Error; err != nil || counter.Month != month || counter.MonthCount != 100 {
			t.Fatalf("counter %+v (%v), want %s counting 100", counter, err, month)
		}
		db.Model(&models.TicketCounter{}).Where("org_id = ?", org.ID).Update("month", "2000-01")
		opened("small", 12, 10)
	})
}

// Migration 00025 moves each workspace's latest month counted on the
// stripes back to its counter row, making the row where PostgreSQL's
// numbering had not, and the allowance goes on from it; its down step
// moves the month back to stripe 0.
func TestTicketAllowanceBackOnTheCounterRow(t *testing.T) {
	for _, d := range dbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			db := dbtest.OpenEmpty(t, d)
			if err := models.MigrateTo(t.Context(), db, 24); err != nil {
				t.Fatal(err)
			}
			three := 3
			if err := db.Create(&models.Plan{Name: "tiny", TicketsPerMonth: &three, CreatedAt: models.Now(), UpdatedAt: models.Now()}).Error; err != nil {
				t.Fatal(err)
			}
			month := models.Now().Format("2006-01")
			stripe := func(org string, stripe int, month string, used int) {
				dbtest.MustExec(t, db, "INSERT INTO ticket_allowances (org_id, stripe, month, used, sized_for, updated_at) VALUES (?, ?, ?, ?, 3, ?)",
					org, stripe, month, used, models.Now())
			}
			// numbered has a counter row (numbered up to 1004) still
			// holding the month 00024 moved off it; on the stripes, two
			// of this month, and an earlier month's count on a stripe not
			// counted on since.
			numbered := newOrg(t, db, "tiny", "UTC")
			dbtest.MustExec(t, db, "INSERT INTO ticket_counters (org_id, last_number, month, month_count, updated_at) VALUES (?, 1004, '2000-01', 7, ?)",
				numbered.ID, models.Now())
			stripe(numbered.ID, 0, month, 1)
			stripe(numbered.ID, 1, month, 1)
			stripe(numbered.ID, 2, "2000-01", 1)
			// rowless has no counter row, and two of this month.
			rowless := newOrg(t, db, "tiny", "UTC")
			stripe(rowless.ID, 0, month, 1)
			stripe(rowless.ID, 31, month, 1)
			if _, err := models.Migrate(t.Context(), db); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				org  *models.Organization
				want int
			}{{numbered, 1005}, {rowless, models.FirstTicketNumber}} {
				var counter models.TicketCounter
				if err := db.Take(&counter, "org_id = ?", c.org.ID).Error; err != nil || counter.Month != month || counter.MonthCount != 2 {
					t.Fatalf("counter %+v (%v), want %s counting 2", counter, err, month)
				}
				numbers, refused := openTickets(t, db, c.org, 3)
				if !slices.Equal(numbers, []int{c.want}) || len(refused) != 2 {
					t.Fatalf("with 2 of 3 counted on the stripes: opened %v, refused %v; want #%d alone", numbers, refused, c.want)
				}
			}
			if err := models.MigrateDownTo(t.Context(), db, 24); err != nil {
				t.Fatal(err)
			}
			var stripes []struct {
				Stripe, Used, SizedFor int
				Month                  string
			}
			db.Raw("SELECT stripe, month, used, sized_for FROM ticket_allowances WHERE org_id = ?", numbered.ID).Scan(&stripes)
			if len(stripes) != 1 || stripes[0].Stripe != 0 || stripes[0].Month != month || stripes[0].Used != 3 || stripes[0].SizedFor != 0 {
				t.Fatalf("after the down step: stripes %+v, want stripe 0 counting 3 of %s, sized for none", stripes, month)
			}
		})
	}
}

// OpenTicketAtOnce writes what OpenTicket writes, in one statement, where
// a workspace needs nothing else; anywhere else it writes nothing and
// leaves the ticket to OpenTicket.
func TestOpenTicketAtOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// Every field the statement writes, set apart from the defaults.
		fullTicket := func(org, email string) *models.Ticket {
			tk := newTicket(org, email)
			tk.Subject, tk.Description, tk.Priority, tk.Channel, tk.Tags = "Printer on fire", "It smokes.", "high", "api", `["hw"]`
			return tk
		}
		type event struct{ Type, Summary, Actor string }
		history := func(customer string) []event {
			var got []event
			if err := db.Model(&models.CustomerEvent{}).Where("customer_id = ?", customer).Order("created_at, id").Find(&got).Error; err != nil {
				t.Fatal(err)
			}
			return got
		}
		count := func(model any, orgID string) (n int64) {
			if err := db.Model(model).Where("org_id = ?", orgID).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		writesNothing := func(name string, org *models.Organization) {
			t.Helper()
			tk := fullTicket(org.ID, "nobody@acme.io")
			opened, err := models.OpenTicketAtOnce(db, tk, "", models.ActorSystem)
			if err != nil || opened || tk.Number != 0 || tk.CustomerID != nil {
				t.Fatalf("%s: opened %v (%+v), %v", name, opened, tk, err)
			}
			for _, model := range []any{&models.Ticket{}, &models.Customer{}, &models.CustomerEvent{}} {
				if n := count(model, org.ID); n != 0 {
					t.Fatalf("%s: %d rows of %T written", name, n, model)
				}
			}
		}

		org := newOrg(t, db, models.PlanEnterprise, "UTC")
		if database.DialectFor(db) != database.Postgres {
			writesNothing("SQLite", org)
			return
		}
		// A new requester: the customer is created, named after the
		// e-mail, with both events of its history, as OpenTicket does.
		first := fullTicket(org.ID, "maria@acme.io")
		if opened, err := models.OpenTicketAtOnce(db, first, "", models.Actor("key:k1")); err != nil || !opened {
			t.Fatalf("opened %v, %v", opened, err)
		}
		var stored models.Ticket
		if err := db.Take(&stored, "id = ?", first.ID).Error; err != nil {
			t.Fatal(err)
		}
		if stored.Number != models.FirstTicketNumber || first.Number != stored.Number || first.CustomerID == nil || *stored.CustomerID != *first.CustomerID ||
			stored.Subject != first.Subject || stored.Description != first.Description || stored.Priority != "high" || stored.Channel != "api" ||
			stored.Tags != `["hw"]` || stored.Status != models.TicketNew || stored.SLAState != nil || !stored.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("stored %+v, returned %+v", stored, first)
		}
		var maria models.Customer
		if err := db.Take(&maria, "id = ?", *first.CustomerID).Error; err != nil || maria.Name != "maria" || maria.Email != "maria@acme.io" || maria.OrgID != org.ID {
			t.Fatalf("the customer: %+v %v", maria, err)
		}
		want := []event{{"customer_created", "Customer created from a ticket", "key:k1"},
			{"ticket_created", fmt.Sprintf("Ticket #%d opened: Printer on fire", first.Number), "key:k1"}}
		if got := history(maria.ID); !slices.Equal(got, want) {
			t.Fatalf("history %+v, want %+v", got, want)
		}
		// OpenTicket tells the same story in the same words.
		slow := fullTicket(org.ID, "omar@acme.io")
		if _, err := models.OpenTicket(db, org, slow, "", models.Actor("key:k1"), nil); err != nil {
			t.Fatal(err)
		}
		want = []event{want[0], {"ticket_created", fmt.Sprintf("Ticket #%d opened: Printer on fire", slow.Number), "key:k1"}}
		if got := history(*slow.CustomerID); slow.Number != first.Number+1 || !slices.Equal(got, want) {
			t.Fatalf("OpenTicket numbered %d and told %+v", slow.Number, got)
		}

		// A known requester keeps their customer (and name): one event.
		again := fullTicket(org.ID, "maria@acme.io")
		if opened, err := models.OpenTicketAtOnce(db, again, "Maria Diaz", models.ActorSystem); err != nil || !opened {
			t.Fatalf("opened %v, %v", opened, err)
		}
		if again.Number != first.Number+2 || *again.CustomerID != maria.ID || len(history(maria.ID)) != 3 || count(&models.Customer{}, org.ID) != 2 {
			t.Fatalf("the second ticket %+v; history %+v", again, history(maria.ID))
		}

		// Where the ticket needs more than its rows, nothing is written.
		writesNothing("a plan with limits", newOrg(t, db, models.PlanBusiness, "UTC"))
		withPolicy := newOrg(t, db, models.PlanEnterprise, "UTC")
		if _, err := models.SaveSLAPolicy(db, withPolicy.ID, policy(t, `{"businessHours": "24x7", "targets": {"urgent": {"firstResponse": 60}}}`),
			"test", models.Now()); err != nil {
			t.Fatal(err)
		}
		writesNothing("an SLA policy", withPolicy)
		for _, status := range []struct{ status, by string }{{models.WebhookEnabled, ""}, {models.WebhookDisabled, models.DisabledByDelivery}} {
			withEndpoint := newOrg(t, db, models.PlanEnterprise, "UTC")
			now := models.Now()
			if err := db.Create(&models.WebhookEndpoint{ID: models.NewID(), OrgID: withEndpoint.ID, URL: "https://hooks.acme.io/", Events: `["*"]`,
				Secret: "whsec_x", Status: status.status, DisabledBy: status.by, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
				t.Fatal(err)
			}
			writesNothing("an endpoint "+status.status, withEndpoint)
		}
	})
}

// Requesters new to the workspace who open tickets at the same time get
// one customer: a statement that finds the customer created by another
// one, committed while it ran, writes nothing, and the transaction's way
// opens the ticket.
func TestOpenTicketAtOnceForOneNewRequesterAtATime(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := newOrg(t, db, models.PlanEnterprise, "UTC")
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				tk := newTicket(org.ID, "new@acme.io")
				opened, err := models.OpenTicketAtOnce(db, tk, "", models.ActorSystem)
				if err == nil && !opened {
					err = db.Transaction(func(tx *gorm.DB) error {
						_, err := models.OpenTicket(tx, org, tk, "", models.ActorSystem, nil)
						return err
					})
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var customers []models.Customer
		db.Find(&customers, "org_id = ?", org.ID)
		var numbers []int
		db.Model(&models.Ticket{}).Where("org_id = ?", org.ID).Order("number").Pluck("number", &numbers)
		var created, opened int64
		db.Model(&models.CustomerEvent{}).Where("org_id = ? AND type = ?", org.ID, "customer_created").Count(&created)
		db.Model(&models.CustomerEvent{}).Where("org_id = ? AND type = ?", org.ID, "ticket_created").Count(&opened)
		if len(customers) != 1 || len(numbers) != n || created != 1 || opened != n {
			t.Fatalf("%d customers, tickets %v, %d customer_created and %d ticket_created events", len(customers), numbers, created, opened)
		}
		for i := 1; i < n; i++ {
			if numbers[i] == numbers[i-1] {
				t.Fatalf("a number twice: %v", numbers)
			}
		}
		if database.DialectFor(db) != database.Postgres {
			return
		}

		// The race itself, held open: another transaction has created the
		// requester's customer; the statement waits for its commit, then
		// cannot see the row and writes nothing.
		hold := db.Begin()
		defer hold.Rollback()
		now := models.Now()
		if err := hold.Create(&models.Customer{ID: models.NewID(), OrgID: org.ID, Name: "Late", Email: "late@acme.io", CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		tk := newTicket(org.ID, "late@acme.io")
		type result struct {
			opened bool
			err    error
		}
		done := make(chan result, 1)
		go func() {
			opened, err := models.OpenTicketAtOnce(db, tk, "", models.ActorSystem)
			done <- result{opened, err}
		}()
		waiting := func() bool {
			var n int64
			db.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH open AS%'").Scan(&n)
			return n == 1
		}
		for deadline := time.Now().Add(10 * time.Second); !waiting(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the statement never waited for the customer's transaction")
			}
		}
		if err := hold.Commit().Error; err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.err != nil || r.opened {
			t.Fatalf("opened %v, %v: the statement saw a customer its snapshot cannot hold", r.opened, r.err)
		}
		var tickets int64
		db.Model(&models.Ticket{}).Where("id = ?", tk.ID).Count(&tickets)
		if tickets != 0 {
			t.Fatal("the statement that found no customer wrote its ticket")
		}
		if _, err := models.OpenTicket(db, org, tk, "", models.ActorSystem, nil); err != nil || tk.CustomerID == nil {
			t.Fatalf("the transaction's way: %+v %v", tk, err)
		}
	})
}
