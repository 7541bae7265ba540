// Command e2e is `make e2e`: a process-level test of the production
// topology on this machine. From the built binary it starts one standalone
// Temporal server (`suite temporal`, on a file) — or, with -temporal
// postgres, two nodes of a Temporal cluster on PostgreSQL —, runs `suite migrate`, and
// starts two `suite api` and two `suite worker` processes on their own
// ports with the environment the deploy manifests give them, against a
// fresh PostgreSQL database. It then drives the suite through both APIs,
// alternating between them (nothing may rely on per-process memory), and
// injects faults — a worker killed during 1,000 intakes, the Temporal
// server stopped for 30 s, an API process killed mid-request, every worker
// down across an SLA due time, one Temporal node killed (-temporal
// postgres) — printing accepted, processed, duplicates,
// lost and recovery time for each.
//
// It exits 0 when every check passes, 1 when one fails, and 2 when
// PostgreSQL does not answer. Every process is stopped and the database
// dropped at the end, also on failure or Ctrl-C; the run directory (logs)
// is kept when something failed.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/business-suite/suite/cmd/internal/harness"
	"github.com/business-suite/suite/worker/ports"
)

const defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

type options struct {
	binary       string
	postgres     string
	intakes      int
	capacity     int
	backlog      int
	temporalDown time.Duration
	autoClose    time.Duration
	keep         bool
	faults       string
	// temporal is the Temporal topology: "sqlite" (one `suite temporal` on
	// its file) or "postgres" (two nodes of a cluster on PostgreSQL).
	temporal string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/suite", "the suite binary to start (make build)")
	flag.StringVar(&o.postgres, "postgres", harness.EnvOr("DATABASE_URL", defaultPostgres),
		"PostgreSQL server to create the test database on (default: DATABASE_URL, else "+defaultPostgres+")")
	flag.IntVar(&o.intakes, "intakes", 1000, "web-form intakes sent while a worker is killed")
	flag.IntVar(&o.capacity, "capacity", 5000, "intakes of each burst of the capacity measurement (-faults capacity)")
	flag.IntVar(&o.backlog, "backlog", 50000, "intakes of the backlog measurement (-faults backlog: every process's peak memory with that backlog; lifts the crm_ key's per-minute intake limit)")
	flag.DurationVar(&o.temporalDown, "temporal-down", 30*time.Second, "how long the Temporal server stays stopped")
	flag.DurationVar(&o.autoClose, "autoclose", 3*time.Second, "SUITE_TICKET_AUTOCLOSE_AFTER of the API and worker processes")
	flag.StringVar(&o.faults, "faults", "", "the faults to inject, comma-separated (default: api-kill,worker-kill,temporal-down,sla-workers, and temporal-node-kill with -temporal postgres; none: -faults none); pg-restart (restarts the machine's PostgreSQL cluster, so opt-in) is also known, and capacity and backlog (not faults: measurements of CPU per intake per process and leads/s with 2 workers and with 1, and of each process's memory with a backlog)")
	flag.StringVar(&o.temporal, "temporal", "sqlite", "the Temporal topology: sqlite (one suite temporal on its file) or postgres (two nodes of a cluster on PostgreSQL)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run directory (logs, Temporal's file) even when every check passes")
	flag.Parse()
	switch {
	case o.temporal != "sqlite" && o.temporal != "postgres":
		fmt.Fprintf(os.Stderr, "e2e: -temporal is sqlite or postgres, not %q\n", o.temporal)
		os.Exit(2)
	case o.faults == "none":
		o.faults = ""
	case o.faults == "" && o.temporal == "postgres":
		o.faults = "api-kill,worker-kill,temporal-down,temporal-node-kill,sla-workers"
	case o.faults == "":
		o.faults = "api-kill,worker-kill,temporal-down,sla-workers"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, o)
	stop()
	os.Exit(code)
}

// run is the whole test; its deferred cleanup always runs.
func run(ctx context.Context, o options) int {
	started := time.Now()
	if _, err := os.Stat(o.binary); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the suite binary %s is missing (run make build): %v\n", o.binary, err)
		return 2
	}
	admin, err := sql.Open("pgx", o.postgres)
	if err == nil {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = admin.PingContext(pingCtx)
		cancel()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: PostgreSQL does not answer at %s: %v\n"+
			"make e2e needs a PostgreSQL server it may create databases on: start one on 127.0.0.1:5432 "+
			"(user postgres, trust auth) or set DATABASE_URL to a server's URL.\n", redact(o.postgres), err)
		return 2
	}
	defer admin.Close()

	t := &e2e{o: o, admin: admin, http: &http.Client{Timeout: 15 * time.Second}}
	err = t.setUp(ctx)
	if err == nil {
		err = t.scenario(ctx)
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}
	t.tearDown(err != nil)
	fmt.Println()
	for _, f := range t.figures {
		fmt.Println(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ne2e: FAILED after %s: %v\n", time.Since(started).Round(time.Second), err)
		return 1
	}
	fmt.Printf("\ne2e: every check passed in %s\n", time.Since(started).Round(time.Second))
	return 0
}

// e2e is one run: its database, processes and the session it builds.
type e2e struct {
	o     options
	admin *sql.DB // the PostgreSQL server
	db    *sql.DB // the test database
	http  *http.Client

	dir          string
	dbName       string
	dbURL        string
	serviceToken string
	stripe       *proc
	stripeAddr   string

	// The Temporal server's processes: one, or a cluster's two nodes
	// (-temporal postgres), each listening on its own frontend address;
	// temporalDB is the cluster's database.
	temporals     []*proc
	temporalAddrs []string
	temporalDB    string

	apis    [2]*proc
	apiBase [2]string
	workers [2]*proc
	procs   []*proc
	turn    atomic.Int64

	// The session: the owner's token, organization and keys.
	userToken string
	orgID     string
	crmKey    string
	hdKey     string

	figures []string
}

// next alternates between the two API processes: 0, 1, 0, 1, …
func (t *e2e) next() int { return int(t.turn.Add(1) % 2) }

func (t *e2e) step(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (t *e2e) figure(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	t.figures = append(t.figures, s)
	fmt.Println("  => " + s)
}

func (t *e2e) setUp(ctx context.Context) error {
	var err error
	if t.dir, err = os.MkdirTemp("", "suite-e2e-"); err != nil {
		return err
	}
	t.step("run directory %s (process logs)", t.dir)
	t.dbName = fmt.Sprintf("suite_e2e_%d", os.Getpid())
	if _, err := t.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+t.dbName+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop a leftover %s: %w", t.dbName, err)
	}
	if _, err := t.admin.ExecContext(ctx, "CREATE DATABASE "+t.dbName); err != nil {
		return fmt.Errorf("create database %s: %w", t.dbName, err)
	}
	t.dbURL = harness.WithDatabase(t.o.postgres, t.dbName)
	t.step("database %s created", t.dbName)
	if t.db, err = sql.Open("pgx", t.dbURL); err != nil {
		return err
	}
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	t.serviceToken = hex.EncodeToString(raw)

	free, err := ports.Free("127.0.0.1", 8)
	if err != nil {
		return err
	}
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(free[i])) }
	// Stripe's official mock server, at the version go.mod pins, stands in
	// for Stripe (it keeps no state; the e2e plays Stripe's webhook).
	mockBin, err := exec.CommandContext(ctx, "go", "tool", "-n", "stripe-mock").Output()
	if err != nil {
		return fmt.Errorf("locate stripe-mock (go tool -n stripe-mock): %w", err)
	}
	t.stripeAddr = addr(5)
	t.stripe = &proc{name: "stripe-mock", binary: strings.TrimSpace(string(mockBin)),
		args: []string{"-http-addr", t.stripeAddr, "-https-addr", addr(6)}, logPath: filepath.Join(t.dir, "stripe-mock.log")}
	t.procs = append(t.procs, t.stripe)
	if err := t.temporalNodes(ctx, addr(0), addr(7)); err != nil {
		return err
	}
	for i := range 2 {
		t.apiBase[i] = "http://" + addr(1+i)
		t.apis[i] = t.newProc(fmt.Sprintf("api%d", i+1), t.apiBase[i]+"/readyz", "api",
			append(t.suiteEnv(), "SUITE_HTTP_ADDR="+addr(1+i))...)
		t.workers[i] = t.newProc(fmt.Sprintf("worker%d", i+1), "http://"+addr(3+i)+"/readyz", "worker",
			append(t.suiteEnv(), "SUITE_WORKER_HEALTH_ADDR="+addr(3+i))...)
	}

	begun := time.Now()
	if err := t.stripe.start(); err != nil {
		return err
	}
	if err := t.stripe.awaitListening(ctx, t.stripeAddr, time.Minute); err != nil {
		return err
	}
	// The nodes one after another: the first installs the cluster's
	// schema and namespace.
	for i, p := range t.temporals {
		if err := p.start(); err != nil {
			return err
		}
		if err := p.awaitListening(ctx, t.temporalAddrs[i], 2*time.Minute); err != nil {
			return err
		}
		t.step("suite temporal as %s (pid %d) serves on %s after %s", p.name, p.pid(), t.temporalAddrs[i], time.Since(begun).Round(time.Millisecond))
	}
	// A cluster's nodes agree on who owns each task queue only once each
	// counts them all; before that, two matching services may create the
	// same task queue at once (deploy/README, "Start the first node
	// alone"), so no worker polls until both count both.
	if len(t.temporals) > 1 {
		for _, frontend := range t.temporalAddrs {
			if t.awaitMembers(ctx, frontend, len(t.temporals)) == 0 {
				return fmt.Errorf("the Temporal node at %s does not count %d nodes", frontend, len(t.temporals))
			}
		}
	}

	migrate := exec.CommandContext(ctx, t.o.binary, "migrate")
	migrate.Env = append(os.Environ(), t.suiteEnv()...)
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("suite migrate: %v: %s", err, out)
	}
	t.step("suite migrate done")

	// api1 first: it serves the identity service every process names in
	// IDENTITY_URL (api2 fetches its JWKS when it starts).
	for _, p := range []*proc{t.apis[0], t.apis[1], t.workers[0], t.workers[1]} {
		if err := p.start(); err != nil {
			return err
		}
		took, err := p.awaitReady(ctx, t.http, 2*time.Minute)
		if err != nil {
			return err
		}
		t.step("suite %s as %s (pid %d) ready after %s", p.args[0], p.name, p.pid(), took.Round(time.Millisecond))
	}
	t.figure("topology: %s, 2 api, 2 worker processes ready %s after the start", t.temporalTopology(), time.Since(begun).Round(100*time.Millisecond))
	return nil
}

// suiteEnv is what the deploy manifests set for migrate, api and worker
// (deploy/docker-compose.yml's x-suite-env), pointed at this run.
func (t *e2e) suiteEnv() []string {
	env := []string{
		"DATABASE_URL=" + t.dbURL,
		"TEMPORAL_ADDRESS=" + strings.Join(t.temporalAddrs, ","),
		"TEMPORAL_NAMESPACE=default",
		"IDENTITY_URL=" + t.apiBase[0] + "/identity",
		"IDENTITY_SERVICE_TOKEN=" + t.serviceToken,
		"SUITE_LOG_LEVEL=info",
		"SUITE_TICKET_AUTOCLOSE_AFTER=" + t.o.autoClose.String(),
		// Four processes share the machine's PostgreSQL with other work.
		"SUITE_DB_MAX_OPEN_CONNS=8",
		"SUITE_SHUTDOWN_TIMEOUT=5s",
		"SUITE_DATA_DIR=" + filepath.Join(t.dir, "data"),
		// Billing against stripe-mock, as the README's walkthrough runs it.
		"STRIPE_SECRET_KEY=sk_test_e2e",
		"STRIPE_WEBHOOK_SECRET=" + stripeWebhookSecret,
		"STRIPE_API_BASE=http://" + t.stripeAddr,
		"STRIPE_PRICE_STARTER=price_starter",
		"STRIPE_PRICE_BUSINESS=price_business",
		"STRIPE_PRICE_ENTERPRISE=price_enterprise",
	}
	if slices.Contains(strings.Split(t.o.faults, ","), "backlog") {
		// The backlog measurement sends its intakes with one crm_ key,
		// faster than the default 6,000 a minute.
		env = append(env, "SUITE_WEBHOOK_KEY_RATE="+strconv.Itoa(2*t.o.backlog))
	}
	return env
}

func (t *e2e) newProc(name, readyz, role string, env ...string) *proc {
	p := &proc{name: name, binary: t.o.binary, args: []string{role}, env: env,
		logPath: filepath.Join(t.dir, name+".log"), readyz: readyz}
	t.procs = append(t.procs, p)
	return p
}

// tearDown stops every process (workers, then APIs, then Temporal) and
// drops the database; the run directory is kept when the run failed.
func (t *e2e) tearDown(failed bool) {
	fmt.Println()
	t.step("stopping every process and dropping %s", t.dbName)
	order := append([]*proc{t.workers[0], t.workers[1], t.apis[0], t.apis[1]}, t.temporals...)
	for _, p := range order {
		if p != nil {
			p.stop(15 * time.Second)
		}
	}
	for _, p := range t.procs { // anything not in order
		p.stop(15 * time.Second)
	}
	if t.db != nil {
		_ = t.db.Close()
	}
	for _, db := range []string{t.dbName, t.temporalDB, t.temporalDB + "_visibility"} {
		if db == "" || db == "_visibility" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := t.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: drop database %s: %v\n", db, err)
		}
		cancel()
	}
	if t.dir == "" {
		return
	}
	if failed || t.o.keep {
		fmt.Printf("logs kept in %s\n", t.dir)
		return
	}
	_ = os.RemoveAll(t.dir)
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
