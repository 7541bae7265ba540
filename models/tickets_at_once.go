package models

import (
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// OpenTicketAtOnce is OpenTicket as one statement, for the workspaces
// whose ticket needs nothing but its rows: on PostgreSQL, a workspace on a
// plan without seat or ticket limits, without an SLA policy, without a
// webhook endpoint that receives events or an active automation rule
// about tickets (AnyEventConsumer), and without a custom field of tickets
// or customers that has a default or is required (AnyFieldRule), and
// without an erased address still refused (AddressErased: OpenTicket
// checks the requester's). One data-modifying WITH takes the
// number from the workspace's sequence, finds or creates the requester's
// customer (a new one linked to the contact who is the same person, as
// LinkCustomer would: both ways) and writes the ticket and the
// customer's history, checking
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
	opened, err := queryRow(db, OpenTicketStatement, []any{
		t.OrgID, t.OrgID, t.OrgID,
		customer.ID, customer.OrgID, customer.Name, customer.Email, t.OrgID, t.RequesterEmail, customer.CreatedAt, customer.UpdatedAt,
		t.OrgID, t.RequesterEmail,
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

// OpenTicketStatement is OpenTicketAtOnce's statement. Its parameters are
// typed: those of a SELECT feeding an INSERT, or of a UNION, are not
// given the columns' types. make bench runs a copy with values written in
// (cmd/bench, TestBenchTicketStatementIsTheModels keeps it the same).
var OpenTicketStatement = database.Numbered(`WITH open AS (
  SELECT 1 FROM organizations o JOIN plans p ON p.name = o.plan
  WHERE o.id = CAST(? AS uuid) AND p.seats IS NULL AND p.tickets_per_month IS NULL
    AND NOT EXISTS (SELECT 1 FROM sla_policies WHERE org_id = o.id)
    AND NOT EXISTS (` + AnyEventConsumer(AutomationTicket) + `)
    AND NOT EXISTS (SELECT 1 FROM custom_fields f WHERE f.org_id = o.id AND f.object IN ('ticket', 'customer') AND f.status = 'active'
      AND (f.required OR f.default_value IS NOT NULL))
    AND NOT EXISTS (SELECT 1 FROM erasures WHERE org_id = o.id AND blocked_until > now())
), created AS (
  INSERT INTO customers (id, org_id, name, email, phone, company, notes, contact_id, created_at, updated_at)
  SELECT CAST(? AS uuid), CAST(? AS uuid), CAST(? AS text), CAST(? AS text), '', '', '',
    (SELECT k.id FROM contacts k WHERE k.org_id = CAST(? AS uuid) AND k.email = CAST(? AS text) ORDER BY k.created_at, k.id LIMIT 1),
    CAST(? AS timestamptz), CAST(? AS timestamptz) FROM open
  ON CONFLICT (org_id, email) DO NOTHING RETURNING id
), linked AS (
  UPDATE contacts SET customer_id = created.id FROM created WHERE contacts.org_id = CAST(? AS uuid) AND contacts.email = CAST(? AS text)
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
