package models

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
)

// The ticket operations below run in tx, the caller's transaction (a
// request's, or an activity's own): they write several rows, which commit
// or roll back together with the rest of the caller's change.

// OpenTicket creates t (its number set here) in org: it takes the next
// ticket number within the plan's seat and monthly ticket limits, finds or
// creates the requester's customer (named requesterName, or after the
// e-mail's local part), and records both on the customer's history, by
// actor. Two creations can never both take the last slot of a limited
// plan (takeTicketSlot). It returns the customer
// when it created one (nil when the requester was one already).
func OpenTicket(tx *gorm.DB, org *Organization, t *Ticket, requesterName string, by Actor) (*Customer, error) {
	number, err := takeTicketSlot(tx, org, t.CreatedAt)
	if err != nil {
		return nil, err
	}
	t.Number = number
	cust, created, err := customerFor(tx, org.ID, t.RequesterEmail, requesterName)
	if err != nil {
		return nil, err
	}
	t.CustomerID = &cust.ID
	var newCustomer *Customer
	var history []CustomerEvent // recorded together, after the ticket
	if created {
		newCustomer = cust
		history = append(history, NewCustomerEvent(org.ID, cust.ID, nil, "customer_created", customerFromTicket, by))
	}
	if err := planSLA(tx, nil, t, nil, t.CreatedAt); err != nil {
		return nil, err
	}
	if err := tx.Create(t).Error; err != nil {
		return nil, err
	}
	history = append(history, NewCustomerEvent(org.ID, cust.ID, &t.ID, "ticket_created",
		ticketOpened+Itoa(t.Number)+" opened: "+t.Subject, by))
	return newCustomer, tx.Create(&history).Error
}

// The customer history's summaries of a ticket's opening, written by
// OpenTicket and by openTicketStatement.
const (
	customerFromTicket = "Customer created from a ticket"
	ticketOpened       = "Ticket #" // the number, " opened: " and the subject follow
)

// OpenTicketAtOnce is OpenTicket as one statement, for the workspaces
// whose ticket needs nothing but its rows: on PostgreSQL, a workspace on a
// plan without seat or ticket limits, without an SLA policy and without a
// webhook endpoint that receives events. One data-modifying WITH takes the
// number from the workspace's sequence, finds or creates the requester's
// customer and writes the ticket and the customer's history, checking
// those conditions itself; db may be a request's one statement
// (web.OneStatementTx). It reports whether it opened t (its number and
// customer set). When it did not, it wrote nothing, and the caller opens
// t with OpenTicket: on SQLite, when a condition does not hold, and when
// the requester's customer was created by a transaction that committed
// while the statement ran (the statement cannot see it).
//
// Why: a create the transaction's way is nine statements (the
// organization, the plan, the number, the customer's lookup and insert,
// the SLA policy, the ticket, the history, the webhook endpoints) and
// BEGIN and COMMIT, each a round trip. As one statement,
// `POST /helpdesk/tickets` went from 0.15 to 0.39–0.44 of the bare INSERT
// in `make bench`, and the suite's CPU from 0.90–1.08 to 0.27–0.36 ms a
// request (docs/decisions.md, "Helpdesk").
func OpenTicketAtOnce(db *gorm.DB, t *Ticket, requesterName string, by Actor) (bool, error) {
	if db.Error != nil {
		return false, db.Error
	}
	if database.DialectFor(db) != database.Postgres {
		return false, nil
	}
	customer := newCustomerFor(t.OrgID, t.RequesterEmail, requesterName)
	// In the history's order (created_at, then id): the customer, then the
	// ticket.
	customerEvent, customerEventAt := NewID(), Now()
	ticketEvent, ticketEventAt := NewID(), Now()
	var number int
	var customerID string
	opened, err := queryRow(db, openTicketStatement, []any{
		t.OrgID, t.OrgID,
		customer.ID, customer.OrgID, customer.Name, customer.Email, customer.CreatedAt, customer.UpdatedAt,
		t.OrgID, t.RequesterEmail,
		t.ID, t.OrgID, t.OrgID, t.Subject, t.Description, t.Status, t.Priority, t.Channel, t.RequesterEmail, t.Tags, t.CreatedAt, t.UpdatedAt,
		customerEvent, t.OrgID, customerFromTicket, string(by), customerEventAt,
		ticketEvent, t.OrgID, ticketOpened, " opened: " + t.Subject, string(by), ticketEventAt}, &number, &customerID)
	if err != nil || !opened {
		return false, err
	}
	t.Number, t.CustomerID = number, &customerID
	return true, nil
}

// openTicketStatement is OpenTicketAtOnce's statement. Its parameters are
// typed: those of a SELECT feeding an INSERT, or of a UNION, are not
// given the columns' types.
var openTicketStatement = database.Numbered(`WITH open AS (
  SELECT 1 FROM organizations o JOIN plans p ON p.name = o.plan
  WHERE o.id = CAST(? AS uuid) AND p.seats IS NULL AND p.tickets_per_month IS NULL
    AND NOT EXISTS (SELECT 1 FROM sla_policies WHERE org_id = o.id)
    AND NOT EXISTS (` + AnyReceivingEndpoint + `)
), created AS (
  INSERT INTO customers (id, org_id, name, email, phone, company, notes, created_at, updated_at)
  SELECT CAST(? AS uuid), CAST(? AS uuid), CAST(? AS text), CAST(? AS text), '', '', '', CAST(? AS timestamptz), CAST(? AS timestamptz) FROM open
  ON CONFLICT (org_id, email) DO NOTHING RETURNING id
), customer AS (
  SELECT id, true AS created FROM created
  UNION ALL
  SELECT id, false FROM customers WHERE org_id = CAST(? AS uuid) AND email = CAST(? AS text) AND NOT EXISTS (SELECT 1 FROM created)
), ticket AS (
  INSERT INTO tickets (id, org_id, number, subject, description, status, priority, channel, customer_id, requester_email, tags, created_at, updated_at)
  SELECT CAST(? AS uuid), CAST(? AS uuid), next_ticket_number(CAST(? AS uuid)), CAST(? AS text), CAST(? AS text), CAST(? AS text),
    CAST(? AS text), CAST(? AS text), customer.id, CAST(? AS text), CAST(? AS text), CAST(? AS timestamptz), CAST(? AS timestamptz)
  FROM open, customer
  RETURNING id, number, customer_id
), history AS (
  INSERT INTO customer_events (id, org_id, customer_id, ticket_id, type, summary, actor, created_at)
  SELECT CAST(? AS uuid), CAST(? AS uuid), customer.id, NULL, 'customer_created', CAST(? AS text), CAST(? AS text), CAST(? AS timestamptz)
  FROM customer, ticket WHERE customer.created
  UNION ALL
  SELECT CAST(? AS uuid), CAST(? AS uuid), ticket.customer_id, ticket.id, 'ticket_created', CAST(? AS text) || ticket.number || CAST(? AS text),
    CAST(? AS text), CAST(? AS timestamptz)
  FROM ticket
)
SELECT ticket.number, ticket.customer_id FROM ticket`)

// ErrTicketClosed refuses a change to a closed ticket.
var ErrTicketClosed = Err(ErrConflict, "ticket_closed", "The ticket is closed; open a new one.")

// TicketUpdate is a change asked of a ticket; a nil field is left as it
// is. Agent is set to change the assignee: a member id, or nil to
// unassign (the caller checks that the id is a member's).
type TicketUpdate struct {
	Status   *string
	Priority *string
	SetAgent bool
	Agent    *string
	Subject  *string
	// Tags is the tags' JSON array.
	Tags *string
}

// TicketChange is what an update or a comment did that the caller acts
// on in the same transaction: timers to start or cancel, a member to
// notify.
type TicketChange struct {
	// Solved: the ticket moved to solved (SolveCount counts it); its
	// auto-close timer is due.
	Solved bool
	// Unsolved: the ticket left solved; the auto-close timer of its
	// SolveCount is moot.
	Unsolved bool
	// Notify is the member to tell: the new assignee of an update, the
	// assignee of a ticket its customer replied on.
	Notify *string
	// Before is the ticket as it was before the change (its webhook
	// events' previous values).
	Before Ticket
}

// UpdateTicket applies u to the workspace's ticket id, locked, by actor:
// status moves follow the workflow (CheckTicketMove; 409 naming the
// allowed moves), a solved ticket keeps its assignee, a closed ticket is
// final. The change is saved and told on the customer's history.
func UpdateTicket(tx *gorm.DB, orgID, id string, u TicketUpdate, by Actor, now time.Time) (*Ticket, TicketChange, error) {
	var change TicketChange
	t, err := changeableTicket(tx, orgID, id)
	if err != nil {
		return nil, change, err
	}
	change.Before = *t
	var events []string
	if u.SetAgent && !sameID(u.Agent, t.AgentID) {
		t.AgentID = u.Agent
		if u.Agent == nil {
			events = append(events, "Ticket #"+Itoa(t.Number)+" unassigned")
		} else {
			change.Notify = u.Agent
			events = append(events, "Ticket #"+Itoa(t.Number)+" assigned to an agent")
		}
	}
	if u.Status != nil && *u.Status != t.Status {
		from := t.Status
		if err := CheckTicketMove(from, *u.Status, t.AgentID != nil); err != nil {
			return nil, change, err
		}
		change = moveTicket(t, *u.Status, now, change)
		events = append(events, "Ticket #"+Itoa(t.Number)+" moved from "+from+" to "+t.Status)
	}
	if t.Status == TicketSolved && t.AgentID == nil {
		return nil, change, Err(ErrConflict, "assignee_required", "A solved ticket keeps its assignee; reopen it first.")
	}
	if u.Priority != nil {
		t.Priority = *u.Priority
	}
	if u.Subject != nil {
		t.Subject = strings.TrimSpace(*u.Subject)
	}
	if u.Tags != nil {
		t.Tags = *u.Tags
	}
	t.UpdatedAt = now
	if err := planSLA(tx, &change.Before, t, nil, now); err != nil {
		return nil, change, err
	}
	if err := tx.Save(t).Error; err != nil {
		return nil, change, err
	}
	if t.CustomerID != nil {
		for _, e := range events {
			if err := RecordCustomerEvent(tx, t.OrgID, *t.CustomerID, &t.ID, "ticket_updated", e, by); err != nil {
				return nil, change, err
			}
		}
	}
	return t, change, nil
}

// changeableTicket loads the workspace's ticket id, locked, unless it is closed
// (final: it takes no change).
func changeableTicket(tx *gorm.DB, orgID, id string) (*Ticket, error) {
	t, err := FindInOrg[Ticket](LockForUpdate(tx), orgID, id, "The ticket")
	if err == nil && t.Status == TicketClosed {
		return nil, ErrTicketClosed
	}
	return t, err
}

// moveTicket moves t to status, keeping the solved bookkeeping: solving
// records solvedAt and counts the solve; leaving solved clears solvedAt.
func moveTicket(t *Ticket, status string, now time.Time, change TicketChange) TicketChange {
	wasSolved := t.Status == TicketSolved
	t.Status = status
	switch {
	case status == TicketSolved:
		t.SolvedAt = &now
		t.SolveCount++
		change.Solved = true
	case wasSolved:
		t.SolvedAt = nil
		change.Unsolved = true
	}
	return change
}

// AddTicketComment adds cm (its TicketID set here) to the workspace's
// ticket id, locked, by actor. A customer's comment is public, names the
// requester as its author and reopens a pending, on-hold or solved ticket
// (Unsolved when it was solved); the ticket's assignee is to be told
// (Notify). The first public agent reply records the first-response
// time and opens a new ticket. A closed ticket takes no comments.
func AddTicketComment(tx *gorm.DB, orgID, id string, cm *TicketComment, by Actor, now time.Time) (*Ticket, TicketChange, error) {
	var change TicketChange
	t, err := changeableTicket(tx, orgID, id)
	if err != nil {
		return nil, change, err
	}
	change.Before = *t
	cm.TicketID = t.ID
	var event string
	if cm.AuthorType == AuthorCustomer {
		cm.Public, cm.AuthorCustomerID = true, t.CustomerID
		event = "Customer replied on ticket #" + Itoa(t.Number)
		if CustomerReopens(t.Status) {
			change = moveTicket(t, TicketOpen, now, change)
			event += " (reopened)"
		}
		change.Notify = t.AgentID
	} else if cm.Public {
		if t.FirstResponseAt == nil {
			t.FirstResponseAt = &now
		}
		if t.Status == TicketNew {
			t.Status = TicketOpen // an agent's reply opens a new ticket
		}
		event = "Agent replied on ticket #" + Itoa(t.Number)
	}
	if err := tx.Create(cm).Error; err != nil {
		return nil, change, err
	}
	t.UpdatedAt = now
	if err := planSLA(tx, &change.Before, t, cm, now); err != nil {
		return nil, change, err
	}
	if err := tx.Save(t).Error; err != nil {
		return nil, change, err
	}
	if event != "" && t.CustomerID != nil {
		if err := RecordCustomerEvent(tx, t.OrgID, *t.CustomerID, &t.ID, "comment_added", event, by); err != nil {
			return nil, change, err
		}
	}
	return t, change, nil
}

// DeleteTicket deletes the workspace's ticket id, locked, and tells it on
// the customer's history by actor; its SLA clocks end. It returns the
// deleted ticket.
func DeleteTicket(tx *gorm.DB, orgID, id string, by Actor) (*Ticket, error) {
	t, err := FindInOrg[Ticket](LockForUpdate(tx), orgID, id, "The ticket")
	if err != nil {
		return nil, err
	}
	if err := tx.Delete(t).Error; err != nil {
		return nil, err
	}
	if t.SLAState != nil { // its clocks end: the workflow finds no ticket
		if err := WakeTicketSLA(tx, t); err != nil {
			return nil, err
		}
	}
	if t.CustomerID == nil {
		return t, nil
	}
	return t, RecordCustomerEvent(tx, t.OrgID, *t.CustomerID, nil, "ticket_deleted", "Ticket #"+Itoa(t.Number)+" deleted", by)
}

func sameID(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// takeTicketSlot checks the plan's seat and monthly ticket limits and
// returns the workspace's next ticket number.
//
// Only what a limit needs is locked, and no creation waits for all the
// others: the monthly allowance of a limited plan is counted on one of
// the workspace's allowance stripes, locked until commit
// (takeMonthlyTicket), so two creations can never both take the last
// ticket of the month; an unlimited plan's creations take no lock at all.
// The month counts the tickets opened on a limited plan: a workspace that
// moves to one from an unlimited plan has the new plan's whole allowance
// for the rest of the month.
func takeTicketSlot(tx *gorm.DB, org *Organization, now time.Time) (int, error) {
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return 0, err
	}
	if plan.Seats != nil {
		used, err := SeatsInUse(tx, org.ID)
		if err != nil {
			return 0, err
		}
		if used > int64(*plan.Seats) {
			return 0, Err(ErrLimit, "seat_limit_reached",
				"%d seats are in use but the %s plan has %d; remove members or upgrade to open tickets.", used, plan.Name, *plan.Seats)
		}
	}
	if plan.TicketsPerMonth != nil {
		if err := takeMonthlyTicket(tx, org, plan, now); err != nil {
			return 0, err
		}
	}
	return nextTicketNumber(tx, org.ID, now)
}

// allowanceStripes is how many rows a limited plan's monthly allowance is
// split over. A creation locks one until its commit, so that many
// creations in one workspace run at once; more than the connections a
// workspace's creations use at once (16 in `make bench`), so that a
// creation nearly always finds a free one.
const allowanceStripes = 32

// allowanceShare is stripe's share of a monthly allowance of limit: the
// shares differ by at most one and add up to limit.
func allowanceShare(limit, stripe int) int {
	share := limit / allowanceStripes
	if stripe < limit%allowanceStripes {
		share++
	}
	return share
}

// takeMonthlyTicket counts one more of the month's tickets on one of the
// workspace's allowance stripes, or refuses with ticket_limit_reached.
//
// A stripe counts at most its share of the plan's allowance (TicketAllowance:
// used below allowanceShare, a stripe of an earlier month counting as
// empty), so the stripes together never count more than the allowance.
// It takes, locked until commit, the first stripe with room that no other
// creation holds (SKIP LOCKED on PostgreSQL). When every stripe with room
// is held, it waits for one of them, picked at random so that the waiting
// creations spread over the stripes instead of queueing on one. When the
// stripes are missing (the workspace's first limited ticket), or the
// plan's allowance changed since they were cut, it locks them all, in
// order, and cuts the shares again from what the month has used
// (shareAllowance). With no stripe with room, the month is used up: the
// counts are committed, and a count only goes up within a month.
//
// Each try that waits runs in a savepoint that a failed try rolls back:
// PostgreSQL keeps the lock of a row that fails its recheck (a stripe that
// another creation filled between the statement's snapshot and its lock),
// and a creation holding such a lock while it waits for another stripe
// could close a deadlock with one that locks them all.
func takeMonthlyTicket(tx *gorm.DB, org *Organization, plan *Plan, now time.Time) error {
	a := allowance{tx: tx, org: org.ID, month: now.In(org.Location()).Format("2006-01"), limit: *plan.TicketsPerMonth, now: now}
	refused := Err(ErrLimit, "ticket_limit_reached",
		"The %s plan allows %d tickets a month and they are used; upgrade for more.", plan.Name, a.limit)
	for {
		if ok, err := a.take(lockSkippingLocked(tx), anyStripe); ok || err != nil {
			return err
		}
		var stripes []TicketAllowance
		if err := tx.Where("org_id = ?", a.org).Order("stripe").Find(&stripes).Error; err != nil {
			return err
		}
		if len(stripes) != allowanceStripes || slices.ContainsFunc(stripes, a.unsized) {
			if done, err := a.share(refused); done || err != nil {
				return err
			}
			continue
		}
		var room []int
		for _, s := range stripes {
			if a.hasRoom(s) {
				room = append(room, s.Stripe)
			}
		}
		if len(room) == 0 {
			return refused
		}
		if ok, err := a.take(LockForUpdate(tx), room[rand.IntN(len(room))]); ok || err != nil {
			return err
		}
	}
}

// allowance is one creation's count on a workspace's stripes.
type allowance struct {
	tx    *gorm.DB
	org   string
	month string
	limit int
	now   time.Time
}

// anyStripe asks take for the first stripe with room.
const anyStripe = -1

// take counts on the stripe numbered stripe (or the first, anyStripe) if
// it has room and locked, a locking query of a.tx, returns it. It tells
// whether it counted; a try that found none is rolled back to its
// savepoint, its locks with it.
func (a allowance) take(locked *gorm.DB, stripe int) (bool, error) {
	if err := a.tx.SavePoint(allowanceSavepoint).Error; err != nil {
		return false, err
	}
	q := locked.Where(stripeWithRoom, map[string]any{"org": a.org, "month": a.month, "limit": a.limit})
	if stripe != anyStripe {
		q = q.Where("stripe = ?", stripe)
	}
	var free TicketAllowance
	switch err := q.Order("stripe").Take(&free).Error; {
	case err == nil:
		return true, a.countOn(free)
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return false, err
	}
	return false, a.tx.RollbackTo(allowanceSavepoint).Error
}

// stripeWithRoom finds the workspace's stripes (@org) that have room in
// @month for an allowance of @limit: hasRoom in SQL.
var stripeWithRoom = fmt.Sprintf(`org_id = @org AND sized_for = @limit
  AND (CASE WHEN month = @month THEN used ELSE 0 END) < @limit / %d + CASE WHEN stripe < @limit %% %d THEN 1 ELSE 0 END`,
	allowanceStripes, allowanceStripes)

// hasRoom tells whether stripe, cut for a's allowance, counts less of the
// month than its share (stripeWithRoom in SQL).
func (a allowance) hasRoom(stripe TicketAllowance) bool {
	return used(stripe, a.month) < allowanceShare(a.limit, stripe.Stripe)
}

// unsized tells whether stripe was cut from another allowance than a's.
func (a allowance) unsized(stripe TicketAllowance) bool { return stripe.SizedFor != a.limit }

// share locks every stripe of the workspace, in order (made first where
// missing: two first creations that made them at once would otherwise
// both cut the shares, the later one unaware of what the other counted),
// cuts the shares again for the plan's allowance, and counts on the first
// stripe with room, or answers refused; done tells it did either. When
// another creation cut them while this one waited for the locks, it gives
// the locks back (done false) and the caller tries again: holding every
// stripe to its commit would make the creations that arrive meanwhile
// queue behind it.
func (a allowance) share(refused error) (done bool, err error) {
	if err := a.tx.SavePoint(allowanceSavepoint).Error; err != nil {
		return false, err
	}
	if err := a.tx.Clauses(clause.OnConflict{DoNothing: true}).Create(unshared(a.org, a.now)).Error; err != nil {
		return false, err
	}
	var stripes []TicketAllowance
	if err := LockForUpdate(a.tx).Where("org_id = ?", a.org).Order("stripe").Find(&stripes).Error; err != nil {
		return false, err
	}
	if !slices.ContainsFunc(stripes, a.unsized) {
		return false, a.tx.RollbackTo(allowanceSavepoint).Error
	}
	stripes = shareAllowance(a.org, stripes, a.month, a.limit, a.now)
	if err := a.tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&stripes).Error; err != nil {
		return false, err
	}
	for _, s := range stripes {
		if a.hasRoom(s) {
			return true, a.countOn(s)
		}
	}
	return true, refused
}

// countOn counts one more ticket of the month on stripe, which a.tx
// holds. (Its key is named in full: GORM leaves a zero key field, stripe
// 0, out of the WHERE it builds from a model.)
func (a allowance) countOn(stripe TicketAllowance) error {
	return a.tx.Model(&TicketAllowance{}).Where("org_id = ? AND stripe = ?", stripe.OrgID, stripe.Stripe).
		Updates(map[string]any{"month": a.month, "used": used(stripe, a.month) + 1, "updated_at": a.now}).Error
}

// allowanceSavepoint is takeMonthlyTicket's savepoint.
const allowanceSavepoint = "ticket_allowance"

// used is what stripe counts of month: nothing when it counts another.
func used(stripe TicketAllowance, month string) int {
	if stripe.Month != month {
		return 0
	}
	return stripe.Used
}

// unshared is every stripe of a workspace, counting nothing and sized for
// no allowance, to be made where missing.
func unshared(orgID string, now time.Time) []TicketAllowance {
	stripes := make([]TicketAllowance, allowanceStripes)
	for i := range stripes {
		stripes[i] = TicketAllowance{OrgID: orgID, Stripe: i, UpdatedAt: now}
	}
	return stripes
}

// shareAllowance cuts a monthly allowance of limit into the workspace's
// allowanceStripes stripes again, keeping what stripes have counted of
// month: it fills each stripe up to its share, in order, and counts what
// is over the allowance (after a move to a smaller plan) on the last
// stripe, so that a later move to a larger plan still knows it.
func shareAllowance(orgID string, stripes []TicketAllowance, month string, limit int, now time.Time) []TicketAllowance {
	total := 0
	for _, s := range stripes {
		total += used(s, month)
	}
	shared := make([]TicketAllowance, allowanceStripes)
	for i := range shared {
		n := min(total, allowanceShare(limit, i))
		if i == allowanceStripes-1 {
			n = total
		}
		total -= n
		shared[i] = TicketAllowance{OrgID: orgID, Stripe: i, Month: month, Used: n, SizedFor: limit, UpdatedAt: now}
	}
	return shared
}

// lockSkippingLocked locks the rows tx reads, passing over those another
// transaction holds (PostgreSQL; SQLite's writers take turns anyway).
func lockSkippingLocked(tx *gorm.DB) *gorm.DB {
	if database.DialectFor(tx) == database.Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	return tx
}

// nextTicketNumber takes the workspace's next ticket number. On PostgreSQL
// it is the workspace's own sequence (next_ticket_number, migration
// 00022), which hands numbers out without a lock: creations in one
// workspace run side by side, and one that rolls back leaves a gap. On
// SQLite, whose writers take turns anyway, it is the counter row.
func nextTicketNumber(tx *gorm.DB, orgID string, now time.Time) (int, error) {
	var number int
	var err error
	if database.DialectFor(tx) == database.Postgres {
		err = tx.Raw("SELECT next_ticket_number(?)", orgID).Scan(&number).Error
	} else {
		err = tx.Raw(`INSERT INTO ticket_counters (org_id, last_number, month, month_count, updated_at) VALUES (?, ?, '', 0, ?)
ON CONFLICT (org_id) DO UPDATE SET last_number = ticket_counters.last_number + 1, updated_at = excluded.updated_at
RETURNING last_number`, orgID, FirstTicketNumber, now).Scan(&number).Error
	}
	return number, err
}

// newCustomerFor is the customer a ticket's requester becomes: named
// name, or after the e-mail's local part.
func newCustomerFor(orgID, email, name string) Customer {
	now := Now()
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	return Customer{ID: NewID(), OrgID: orgID, Name: name, Email: email, CreatedAt: now, UpdatedAt: now}
}

// customerFor finds the workspace's customer with email, or creates one.
func customerFor(tx *gorm.DB, orgID, email, name string) (*Customer, bool, error) {
	var cust Customer
	err := tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
	if err == nil {
		return &cust, false, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, err
	}
	cust = newCustomerFor(orgID, email, name)
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "org_id"}, {Name: "email"}}, DoNothing: true}).Create(&cust)
	if res.Error != nil || res.RowsAffected == 1 {
		return &cust, res.Error == nil, res.Error
	}
	// Created concurrently (e.g. POST /customers): use that one.
	return &cust, false, tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
}
