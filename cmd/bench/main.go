// Command bench is `make bench`: it measures the suite's hot paths against
// what PostgreSQL itself does for the same statements, in one run on one
// machine, and prints a table of ratios (API ÷ database).
//
// It creates its own PostgreSQL database, starts the built `bin/suite dev`
// on it (embedded Temporal on SQLite, the suite's data on PostgreSQL), seeds
// an organization, and for each workload runs pgbench with the equivalent
// statement and then wrk (for inbound mail: SMTP senders) against the API at
// the same concurrency. It also drives the web-form intake at a steady rate
// and in a burst, and reports how long an accepted lead takes to become
// visible and scored, and how fast a burst of deal events reaches a webhook
// endpoint. Nothing here is a pass/fail test: it prints numbers
// (README shows the latest table).
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/business-suite/suite/cmd/internal/harness"
	"github.com/business-suite/suite/worker/ports"
)

type config struct {
	binary     string
	pgURL      string
	duration   time.Duration
	rounds     int
	intakeRate int
	intakeFor  time.Duration
	burst      int
	floodBurst int
	keep       bool
	out        string
	only       *regexp.Regexp
	profileDir string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.binary, "binary", "bin/suite", "the suite binary to start")
	flag.StringVar(&cfg.pgURL, "postgres", harness.EnvOr("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server to create the bench database on")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each load run")
	flag.IntVar(&cfg.rounds, "rounds", 3, "alternating database/API rounds per load; the median ratio is reported")
	flag.IntVar(&cfg.intakeRate, "intake-rate", 50, "steady web-form intake rate (leads/s)")
	flag.DurationVar(&cfg.intakeFor, "intake-for", time.Minute, "length of the steady intake run")
	flag.IntVar(&cfg.burst, "burst", 5000, "size of the intake burst")
	flag.IntVar(&cfg.floodBurst, "flood-burst", 20_000, "size of one organization's burst beside another's intake (mixed load)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the bench database and data directory")
	flag.StringVar(&cfg.out, "out", "", "also write the table (Markdown) to this file")
	only := flag.String("only", "", "run only the loads whose name matches this regular expression (e.g. 'GET', 'intake')")
	flag.StringVar(&cfg.profileDir, "profile", "", "write a CPU profile of the suite during each API load to this directory (go tool pprof FILE)")
	flag.Parse()
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -profile:", err)
			os.Exit(2)
		}
	}
	var err error
	if cfg.only, err = regexp.Compile(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -only:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	for _, tool := range []string{"pgbench", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (Debian: apt-get install -y %s)", tool, map[string]string{"pgbench": "postgresql-client", "wrk": "wrk"}[tool])
		}
	}
	ctx := context.Background()
	dbName := fmt.Sprintf("suite_bench_%d", time.Now().Unix())
	admin, err := sql.Open("pgx", cfg.pgURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		return fmt.Errorf("create the bench database: %w", err)
	}
	dbURL := harness.WithDatabase(cfg.pgURL, dbName)
	if !cfg.keep {
		defer func() { _, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") }()
	}
	dataDir, err := os.MkdirTemp("", "suite-bench-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(dataDir)
	}

	s, err := startSuite(cfg, dbURL, dataDir)
	if err != nil {
		return err
	}
	defer s.stop()
	fmt.Printf("suite dev on %s (PostgreSQL database %s), data in %s\n", s.base, dbName, dataDir)

	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	bench, err := setupOrg(s, cfg.binary, dbURL, dataDir)
	if err != nil {
		return fmt.Errorf("set up the bench organization: %w", err)
	}
	org, key, token := bench.org, bench.key, bench.token
	// Read only when the mail load runs: a binary from before the e-mail
	// channel (a paired run's older side) has no address to read.
	var mailbox string
	if cfg.only.MatchString(mailLoad) {
		if mailbox, err = mailboxOf(s, org, token); err != nil {
			return fmt.Errorf("the bench organization's e-mail address: %w", err)
		}
	}
	if err := seedContacts(ctx, db, org, 10_000); err != nil {
		return err
	}

	var rows []row
	add := func(r row, err error) error {
		if err != nil {
			return err
		}
		rows = append(rows, r)
		fmt.Println(r.text())
		return nil
	}
	dir := filepath.Join(dataDir, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := &bencher{cfg: cfg, dir: dir, dataDir: dataDir, dbURL: dbURL, db: db, base: s.base, org: org, key: key, pid: s.cmd.Process.Pid, pprof: s.pprof,
		smtp: s.smtp, mailbox: mailbox, token: token}
	var receiver *webhookReceiver
	if cfg.only.MatchString(webhookLoad) {
		if receiver, err = b.newWebhookReceiver(); err != nil {
			return err
		}
		defer receiver.srv.Close()
	}
	if cfg.only.MatchString(slaLoad) || cfg.only.MatchString(ticketLoad) || cfg.only.MatchString(limitedTicketLoad) {
		if b.hdKey, err = b.newHelpdeskKey(); err != nil {
			return fmt.Errorf("the bench organization's hd_ key: %w", err)
		}
	}
	pair := func(name string, conns int, w workload) error {
		if !cfg.only.MatchString(name) {
			return nil
		}
		return add(b.pair(name, conns, w))
	}
	if err := pair("GET /crm/contacts?limit=25 (10k in org)", 16, getContacts); err != nil {
		return err
	}
	if err := pair("GET /crm/contacts?limit=25 (10k in org)", 64, getContacts); err != nil {
		return err
	}
	if err := pair("POST /crm/contacts", 16, postContact); err != nil {
		return err
	}
	if err := pair(ticketLoad, 16, postTicket); err != nil {
		return err
	}
	if cfg.only.MatchString(limitedTicketLoad) {
		if err := b.onLimitedPlan(func() error { return pair(limitedTicketLoad, 16, postTicket) }); err != nil {
			return err
		}
	}
	// The intake pipeline is measured before the webhook's accept run,
	// whose ten thousand or so accepted intakes would otherwise still be
	// queued ahead of the steady run's (the pipeline drains far slower
	// than the API accepts); the SMTP run comes before it too, for the
	// same reason (each round waits for what the last one accepted).
	var notes []string
	note := func(s fmt.Stringer) {
		fmt.Println(s)
		notes = append(notes, s.String())
	}
	if cfg.only.MatchString("web-form intake") {
		steady, err := b.steadyIntake(ctx, db)
		if err != nil {
			return err
		}
		note(steady)
		burst, err := b.burstIntake(ctx, db)
		if err != nil {
			return err
		}
		note(burst)
	}
	if cfg.only.MatchString(readsLoad) {
		reads, err := b.intakeBesideReads(ctx, db)
		if err != nil {
			return err
		}
		note(reads)
	}
	if cfg.only.MatchString(floodLoad) {
		other, err := setupOrg(s, cfg.binary, dbURL, dataDir)
		if err != nil {
			return fmt.Errorf("set up the second organization: %w", err)
		}
		flood, err := b.intakeBesideFlood(ctx, db, other.tenant)
		if err != nil {
			return err
		}
		note(flood)
	}
	if err := pair(mailLoad, 4, inboundMail); err != nil {
		return err
	}
	if err := pair("POST /crm/leads/webhook (202)", 16, postWebhook); err != nil {
		return err
	}

	// Webhook delivery last: it needs no drained pipeline, and leaves none.
	if receiver != nil {
		delivery, err := b.webhookDelivery(receiver)
		if err != nil {
			return err
		}
		note(delivery)
	}
	// The SLA timers after everything: its workflows stay open.
	if cfg.only.MatchString(slaLoad) {
		slas, err := b.slaTimers(ctx, db, b.hdKey)
		if err != nil {
			return err
		}
		note(slas)
	}
	if err := b.heapProfile(); err != nil {
		return err
	}
	if rss, err := harness.PeakRSS(s.cmd.Process.Pid); err == nil {
		note(stringer(fmt.Sprintf("suite dev's peak resident memory over the run: %d MiB", rss)))
	} else {
		return err
	}

	table := renderTable(rows, notes, cfg)
	fmt.Println()
	fmt.Println(table)
	if cfg.out != "" {
		return os.WriteFile(cfg.out, []byte(table), 0o644)
	}
	return nil
}

// suite is the running `suite dev` process.
type suite struct {
	cmd   *exec.Cmd
	base  string
	pprof string
	smtp  string
	log   *os.File
}

// freePort is a port for the suite under test (see ports.Addr for
// why not port 0).
func freePort() (int, error) { return ports.Port("127.0.0.1") }

func startSuite(cfg config, dbURL, dataDir string) (*suite, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	temporalPort, err := freePort()
	if err != nil {
		return nil, err
	}
	smtpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dataDir, "suite.log"))
	if err != nil {
		return nil, err
	}
	var pprofAddr string
	if cfg.profileDir != "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	cmd := exec.Command(cfg.binary, "dev")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"SUITE_DATA_DIR="+dataDir,
		fmt.Sprintf("SUITE_HTTP_ADDR=127.0.0.1:%d", httpPort),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		"SUITE_TEMPORAL_UI_ADDR=",
		"SUITE_DEMO=false",
		// The load runs send the intake with one crm_ key far above its
		// default per-key limit (6,000 a minute): the bench measures the
		// pipeline, not the limiter, as an integration configured for its
		// volume would see it.
		"SUITE_WEBHOOK_KEY_RATE=100000000",
		// The same for the SMTP listener's per-client limit: every
		// message comes from 127.0.0.1, as from one relaying provider.
		fmt.Sprintf("SUITE_SMTP_ADDR=127.0.0.1:%d", smtpPort),
		"SUITE_SMTP_CLIENT_RATE=100000000",
		"SUITE_PPROF_ADDR="+pprofAddr,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &suite{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort), pprof: pprofAddr,
		smtp: fmt.Sprintf("127.0.0.1:%d", smtpPort), log: logFile}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("suite dev did not become ready (log: %s)", logFile.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
	}
	_ = s.log.Close()
}

// setupOrg signs up an owner, creates an enterprise organization (no plan
// limits get in the way) and a crm_ key, all through the real API and CLI;
// it returns them with the owner's access token.
// benchOrg is an organization setupOrg made, its crm_ key and its owner's
// access token.
type benchOrg struct {
	tenant
	token string
}

// setPlan moves org to plan, as an operator does (suite admin set-plan).
func setPlan(binary, dbURL, dataDir, org, plan string) error {
	admin := exec.Command(binary, "admin", "set-plan", org, plan)
	admin.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "SUITE_DATA_DIR="+dataDir)
	if out, err := admin.CombinedOutput(); err != nil {
		return fmt.Errorf("suite admin set-plan: %v: %s", err, out)
	}
	return nil
}

func setupOrg(s *suite, binary, dbURL, dataDir string) (benchOrg, error) {
	email := fmt.Sprintf("bench-%d@example.com", time.Now().UnixNano())
	const password = "correct horse battery"
	if err := call(s.base+"/identity/v1/users", "", map[string]string{"email": email, "password": password, "name": "Bench"}, nil); err != nil {
		return benchOrg{}, err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := call(s.base+"/identity/v1/token", "", map[string]string{"grant_type": "password", "email": email, "password": password}, &tok); err != nil {
		return benchOrg{}, err
	}
	var o struct{ ID, Status string }
	if err := call(s.base+"/crm/organization", tok.AccessToken, map[string]string{"name": "Bench"}, &o); err != nil {
		return benchOrg{}, err
	}
	for o.Status != "active" {
		time.Sleep(100 * time.Millisecond)
		if err := getJSON(s.base+"/crm/organization/"+o.ID, tok.AccessToken, &o); err != nil {
			return benchOrg{}, err
		}
	}
	if err := setPlan(binary, dbURL, dataDir, o.ID, "enterprise"); err != nil {
		return benchOrg{}, err
	}
	var k struct{ Key string }
	if err := call(s.base+"/crm/organization/"+o.ID+"/apikeys", tok.AccessToken, map[string]string{"name": "bench", "service": "crm"}, &k); err != nil {
		return benchOrg{}, err
	}
	return benchOrg{tenant: tenant{org: o.ID, key: k.Key}, token: tok.AccessToken}, nil
}

// mailboxOf is the organization's e-mail address, read through the API.
func mailboxOf(s *suite, org, token string) (string, error) {
	req, _ := http.NewRequest("GET", s.base+"/helpdesk/channels/email", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-workspace-id", org)
	var ch struct{ Address string }
	err := do(req, &ch)
	return ch.Address, err
}

func call(url, token string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(req, out)
}

func getJSON(url, token string, out any) error {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return do(req, out)
}

func do(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// seedContacts inserts n contacts for org straight into the database (the
// list benchmark needs a realistic table, not an API write test).
func seedContacts(ctx context.Context, db *sql.DB, org string, n int) error {
	_, err := db.ExecContext(ctx, `INSERT INTO contacts (id, org_id, name, email, phone, company, designation, type, notes, created_by, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 'Seed ' || g, 'seed' || g || '@example.com', '+1 415 555 0100', 'Seed Co', 'Buyer', 'person', '', 'bench',
		       now() - (g || ' seconds')::interval, now()
		FROM generate_series(1, $2) AS g`, org, n)
	if err == nil {
		_, err = db.ExecContext(ctx, "ANALYZE contacts")
	}
	return err
}

// A workload is one API request shape and the SQL statement that does its
// database work, for pgbench. The API side is a wrk script, or drive for a
// protocol wrk does not speak (it fills r's rate, latencies and counts).
type workload struct {
	wrkScript func(b *bencher) string
	drive     func(b *bencher, r *row) error
	pgScript  func(b *bencher) string
}

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
	if _, err := b.db.Exec(`UPDATE plans SET tickets_per_month = 100000000 WHERE name = 'business'`); err != nil {
		return err
	}
	if err := setPlan(b.cfg.binary, b.dbURL, b.dataDir, b.org, "business"); err != nil {
		return err
	}
	err := load()
	if perr := setPlan(b.cfg.binary, b.dbURL, b.dataDir, b.org, "enterprise"); err == nil {
		err = perr
	}
	return err
}

type bencher struct {
	// hdKey is the bench organization's hd_ key (for the Helpdesk loads).
	hdKey string
	cfg   config
	dir   string
	// dataDir is the suite's SUITE_DATA_DIR.
	dataDir string
	dbURL   string
	db      *sql.DB
	base    string
	org     string
	key     string
	pid     int
	pprof   string // the suite's SUITE_PPROF_ADDR, with -profile
	// smtp is the suite's SMTP listener, mailbox the organization's
	// e-mail address.
	smtp, mailbox string
	// token is the organization owner's access token (its webhooks).
	token string
	// rounds counts the load rounds run so far.
	rounds int
}

// row is one line of the table.
type row struct {
	name     string
	conns    int
	apiRPS   float64
	apiP50   time.Duration
	apiP99   time.Duration
	errors   int
	suiteCPU time.Duration
	requests int
	dbTPS    float64
	// ratioMin and ratioMax span the ratios of every round.
	ratioMin, ratioMax float64
}

func (r row) ratio() float64 { return r.apiRPS / r.dbTPS }

// ratioText is the ratio, and the range over the rounds when there were
// several.
func (r row) ratioText() string {
	if r.ratioMax-r.ratioMin < 0.005 {
		return fmt.Sprintf("%.2f", r.ratio())
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", r.ratio(), r.ratioMin, r.ratioMax)
}

func (r row) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return r.suiteCPU / time.Duration(r.requests)
}

func (r row) text() string {
	return fmt.Sprintf("%-42s c%-3d API %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %d  suite CPU %.3f ms/req | PostgreSQL %8.0f tps | ratio %s",
		r.name, r.conns, r.apiRPS, ms(r.apiP50), ms(r.apiP99), r.errors, ms(r.cpuPerRequest()), r.dbTPS, r.ratioText())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pair runs the database baseline, then the API, at the same concurrency,
// -rounds times over, alternating, and keeps the round with the median
// ratio (the range of the ratios is reported beside it): on a shared or
// virtual machine the speed drifts between runs, and alternating rounds
// expose both sides to the same drift.
func (b *bencher) pair(name string, conns int, w workload) (row, error) {
	var rounds []row
	for i := range max(1, b.cfg.rounds) {
		r := row{name: name, conns: conns}
		if err := b.round(&r, w, i == 0); err != nil {
			return r, err
		}
		rounds = append(rounds, r)
	}
	sort.Slice(rounds, func(i, j int) bool { return rounds[i].ratio() < rounds[j].ratio() })
	r := rounds[len(rounds)/2]
	r.ratioMin, r.ratioMax = rounds[0].ratio(), rounds[len(rounds)-1].ratio()
	return r, nil
}

// round is one pgbench run and then one wrk run, each -duration long; the
// suite is profiled during the wrk run when profile is set (and -profile).
// Every round's wrk script numbers its requests from where the last one
// stopped (b.rounds): a body sent again would be an intake the webhook
// answers as a duplicate, at a fraction of a new one's cost.
func (b *bencher) round(r *row, w workload, profile bool) error {
	if err := b.settle(); err != nil {
		return err
	}
	b.rounds++
	pgFile := filepath.Join(b.dir, fmt.Sprintf("pg-%d.sql", b.rounds))
	if err := os.WriteFile(pgFile, []byte(w.pgScript(b)), 0o644); err != nil {
		return err
	}
	threads := strconv.Itoa(min(r.conns, runtime.NumCPU()))
	out, err := exec.Command("pgbench", "-n", "-f", pgFile, "-c", strconv.Itoa(r.conns), "-j", threads,
		"-T", strconv.Itoa(int(b.cfg.duration.Seconds())), b.dbURL).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench: %v: %s", err, out)
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("pgbench output: %s", out)
	}
	r.dbTPS, _ = strconv.ParseFloat(string(m[1]), 64)

	profiled := func() error { return nil }
	if profile {
		profiled = b.profile(fmt.Sprintf("%s c%d", r.name, r.conns), b.cfg.duration-time.Second)
	}
	cpuBefore, _ := harness.ProcessCPU(b.pid)
	err = b.load(r, w, threads)
	cpuAfter, _ := harness.ProcessCPU(b.pid)
	if perr := profiled(); err == nil {
		err = perr
	}
	r.suiteCPU = cpuAfter - cpuBefore
	return err
}

// load runs the API side of a round: w's driver, or wrk with w's script.
func (b *bencher) load(r *row, w workload, threads string) error {
	if w.drive != nil {
		return w.drive(b, r)
	}
	luaFile := filepath.Join(b.dir, fmt.Sprintf("wrk-%d.lua", b.rounds))
	if err := os.WriteFile(luaFile, []byte(w.wrkScript(b)), 0o644); err != nil {
		return err
	}
	out, err := exec.Command("wrk", "-t", threads, "-c", strconv.Itoa(r.conns), "-d", b.cfg.duration.String(), "--latency",
		"-s", luaFile, b.base).CombinedOutput()
	if err != nil {
		return fmt.Errorf("wrk: %v: %s", err, out)
	}
	return parseWrk(out, r)
}

// settle waits until the suite has turned every intake accepted so far
// into a lead and every inbound message into a ticket (or nothing has moved
// for 30 s). The webhook's and the SMTP listener's API rounds accept faster
// than their pipelines drain, and the drain would otherwise go on through
// the next database round and slow pgbench down with it.
func (b *bencher) settle() error {
	start := time.Now()
	backlog := `SELECT count(*) FROM lead_intakes WHERE org_id = $1 AND status = 'received'`
	if b.mailbox != "" { // the mail load runs (a binary from before it has no such table)
		backlog = `SELECT (` + backlog + `) + (SELECT count(*) FROM inbound_emails WHERE org_id = $1 AND status = 'received')`
	}
	n, err := pollCount(context.Background(), b.db, func(n int) bool { return n == 0 }, backlog, b.org)
	switch {
	case err != nil:
		return err
	case n > 0:
		fmt.Printf("  (the intake and mail pipelines stalled with %d intakes and messages left)\n", n)
	case time.Since(start) > time.Second:
		fmt.Printf("  (waited %.0f s for the intake and mail pipelines to drain)\n", time.Since(start).Seconds())
	}
	return nil
}

// pollCount runs query, a count, until done accepts the count or the count
// has not moved for 30 s, and returns the last count.
func pollCount(ctx context.Context, db *sql.DB, done func(n int) bool, query string, args ...any) (int, error) {
	stalled, last := time.Now(), -1
	for {
		var n int
		if err := db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			return n, err
		}
		if n != last {
			last, stalled = n, time.Now()
		}
		if done(n) || time.Since(stalled) > 30*time.Second {
			return n, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// profile starts taking a CPU profile of the suite for d (a load run's
// length), when -profile is set, and returns the function that waits for
// it and writes it to the profile directory.
func (b *bencher) profile(name string, d time.Duration) (wait func() error) {
	if b.pprof == "" {
		return func() error { return nil }
	}
	slug := strings.Trim(notSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	file := filepath.Join(b.cfg.profileDir, slug+".pprof")
	seconds := max(1, int(d.Seconds()))
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.pprof, seconds))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("CPU profile: %s: %s", resp.Status, data)
		}
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		if err == nil {
			fmt.Printf("CPU profile of the suite: go tool pprof %s\n", file)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// heapProfile writes the suite's heap profile at the end of the run (what
// it holds with the SLA load's workflows open), when profiling.
func (b *bencher) heapProfile() error {
	if b.pprof == "" {
		return nil
	}
	resp, err := http.Get("http://" + b.pprof + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	file := filepath.Join(b.cfg.profileDir, "heap-at-end.pprof")
	fmt.Printf("heap profile of the suite at the end: go tool pprof -sample_index=inuse_space %s\n", file)
	return os.WriteFile(file, data, 0o644)
}

var (
	pgbenchTPS  = regexp.MustCompile(`tps = ([0-9.]+)`)
	notSlug     = regexp.MustCompile(`[^a-z0-9]+`) // runs of these become "-" in a profile's file name
	wrkRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkTotal    = regexp.MustCompile(`(\d+) requests in`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkPercent  = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkSockErrs = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func parseWrk(out []byte, r *row) error {
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("wrk output: %s", out)
	}
	r.apiRPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := wrkTotal.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.Atoi(string(m[1]))
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		r.errors, _ = strconv.Atoi(string(m[1]))
	}
	if m := wrkSockErrs.FindSubmatch(out); m != nil {
		for _, g := range m[1:] {
			n, _ := strconv.Atoi(string(g))
			r.errors += n
		}
	}
	for _, m := range wrkPercent.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		d := time.Duration(v * float64(map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[3])]))
		if string(m[1]) == "50" {
			r.apiP50 = d
		} else {
			r.apiP99 = d
		}
	}
	return nil
}

// intakeResult summarises an intake run.
type intakeResult struct {
	label      string
	sent       int
	accepted   int
	visible    int
	missing    int
	p50, p99   time.Duration
	drainRate  float64
	acceptTime time.Duration
}

func (r intakeResult) String() string {
	s := fmt.Sprintf("%-42s sent %d, accepted %d, visible and scored %d, missing %d; accept → scored lead p50 %.0f ms, p99 %.0f ms",
		r.label, r.sent, r.accepted, r.visible, r.missing, ms(r.p50), ms(r.p99))
	if r.drainRate > 0 {
		s += fmt.Sprintf("; accepted in %.1f s, drained at %.0f leads/s", r.acceptTime.Seconds(), r.drainRate)
	}
	return s
}

// tenant is an organization the bench sends work for, and its crm_ key.
type tenant struct{ org, key string }

// sendIntake posts one web-form submission with the organization's key.
func (b *bencher) sendIntake(client *http.Client, t tenant, source string, n int) bool {
	body := fmt.Sprintf(`{"name":"Lead %d","email":"%s-%d@acme-%d.example","phone":"+1 415 555 2671","company":"Acme","value":12000,"source":"%s"}`,
		n, source, n, n%97, source)
	req, _ := http.NewRequest("POST", b.base+"/crm/leads/webhook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", t.key)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// steadyIntake sends intakeRate submissions a second for intakeFor, then
// waits for the pipeline to catch up and measures, per lead, the time from
// the accepted intake to the scored lead (both stamped by the database).
func (b *bencher) steadyIntake(ctx context.Context, db *sql.DB) (intakeResult, error) {
	source := fmt.Sprintf("steady%d", time.Now().Unix())
	res := intakeResult{label: fmt.Sprintf("web-form intake at %d/s for %s", b.cfg.intakeRate, b.cfg.intakeFor)}
	profiled := b.profile("web-form intake steady", b.cfg.intakeFor)
	res.sent, res.accepted = b.sendSteadily(b.tenant(), source, b.cfg.intakeRate, b.cfg.intakeFor)
	if err := b.awaitLeads(ctx, db, b.org, source, &res); err != nil {
		return res, err
	}
	return res, profiled()
}

// tenant is the bench organization.
func (b *bencher) tenant() tenant { return tenant{org: b.org, key: b.key} }

// sendSteadily sends rate submissions a second of t's for d, each on its
// own goroutine, and reports how many it sent and how many were accepted.
func (b *bencher) sendSteadily(t tenant, source string, rate int, d time.Duration) (sent, accepted int) {
	client := &http.Client{Timeout: 10 * time.Second}
	var ok atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	for n := 0; time.Now().Before(end); n++ {
		<-tick.C
		sent++
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			if b.sendIntake(client, t, source, n) {
				ok.Add(1)
			}
		}(n)
	}
	wg.Wait()
	return sent, int(ok.Load())
}

// burst runs send(n) for n from 1 to total on conns goroutines, as fast as
// they go, and reports how many succeeded and how long all took.
func burst(total, conns int, send func(n int) bool) (ok int, took time.Duration) {
	var succeeded, next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int(next.Add(1)); n <= total; n = int(next.Add(1)) {
				if send(n) {
					succeeded.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(succeeded.Load()), time.Since(start)
}

// burstIntake sends burst submissions as fast as 16 connections allow and
// reports the rate at which the pipeline turns them into scored leads.
func (b *bencher) burstIntake(ctx context.Context, db *sql.DB) (intakeResult, error) {
	source := fmt.Sprintf("burst%d", time.Now().Unix())
	res := intakeResult{label: fmt.Sprintf("web-form intake burst of %d", b.cfg.burst)}
	client := &http.Client{Timeout: 10 * time.Second}
	res.accepted, res.acceptTime = burst(b.cfg.burst, 16, func(n int) bool { return b.sendIntake(client, b.tenant(), source, n) })
	res.sent = b.cfg.burst
	profiled := b.profile("web-form intake burst drain", 20*time.Second)
	if err := b.awaitLeads(ctx, db, b.org, source, &res); err != nil {
		return res, err
	}
	if err := profiled(); err != nil {
		return res, err
	}
	var first, last sql.NullTime // NULL when no lead was made
	err := db.QueryRowContext(ctx, `SELECT min(i.created_at), max(l.created_at) FROM lead_intakes i JOIN leads l ON l.id = i.lead_id
		WHERE i.org_id = $1 AND l.source = $2`, b.org, source).Scan(&first, &last)
	if err == nil && first.Valid && last.Valid && last.Time.After(first.Time) {
		res.drainRate = float64(res.visible) / last.Time.Sub(first.Time).Seconds()
	}
	return res, err
}

// awaitLeads waits until every accepted submission of org's source is a
// scored lead (or nothing has moved for 30 s), then computes the latencies.
func (b *bencher) awaitLeads(ctx context.Context, db *sql.DB, org, source string, res *intakeResult) error {
	visible, err := pollCount(ctx, db, func(n int) bool { return n >= res.accepted },
		`SELECT count(*) FROM leads WHERE org_id = $1 AND source = $2 AND score > 0`, org, source)
	if err != nil {
		return err
	}
	res.visible = visible
	res.missing = res.accepted - res.visible
	rows, err := db.QueryContext(ctx, `SELECT EXTRACT(EPOCH FROM (l.created_at - i.created_at)) FROM lead_intakes i JOIN leads l ON l.id = i.lead_id
		WHERE i.org_id = $1 AND l.source = $2`, org, source)
	if err != nil {
		return err
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			return err
		}
		lat = append(lat, time.Duration(s*float64(time.Second)))
	}
	res.p50, res.p99 = p50p99(lat)
	return rows.Err()
}

// p50p99 are the median and the 99th percentile of lat (nearest rank),
// which it sorts; zero for none.
func p50p99(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	pick := func(q float64) time.Duration { return lat[int(math.Ceil(q*float64(len(lat))))-1] }
	return pick(0.50), pick(0.99)
}

func renderTable(rows []row, notes []string, cfg config) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs, %s), suite dev on PostgreSQL; wrk and pgbench at the same concurrency, "+
		"%d alternating rounds of %s each; each row is the round with the median ratio (the range of all rounds in brackets).\n\n",
		time.Now().UTC().Format("2006-01-02"), host, runtime.NumCPU(), cpuModel(), max(1, cfg.rounds), cfg.duration)
	b.WriteString("| work | conns | API req/s | API p50 | API p99 | non-2xx | suite CPU/req | PostgreSQL tps (same statement) | ratio |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f ms | %.2f ms | %d | %.3f ms | %.0f | %s |\n",
			r.name, r.conns, r.apiRPS, ms(r.apiP50), ms(r.apiP99), r.errors, ms(r.cpuPerRequest()), r.dbTPS, r.ratioText())
	}
	b.WriteString("\n")
	for _, note := range notes {
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(note, "\n", "\n  "))
	}
	return b.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
