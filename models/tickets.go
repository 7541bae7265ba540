package models

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
)

// The ticket operations below run in tx, the caller's transaction (a
// request's, or an activity's own): they write several rows, which commit
// or roll back together with the rest of the caller's change.

// OpenTicket creates t (its number set here) in org: it checks the plan's
// seat and monthly ticket limits, takes the next ticket number, finds or
// creates the requester's customer (named requesterName, or after the
// e-mail's local part), and records both on the customer's history, by
// actor. record, when not nil, then records in tx what the opening sets
// off (its SLA workflow's wake-up, its events and the automation runs they
// start), and the month's allowance of a limited plan is counted last
// (takeMonthlyTicket): two creations can never both take the last ticket
// of the month. It returns the customer when it created one (nil when the
// requester was one already). A ticket opened under an SLA policy has
// its SLA state (t.HasSLA); one with a running clock (t.HasSLATimer) has
// record start its SLA workflow in tx (record.Tx.WakeTicketSLA). t's
// custom fields are the caller's to set, defaults included (ApplyFields
// for the API, headerFields for an e-mail).
func OpenTicket(tx *gorm.DB, org *Organization, t *Ticket, requesterName string, by Actor, record func(newCustomer *Customer) error) (*Customer, error) {
	plan, month, err := ticketPlan(tx, org, t.CreatedAt)
	if err != nil {
		return nil, err
	}
	if t.Number, err = nextTicketNumber(tx, org.ID, t.CreatedAt); err != nil {
		return nil, err
	}
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
	if _, err := planSLA(tx, nil, t, nil, t.CreatedAt); err != nil {
		return nil, err
	}
	if err := tx.Create(t).Error; err != nil {
		return nil, err
	}
	history = append(history, NewCustomerEvent(org.ID, cust.ID, &t.ID, "ticket_created",
		ticketOpened+Itoa(t.Number)+" opened: "+t.Subject, by))
	if err := tx.Create(&history).Error; err != nil {
		return nil, err
	}
	if record != nil {
		if err := record(newCustomer); err != nil {
			return nil, err
		}
	}
	if plan.TicketsPerMonth != nil {
		if err := takeMonthlyTicket(tx, org, plan, month, t.CreatedAt); err != nil {
			return nil, err
		}
	}
	return newCustomer, nil
}

// The customer history's summaries of a ticket's opening, written by
// OpenTicket and by OpenTicketStatement.
const (
	customerFromTicket = "Customer created from a ticket"
	ticketOpened       = "Ticket #" // the number, " opened: " and the subject follow
)

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
	// Fields are custom field values sent (ApplyFields; nil: none).
	Fields map[string]json.RawMessage
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
	// SLAMoved: the change moved the ticket's SLA clocks; its SLA workflow
	// is to be woken in the change's transaction (record.Tx.WakeTicketSLA).
	SLAMoved bool
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
	if t.Fields, err = ApplyFields(tx, orgID, AutomationTicket, t.Fields, u.Fields, false); err != nil {
		return nil, change, err
	}
	t.UpdatedAt = now
	if change.SLAMoved, err = planSLA(tx, &change.Before, t, nil, now); err != nil {
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
	if change.SLAMoved, err = planSLA(tx, &change.Before, t, cm, now); err != nil {
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
// deleted ticket; when it had clocks (HasSLA), the caller wakes its SLA
// workflow in tx, which then finds no ticket and ends.
func DeleteTicket(tx *gorm.DB, orgID, id string, by Actor) (*Ticket, error) {
	t, err := FindInOrg[Ticket](LockForUpdate(tx), orgID, id, "The ticket")
	if err != nil {
		return nil, err
	}
	if err := tx.Delete(t).Error; err != nil {
		return nil, err
	}
	if t.CustomerID == nil {
		return t, nil
	}
	return t, RecordCustomerEvent(tx, t.OrgID, *t.CustomerID, nil, "ticket_deleted", "Ticket #"+Itoa(t.Number)+" deleted", by)
}

func sameID(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// ticketPlan is org's plan, once its seat limit and monthly ticket
// allowance are checked, and the month the allowance counts (org.Month of
// now; "" when the plan has none).
//
// Only what a limit needs is serialized: the monthly allowance of a
// limited plan is counted on the workspace's counter row, locked until
// commit (takeMonthlyTicket), so two creations can never both take the
// last ticket of the month; an unlimited plan's creations take no lock at
// all. The count is the creation's last statement (OpenTicket), so a
// limited workspace's creations wait for each other only from it to their
// commit, not through their customer, ticket, events and automation
// rules: with the count first, 20 rules cost a business plan's creates
// 15–27 % of their rate in `make bench` (docs/decisions.md, "The monthly
// allowance counted last"). Checked here first, without the lock, so that
// a workspace past its allowance is refused before it writes anything: a
// creation that passes this check and is refused by the count rolls back,
// leaving a gap in the ticket numbers, as any rollback does on PostgreSQL.
// The month counts the tickets opened on a limited plan: a workspace that
// moves to one from an unlimited plan has the new plan's whole allowance
// for the rest of the month.
func ticketPlan(tx *gorm.DB, org *Organization, now time.Time) (plan *Plan, month string, err error) {
	if plan, err = FindPlan(tx.Statement.Context, tx, org.Plan); err != nil {
		return nil, "", err
	}
	if plan.Seats != nil {
		used, err := SeatsInUse(tx, org.ID)
		if err != nil {
			return nil, "", err
		}
		if used > int64(*plan.Seats) {
			return nil, "", Err(ErrLimit, "seat_limit_reached",
				"%d seats are in use but the %s plan has %d; remove members or upgrade to open tickets.", used, plan.Name, *plan.Seats)
		}
	}
	if plan.TicketsPerMonth == nil {
		return plan, "", nil
	}
	month = org.Month(now)
	var counter TicketCounter
	err = tx.Take(&counter, "org_id = ?", org.ID).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
	case err != nil:
		return nil, "", err
	case monthUsed(counter, month) >= *plan.TicketsPerMonth:
		return nil, "", ticketLimitReached(plan)
	}
	return plan, month, nil
}

// monthUsed is how many of month's tickets counter counts: none when it
// counts an earlier month (a month that has begun again).
func monthUsed(counter TicketCounter, month string) int {
	if counter.Month != month {
		return 0
	}
	return counter.MonthCount
}

// ticketLimitReached refuses a ticket past plan's monthly allowance.
func ticketLimitReached(plan *Plan) error {
	return Err(ErrLimit, "ticket_limit_reached",
		"The %s plan allows %d tickets a month and they are used; upgrade for more.", plan.Name, *plan.TicketsPerMonth)
}

// takeMonthlyTicket counts one more of month's tickets (ticketPlan's) on
// the workspace's counter row, locked until commit, or refuses with
// ticket_limit_reached. A count of an earlier month is a month that has
// begun again; a refusal leaves the count as it is, so a month already
// past a smaller plan's allowance stays past it, and a larger plan after
// it counts every limited ticket of the month.
//
// The count is one conditional UPDATE, which takes the row's lock itself:
// the creations of a limited workspace wait for each other from it to
// their commit, and a round trip more in that window is one more for every
// creation of the workspace (docs/decisions.md, "The count in one
// UPDATE"). PostgreSQL re-checks the condition on the row as the creation
// before it committed it, so two creations never both take the last
// ticket. No row matched: the month is used, or the workspace has no
// counter row yet — made here then (PostgreSQL's numbering never makes it;
// SQLite's has, earlier in the creation), and counted on.
func takeMonthlyTicket(tx *gorm.DB, org *Organization, plan *Plan, month string, now time.Time) error {
	for made := false; ; made = true {
		res := tx.Model(&TicketCounter{}).
			Where("org_id = ? AND (month <> ? OR month_count < ?)", org.ID, month, *plan.TicketsPerMonth).
			Updates(map[string]any{"month": month, "updated_at": now,
				"month_count": gorm.Expr("CASE WHEN month = ? THEN month_count + 1 ELSE 1 END", month)})
		switch {
		case res.Error != nil:
			return res.Error
		case res.RowsAffected > 0:
			return nil
		case made:
			return ticketLimitReached(plan)
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&TicketCounter{
			OrgID: org.ID, LastNumber: FirstTicketNumber - 1, Month: month, UpdatedAt: now}).Error; err != nil {
			return err
		}
	}
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

// customerFor finds the workspace's customer with email, or creates one
// (linked to the contact who is the same person, LinkCustomer); an address
// erased on request is refused (even while its erasure still runs and
// its customer is not yet gone).
func customerFor(tx *gorm.DB, orgID, email, name string) (*Customer, bool, error) {
	if err := RefuseErased(tx, orgID, email); err != nil {
		return nil, false, err
	}
	var cust Customer
	err := tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
	if err == nil {
		return &cust, false, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, err
	}
	cust = newCustomerFor(orgID, email, name)
	if cust.Fields, err = FieldDefaults(tx, orgID, AutomationCustomer); err != nil {
		return nil, false, err
	}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "org_id"}, {Name: "email"}}, DoNothing: true}).Create(&cust)
	if res.Error != nil {
		return nil, false, res.Error
	}
	if res.RowsAffected == 1 {
		return &cust, true, LinkCustomer(tx, &cust, "")
	}
	// Created concurrently (e.g. POST /customers): use that one.
	return &cust, false, tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
}
