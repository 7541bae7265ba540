package main

import (
	"fmt"
	"strings"
	"time"
)

// A workload is one API request shape and the SQL statement that does its
// database work, for pgbench. The API side is a wrk script, or drive for a
// protocol wrk does not speak (it fills r's rate, latencies and counts).
type workload struct {
	wrkScript func(b *bencher) string
	drive     func(b *bencher, r *row) error
	pgScript  func(b *bencher) string
	// pgbenchMode is pgbench's -M (query protocol) when set: "prepared"
	// for a baseline of statements the suite sends prepared (pgx prepares
	// each once per connection), where pgbench's default, the simple
	// protocol, parses and plans every one and so is the slower baseline.
	// With a mode set, the script may name the workspace as :org.
	pgbenchMode string
	// pgLatency has pgbench log every transaction (-l) for its p50 and
	// p99, compared in the row with the API's: for the baselines that
	// run a request's own statements, whose latency goal is relative to
	// them. Off for the rest, which run pgbench as before.
	pgLatency bool
	// backlog, when set, counts (for the workspace, $1) the work an API
	// round leaves queued behind it — workflow starts and webhook
	// deliveries the relay still has to carry out — which the bench waits
	// for after each round, so that it never runs through the next one.
	backlog string
	// queues: the API side accepts work faster than the pipeline behind
	// it turns it into leads or tickets, and the next round's settle
	// waits for what it accepted. Its API run is queuedRun long instead
	// of -duration: the accept rate is the row's figure, and a shorter run
	// leaves a shorter drain (the webhook's 5 s rounds left about 12,000
	// intakes each, two minutes of draining; its 2 s rounds about 3,600,
	// 45 s each).
	queues bool
}

// queuedRun is the API run of a workload that queues (workload.queues):
// a second still sends the webhook a few thousand requests, and its drain
// is a share of the bench's 15 minutes (issue 44).
const queuedRun = time.Second

var getContacts = workload{
	wrkScript: func(b *bencher) string {
		return fmt.Sprintf(`wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer %s"
wrk.path = "/crm/contacts?limit=25"
`, b.key)
	},
	pgScript: func(b *bencher) string {
		return fmt.Sprintf("SELECT * FROM contacts WHERE org_id = '%s' ORDER BY created_at DESC, id DESC LIMIT 26;\n", b.org)
	},
}

// postScript is a wrk script that POSTs JSON to path with headers (name,
// value, name, value…), each request a new body: body is a Lua
// string.format pattern whose three %d are the thread's request count, the
// thread and the count again (so e-mail addresses never repeat). The count
// starts at round × 10⁷, so no body repeats across the rounds of a run
// either.
func postScript(b *bencher, path, body string, headers ...string) string {
	var set strings.Builder
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&set, "wrk.headers[%q] = %q\n", headers[i], headers[i+1])
	}
	return fmt.Sprintf(`wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
%swrk.path = %q
local n = %d
-- setup runs in wrk's main Lua state and numbers each thread through a
-- global of the thread's own state (a local there would hide it: every
-- thread would send the same bodies, and the webhook would answer half of
-- them as resends).
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, string.format('%s', n, tid, n))
end
`, set.String(), path, b.rounds*10_000_000, body)
}

var postContact = workload{
	wrkScript: func(b *bencher) string {
		return postScript(b, "/crm/contacts",
			`{"name":"Ada %d","email":"ada-%d-%d@engines.io","phone":"+1 415 555 2671","company":"Engines","designation":"CTO","type":"person"}`,
			"Authorization", "Bearer "+b.key)
	},
	pgScript: func(b *bencher) string {
		return fmt.Sprintf(`\set n random(1, 1000000000)
INSERT INTO contacts (id, org_id, name, email, phone, company, designation, type, notes, created_by, created_at, updated_at) VALUES (gen_random_uuid(), '%s', 'Ada ' || :n, 'ada-' || :n || '@engines.io', '+1 415 555 2671', 'Engines', 'CTO', 'person', '', 'key:bench', now(), now());
`, b.org)
	},
}

var postTicket = workload{
	wrkScript: func(b *bencher) string {
		return postScript(b, "/helpdesk/tickets",
			`{"subject":"Printer on fire %d","email":"reporter-%d-%d@example.com","description":"It smokes."}`,
			"X-Api-Key", b.hdKey, "X-Workspace-Id", b.org)
	},
	pgScript: func(b *bencher) string {
		// Ticket numbers are unique per organization: the baseline draws
		// its own, negative, from a sequence of its own (the suite's
		// sequence starts past the workspace's highest number).
		_, _ = b.db.Exec(`CREATE SEQUENCE IF NOT EXISTS bench_ticket_numbers START -1 INCREMENT -1`)
		return fmt.Sprintf(`INSERT INTO tickets (id, org_id, number, subject, description, status, priority, channel, requester_email, tags, created_at, updated_at) VALUES (gen_random_uuid(), '%s', nextval('bench_ticket_numbers'), 'Printer on fire', 'It smokes.', 'new', 'normal', 'api', 'reporter@example.com', '[]', now(), now());
`, b.org)
	},
}

var postWebhook = workload{
	wrkScript: func(b *bencher) string {
		return postScript(b, "/crm/leads/webhook",
			`{"name":"Grace %d","email":"grace-%d-%d@navy.mil","phone":"+1 415 555 2671","company":"Navy","value":25000,"source":"bench"}`,
			"x-api-key", b.key)
	},
	queues: true,
	pgScript: func(b *bencher) string {
		return fmt.Sprintf(`\set n random(1, 1000000000)
INSERT INTO lead_intakes (id, org_id, dedupe_key, lead_id, payload, status, duplicate, created_at) VALUES (gen_random_uuid(), '%s', 'bench:' || gen_random_uuid(), gen_random_uuid(), '{"name":"Grace","email":"grace-' || :n || '@navy.mil","phone":"+1 415 555 2671","company":"Navy","value":25000,"source":"bench"}', 'bench', false, now());
`, b.org)
	},
}

// ticketLoad is the ticket create's row; limitedTicketLoad is the same
// create in a workspace whose plan has a monthly ticket allowance, whose
// creations count it (models.takeMonthlyTicket).
const (
	ticketLoad        = "POST /helpdesk/tickets"
	limitedTicketLoad = "POST /helpdesk/tickets (business plan)"
)

// onLimitedPlan runs load with the bench organization on the business
// plan (seats and a monthly ticket allowance), then moves it back to
// enterprise. The plan's allowance is raised in the bench's database
// first, past what the rounds open (10,000 a month would run out in the
// second round, and the rest would be 402s, a fraction of a creation's
// cost).
func (b *bencher) onLimitedPlan(load func() error) error {
	if err := b.toBusinessPlan(); err != nil {
		return err
	}
	err := load()
	if perr := setPlan(b.cfg.binary, b.dbURL, b.dataDir, b.org, "enterprise"); err == nil {
		err = perr
	}
	return err
}

// businessAllowance is the business plan's monthly ticket allowance in the
// bench's database (toBusinessPlan), past what the rounds open.
const businessAllowance = 100_000_000

// toBusinessPlan moves the bench organization to the business plan, whose
// monthly ticket allowance it first raises in the bench's database to
// businessAllowance.
func (b *bencher) toBusinessPlan() error {
	if _, err := b.db.Exec(`UPDATE plans SET tickets_per_month = $1 WHERE name = 'business'`, businessAllowance); err != nil {
		return err
	}
	return setPlan(b.cfg.binary, b.dbURL, b.dataDir, b.org, "business")
}
