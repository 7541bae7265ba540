package main

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The ticket create beside its own database work (issue 44): in each of
// two workspaces of their own — made for the row, so that nothing another
// load set up (the webhook delivery load's endpoint on the bench
// organization sends every create down the transaction's way) decides the
// path — pgbench runs, prepared, every statement the API sends PostgreSQL
// for one POST /helpdesk/tickets, as read in the code and checked against
// PostgreSQL's log (log_statement = 'all'; docs/decisions.md,
// "Performance").
const (
	// fullTicketLoad: a workspace with an SLA policy, on the business
	// plan (seats and a monthly allowance) and with a webhook endpoint
	// that receives ticket.created — api/helpdesk's openTicket.
	fullTicketLoad = "POST /helpdesk/tickets (SLA, business plan, endpoint) beside its transaction"
	// atOnceTicketLoad: an enterprise workspace without either — the one
	// statement of models.OpenTicketAtOnce.
	atOnceTicketLoad = "POST /helpdesk/tickets (one statement) beside that statement"
)

// ticketGoal is issue 44's goal for the ticket create beside its own work.
var ticketGoal = goal{ratio: 0.7, p99x: 1.5}

// ticketRow runs the row name on a workspace of its own: the full one
// (SLA policy, business plan, endpoints) or the one-statement one.
func ticketRow(full bool) func(r *benchRun, name string) error {
	return func(r *benchRun, name string) error {
		ws, err := r.workspace()
		if err != nil {
			return err
		}
		w := ticketAtOnce
		if full {
			sink, err := newSink()
			if err != nil {
				return err
			}
			defer sink.Close()
			ids, err := ws.fullTicketWorkspace(sink.Addr().String())
			if err != nil {
				return fmt.Errorf("set up the workspace of %q: %w", name, err)
			}
			w = ticketTransaction(ids)
		}
		rw, err := ws.pair(name, 16, w)
		r.b.rounds = ws.rounds // the next row's bodies go on from here
		rw.goal = ticketGoal
		return r.add(rw, err)
	}
}

// workspace is the bench with an organization of its own (enterprise, a
// crm_ and an hd_ key), for a row whose path depends on what the
// organization has.
func (r *benchRun) workspace() (*bencher, error) {
	o, err := setupOrg(r.suite, r.b.cfg.binary, r.b.dbURL, r.b.dataDir)
	if err != nil {
		return nil, fmt.Errorf("set up a workspace: %w", err)
	}
	ws := *r.b
	ws.org, ws.key, ws.token = o.org, o.key, o.token
	if ws.hdKey, err = ws.newHelpdeskKey(); err != nil {
		return nil, fmt.Errorf("the workspace's hd_ key: %w", err)
	}
	return &ws, nil
}

// fullWorkspace is what the full ticket script names: the endpoint that
// receives the API's events, and one its admins disabled (parked) that
// takes the baseline's deliveries, so that they are queued as pending
// — in the queue's index, as the API's are — and never delivered.
type fullWorkspace struct{ receiving, parked string }

// fullTicketWorkspace gives b's workspace an SLA policy (targets for
// urgent tickets only: the row's tickets are normal, with no running
// clock, so they get no SLA workflow, where workflows waiting on timers
// would stay for every later load), the business plan with its
// allowance raised past what the rounds open, and two endpoints
// (fullWorkspace).
func (b *bencher) fullTicketWorkspace(sink string) (fullWorkspace, error) {
	var ws fullWorkspace
	policy := `{"businessHours":"24x7","targets":{"urgent":{"firstResponse":240}}}`
	if err := b.helpdesk("PUT", "/helpdesk/sla-policy", policy); err != nil {
		return ws, fmt.Errorf("the SLA policy: %w", err)
	}
	if err := b.toBusinessPlan(); err != nil {
		return ws, err
	}
	hooks := b.base + "/crm/organization/" + b.org + "/webhooks"
	var e struct{ ID string }
	for _, id := range []*string{&ws.receiving, &ws.parked} {
		if err := call(hooks, b.token, map[string]any{"url": "http://" + sink + "/bench", "events": []string{"ticket.created"}}, &e); err != nil {
			return ws, fmt.Errorf("an endpoint: %w", err)
		}
		*id = e.ID
	}
	req, _ := http.NewRequest("PUT", hooks+"/"+ws.parked, strings.NewReader(`{"status":"disabled"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.token)
	if err := do(req, nil); err != nil {
		return ws, err
	}
	// A first ticket makes the workspace's counter row, which the
	// script's count updates (pgbench runs first in every round).
	if err := b.helpdesk("POST", "/helpdesk/tickets", `{"subject":"First","email":"first@example.com"}`); err != nil {
		return ws, fmt.Errorf("the first ticket: %w", err)
	}
	return ws, nil
}

// helpdesk sends a Helpdesk API request with the workspace's hd_ key.
func (b *bencher) helpdesk(method, path, body string) error {
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", b.hdKey)
	req.Header.Set("X-Workspace-Id", b.org)
	return do(req, nil)
}

// newSink is a webhook receiver that answers every delivery 204 and keeps
// nothing: the full ticket row's endpoint, whose deliveries the bench
// waits for after each round (workload.backlog).
func newSink() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	}()
	return ln, nil
}

// ticketAtOnce is the create in a workspace of the one-statement path:
// the API sends models.OpenTicketAtOnce's statement alone (no BEGIN, no
// COMMIT; the hd_ key is the process's cache's, whose epoch is read once a
// second, not once a request). The statement is OpenTicketStatement of
// models/tickets_at_once.go, the API's parameters as pgbench's variables.
var ticketAtOnce = workload{
	wrkScript:   postTicket.wrkScript,
	pgbenchMode: "prepared",
	pgLatency:   true,
	pgScript: func(*bencher) string {
		return `\set n random(1, 1000000000000)
` + openTicketAtOnce + ";\n"
	},
}

// openTicketAtOnce is models.OpenTicketStatement with the values the API
// binds written in: the requester a new one each time (pgbench-N), ids
// from gen_random_uuid() where the API makes UUIDv7s, now() for its clock.
var openTicketAtOnce = `WITH open AS (
  SELECT 1 FROM organizations o JOIN plans p ON p.name = o.plan
  WHERE o.id = CAST(:org AS uuid) AND p.seats IS NULL AND p.tickets_per_month IS NULL
    AND NOT EXISTS (SELECT 1 FROM sla_policies WHERE org_id = o.id)
    AND NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE org_id = :org AND (status = 'enabled' OR disabled_by = 'delivery')
      UNION ALL SELECT 1 FROM automations WHERE org_id = :org AND active AND object = 'ticket')
    AND NOT EXISTS (SELECT 1 FROM custom_fields f WHERE f.org_id = o.id AND f.object IN ('ticket', 'customer') AND f.status = 'active'
      AND (f.required OR f.default_value IS NOT NULL))
    AND NOT EXISTS (SELECT 1 FROM erasures WHERE org_id = o.id AND blocked_until > now())
), created AS (
  INSERT INTO customers (id, org_id, name, email, phone, company, notes, contact_id, created_at, updated_at)
  SELECT gen_random_uuid(), CAST(:org AS uuid), CAST('pgbench-' || CAST(:n AS text) AS text), CAST('pgbench-' || CAST(:n AS text) || '@example.com' AS text), '', '', '',
    (SELECT k.id FROM contacts k WHERE k.org_id = CAST(:org AS uuid) AND k.email = CAST('pgbench-' || CAST(:n AS text) || '@example.com' AS text) ORDER BY k.created_at, k.id LIMIT 1),
    CAST(now() AS timestamptz), CAST(now() AS timestamptz) FROM open
  ON CONFLICT (org_id, email) DO NOTHING RETURNING id
), linked AS (
  UPDATE contacts SET customer_id = created.id FROM created WHERE contacts.org_id = CAST(:org AS uuid) AND contacts.email = CAST('pgbench-' || CAST(:n AS text) || '@example.com' AS text)
), customer AS (
  SELECT id, true AS created FROM created
  UNION ALL
  SELECT id, false FROM customers WHERE org_id = CAST(:org AS uuid) AND email = CAST('pgbench-' || CAST(:n AS text) || '@example.com' AS text) AND NOT EXISTS (SELECT 1 FROM created)
), ticket AS (
  INSERT INTO tickets (id, org_id, number, subject, description, status, priority, channel, customer_id, requester_email, tags, created_at, updated_at)
  SELECT gen_random_uuid(), CAST(:org AS uuid), next_ticket_number(CAST(:org AS uuid)), CAST('Printer on fire' AS text), CAST('It smokes.' AS text), CAST('new' AS text),
    CAST('normal' AS text), CAST('web' AS text), customer.id, CAST('pgbench-' || CAST(:n AS text) || '@example.com' AS text), CAST('[]' AS text), CAST(now() AS timestamptz), CAST(now() AS timestamptz)
  FROM open, customer
  RETURNING id, number, customer_id
), history AS (
  INSERT INTO customer_events (id, org_id, customer_id, ticket_id, type, summary, actor, created_at)
  SELECT gen_random_uuid(), CAST(:org AS uuid), customer.id, NULL, 'customer_created', CAST('Customer created from a ticket' AS text), CAST(` + benchActor + ` AS text), CAST(now() AS timestamptz)
  FROM customer, ticket WHERE customer.created
  UNION ALL
  SELECT gen_random_uuid(), CAST(:org AS uuid), ticket.customer_id, ticket.id, 'ticket_created', CAST('Ticket #' AS text) || ticket.number || CAST(' opened: Printer on fire' AS text),
    CAST(` + benchActor + ` AS text), CAST(now() AS timestamptz)
  FROM ticket
)
SELECT ticket.number, ticket.customer_id FROM ticket`

// benchActor is the history's actor, as the API's: an hd_ key's id.
var benchActor = pgText("key:01a2248c-715d-7598-8ff7-6821782b4488")

// pgText is s as a literal of a pgbench script: an escape string whose
// colons are written \x3a, since pgbench takes ":name" anywhere in a
// statement, within quotes too, for its variable (under -M prepared, a
// parameter). s holds no quote or backslash.
func pgText(s string) string { return "E'" + strings.ReplaceAll(s, ":", `\x3a`) + "'" }

// fullTicketBacklog is what a round of the full ticket row leaves queued
// in its workspace: the endpoints' wake-ups in the outbox, and the
// deliveries to the receiving endpoint. The baseline's own rows wait at
// next_attempt_at 'infinity' for the parked endpoint, and are not counted.
// (The outbox's org_id is text, the deliveries' a uuid.)
const fullTicketBacklog = `SELECT (SELECT count(*) FROM workflow_starts WHERE org_id = CAST($1 AS text) AND status = 'pending' AND next_attempt_at < 'infinity')
	+ (SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
	   WHERE d.org_id = CAST($1 AS uuid) AND d.status = 'pending' AND e.status = 'enabled')`

// ticketTransaction is the create in the full workspace ws: what the API
// sends, in its order, each statement's origin beside it. The rows the
// suite's relay would act on (workflow starts and signals, deliveries)
// are written as the API writes them but out of its reach: starts due
// at 'infinity', deliveries to the parked endpoint.
func ticketTransaction(ws fullWorkspace) workload {
	return workload{
		wrkScript:   postTicket.wrkScript,
		pgbenchMode: "prepared",
		pgLatency:   true,
		backlog:     fullTicketBacklog,
		pgScript:    func(b *bencher) string { return fullTicketScript(b, ws) },
	}
}

func fullTicketScript(b *bencher, ws fullWorkspace) string {
	month := time.Now().UTC().Format("2006-01")
	email := `'pgbench-' || CAST(:n AS text) || '@example.com'`
	// The ticket.created event as views.ToTicket renders it (about 870
	// bytes, the API's own length).
	payload := fmt.Sprintf(`{"id":"01a2248c-8024-77a2-aa6f-fb33f04b308d","type":"ticket.created","timestamp":"2026-11-28T23:45:17.348032Z","orgId":"%[1]s",`+
		`"data":{"object":{"id":"01a2248c-801c-7b50-af1f-f6c22ac154f6","workspaceId":"%[1]s","number":1004,"subject":"Printer on fire","description":"It smokes.",`+
		`"status":"new","priority":"normal","channel":"web","email":"pgbench-1000000@example.com","customerId":"01a2248c-8021-7b08-90f7-c62ca2b2c4ec","agentId":null,"tags":[],`+
		`"allowedStatuses":["open","pending","on_hold"],"followsTicketId":null,"firstResponseAt":null,"solvedAt":null,"closedAt":null,`+
		`"sla":{"policyVersion":1,"firstResponseDueAt":null,"nextResponseDueAt":null,"resolutionDueAt":null,"firstRespondedAt":null,"paused":false,"breaches":[]},`+
		`"createdAt":"2026-11-28T23:45:17.340738Z","updatedAt":"2026-11-28T23:45:17.340738Z"}}}`, b.org)
	starts := `INSERT INTO workflow_starts (id, workflow_id, workflow_type, task_queue, input, org_id, kind, status, attempts, next_attempt_at, last_error, run_id, started_at, created_at, updated_at, signal_name, signal_input, trace_context, request_id)`
	return `\set n random(1, 1000000000000)
-- api/helpdesk createTicket: models.OpenTicketAtOnce first, on the pool;
-- in this workspace its "open" finds nothing and it writes nothing.
` + openTicketAtOnce + `;
-- createTicket: the request's transaction (web.Tx), and models.ApplyFields
-- reads the ticket's custom field definitions (defaults, required).
BEGIN;
SELECT * FROM custom_fields WHERE org_id = :org AND object = 'ticket' ORDER BY created_at, id;
-- openTicket: models.FindOrg, on the pool.
SELECT * FROM organizations WHERE id = :org LIMIT 1;
-- models.OpenTicket → ticketPlan: FindPlan, SeatsInUse (the plan has seats),
-- the month's allowance checked without a lock.
SELECT * FROM plans WHERE name = 'business' LIMIT 1;
SELECT count(*) FROM members WHERE org_id = :org AND status <> 'removed';
SELECT * FROM ticket_counters WHERE org_id = :org LIMIT 1;
-- nextTicketNumber: the workspace's sequence (the API's own numbers, so none collide).
SELECT next_ticket_number(:org) AS number \gset
-- customerFor → models.RefuseErased: the address not erased on request (by
-- its hash, as models.EmailHash makes it; one that matches no row, as the API's).
SELECT blocked_until FROM erasures WHERE org_id = :org AND email_hash = '` + strings.Repeat("0f", 32) + `' AND blocked_until > now() ORDER BY blocked_until DESC LIMIT 1;
-- customerFor: looked up, then created. (RETURNING id here, and on the
-- ticket and the event below, hands pgbench the ids the API makes itself.)
SELECT * FROM customers WHERE org_id = :org AND email = ` + email + ` LIMIT 1;
-- models.FieldDefaults: a new customer's custom field defaults.
SELECT * FROM custom_fields WHERE org_id = :org AND object = 'customer' AND status = 'active' AND default_value IS NOT NULL;
INSERT INTO customers (id, org_id, name, email, phone, company, notes, contact_id, fields, created_at, updated_at) VALUES (gen_random_uuid(), :org, 'pgbench-' || CAST(:n AS text), ` + email + `, '', '', '', NULL, '{}', now(), now()) ON CONFLICT (org_id, email) DO NOTHING RETURNING id \gset customer_
-- models.LinkCustomer: the e-mail's contacts and customer linked, the link read back.
UPDATE contacts SET customer_id = (SELECT c.id FROM customers c WHERE c.org_id = contacts.org_id AND c.email = contacts.email) WHERE org_id = :org AND email IN (` + email + `);
UPDATE customers SET contact_id = (SELECT k.id FROM contacts k WHERE k.org_id = customers.org_id AND k.email = customers.email ORDER BY k.created_at, k.id LIMIT 1) WHERE org_id = :org AND email IN (` + email + `);
SELECT contact_id FROM customers WHERE id = :customer_id;
-- planSLA: the workspace's policy (the ticket gets its SLA state, no clock).
SELECT * FROM sla_policies WHERE org_id = :org ORDER BY version DESC LIMIT 1;
-- tx.Create(t): GORM's INSERT of every column.
INSERT INTO tickets (id, org_id, number, subject, description, status, priority, channel, customer_id, requester_email, agent_id, tags, first_response_at, solved_at, closed_at, solve_count, follows_ticket_id, sla_state, sla_breached, sla_next_due_at, sla_next_warn_at, fields, created_at, updated_at)
  VALUES (gen_random_uuid(), :org, :number, 'Printer on fire', 'It smokes.', 'new', 'normal', 'web', :customer_id, ` + email + `, NULL, '[]', NULL, NULL, NULL, 0, NULL,
  ` + pgText(`{"policyVersion":1,"clocks":null,"firstRespondedAt":null,"breaches":null}`) + `, false, NULL, NULL, '{}', now(), now()) RETURNING id \gset ticket_
-- the customer's history: both events in one INSERT.
INSERT INTO customer_events (id, org_id, customer_id, ticket_id, type, summary, actor, created_at) VALUES
  (gen_random_uuid(), :org, :customer_id, NULL, 'customer_created', 'Customer created from a ticket', ` + benchActor + `, now()),
  (gen_random_uuid(), :org, :customer_id, :ticket_id, 'ticket_created', 'Ticket #' || CAST(:number AS text) || ' opened: Printer on fire', ` + benchActor + `, now());
-- (No SLA wake-up: the ticket has no running clock, so no SLA workflow.)
-- record.Tx.Emit → models.RecordEvents: the receiving endpoints, the event, its delivery.
SELECT id, events FROM webhook_endpoints WHERE org_id = :org AND (status = 'enabled' OR disabled_by = 'delivery');
INSERT INTO webhook_events (id, org_id, type, payload, created_at) VALUES (gen_random_uuid(), :org, 'ticket.created', ` + pgText(payload) + `, now()) RETURNING id \gset event_
INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, status, attempts, last_status, last_error, last_duration_ms, next_attempt_at, created_at, finished_at)
  VALUES (gen_random_uuid(), :org, '` + ws.parked + `', :event_id, 'pending', 0, 0, '', 0, NULL, now(), NULL) RETURNING seq;
-- record.Tx.WakeWebhook: the endpoint workflow's wake-up signal.
` + starts + `
  VALUES (gen_random_uuid(), 'webhook-endpoint/` + b.org + `/` + ws.receiving + `', '', 'suite', '', :org, 'webhook-endpoint', 'pending', 0, 'infinity', '', '', NULL, now(), now(), 'webhook-wake', 'null', '', 'bench');
-- record.Tx.Emit → matchAutomations: the workspace's automations revision
-- (it never had a rule, so no rule is read).
SELECT automations_revision FROM organizations WHERE id = :org;
-- OpenTicket, last: takeMonthlyTicket, the month's ticket counted in one
-- conditional UPDATE, which locks the counter row from here to the commit
-- (the row exists: fullTicketWorkspace's first ticket made it; the
-- allowance is the business plan's, businessAllowance).
UPDATE ticket_counters SET month = '` + month + `', month_count = CASE WHEN month = '` + month + `' THEN month_count + 1 ELSE 1 END, updated_at = now()
  WHERE org_id = :org AND (month <> '` + month + `' OR month_count < ` + strconv.Itoa(businessAllowance) + `);
COMMIT;
`
}
