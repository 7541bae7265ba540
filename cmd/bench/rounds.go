package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
	procs   processes
	pprof   string // the API process's SUITE_PPROF_ADDR, with -profile
	// smtp is the suite's SMTP listener, mailbox the organization's
	// e-mail address.
	smtp, mailbox string
	// token is the organization owner's access token (its webhooks).
	token string
	email string // the owner's, for a fresh token (signIn)
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
	// dbP50 and dbP99 are pgbench's transaction latencies (zero unless
	// the workload has pgLatency).
	dbP50, dbP99 time.Duration
	// ratioMin and ratioMax span the ratios of every round.
	ratioMin, ratioMax float64
	// goal is what the issue asks of the row, if anything.
	goal goal
	// apiRun is how long the API side ran: -duration, or queuedRun for
	// a workload that queues (workload.queues).
	apiRun time.Duration
	// shortRun: apiRun is shorter than the database's run (shown).
	shortRun bool
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
	return fmt.Sprintf("%-42s c%-3d API %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %d  suite CPU %.3f ms/req | PostgreSQL %8.0f tps | ratio %s%s",
		r.name, r.conns, r.apiRPS, ms(r.apiP50), ms(r.apiP99), r.errors, ms(r.cpuPerRequest()), r.dbTPS, r.ratioText(), r.baselineText()+r.runText())
}

// runText says when the API ran shorter than the database (a workload
// that queues), so that a reader of the row knows its rate is from a
// shorter run.
func (r row) runText() string {
	if !r.shortRun {
		return ""
	}
	return fmt.Sprintf("; API runs of %s", r.apiRun)
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
		r := row{name: name, conns: conns, apiRun: b.cfg.duration}
		if w.queues && queuedRun < r.apiRun {
			r.apiRun, r.shortRun = queuedRun, true
		}
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
	args := []string{"-n", "-f", pgFile, "-c", strconv.Itoa(r.conns), "-j", threads, "-T", strconv.Itoa(int(b.cfg.duration.Seconds()))}
	if w.pgbenchMode != "" {
		// The workspace as a variable, :org: under -M prepared a
		// parameter, as pgx sends it, so that PostgreSQL plans it as it
		// plans the suite's (a generic plan after five custom ones).
		args = append(args, "-M", w.pgbenchMode, "-D", "org="+b.org)
	}
	logPrefix := filepath.Join(b.dir, fmt.Sprintf("pglog-%d", b.rounds))
	if w.pgLatency {
		args = append(args, "-l", "--log-prefix", logPrefix)
	}
	out, err := exec.Command("pgbench", append(args, b.dbURL)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbench: %v: %s", err, out)
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("pgbench output: %s", out)
	}
	r.dbTPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if w.pgLatency {
		if r.dbP50, r.dbP99, err = pgbenchLatency(logPrefix); err != nil {
			return err
		}
	}

	profiled := func() error { return nil }
	if profile {
		profiled = b.profile(fmt.Sprintf("%s c%d", r.name, r.conns), r.apiRun-time.Second)
	}
	cpuBefore, _ := b.procs.cpu()
	err = b.load(r, w, threads)
	cpuAfter, _ := b.procs.cpu()
	if perr := profiled(); err == nil {
		err = perr
	}
	r.suiteCPU = cpuAfter - cpuBefore
	if err == nil && w.backlog != "" {
		err = b.drain(w.backlog, "the round's queued work")
	}
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
	out, err := exec.Command("wrk", "-t", threads, "-c", strconv.Itoa(r.conns), "-d", r.apiRun.String(), "--latency",
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
// the next database round and slow pgbench down with it. Then it analyzes
// the database (analyze).
func (b *bencher) settle() error {
	backlog := `SELECT count(*) FROM lead_intakes WHERE org_id = $1 AND status = 'received'`
	if b.mailbox != "" { // the mail load runs (a binary from before it has no such table)
		backlog = `SELECT (` + backlog + `) + (SELECT count(*) FROM inbound_emails WHERE org_id = $1 AND status = 'received')`
	}
	if err := b.drain(backlog, "the intake and mail pipelines"); err != nil {
		return err
	}
	return b.analyze()
}

// analyze brings the planner's statistics up to date, as autovacuum does on
// a production database once a tenth of a table has changed. The CI
// machine's PostgreSQL runs with autovacuum off (conf.d/90-ci.conf), and
// without it the suite's pooled connections keep the generic plans they
// made while customers and tickets held a few rows, long after the loads
// before grew them to tens of thousands, while pgbench's new connections
// plan afresh from the tables' size: the full ticket create ran at 187–367
// req/s after the business plan's row, 453–478 with the tables analyzed
// (docs/decisions.md, "The count in one UPDATE; the bench analyzes as
// autovacuum would"). An ANALYZE invalidates every connection's plans of
// the tables it analyzed.
func (b *bencher) analyze() error {
	_, err := b.db.Exec("ANALYZE")
	return err
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

// quiet waits until the suite (API, worker and embedded Temporal: one
// process) has used less than a tenth of a core for two seconds running,
// or for at most a minute, and says how long it waited. A load that
// measures latency beside other work starts from a suite that has
// finished what the loads before it left running — the last steps of a
// burst's workflows, which settle does not see (their leads are already
// scored) — so that it measures its own mix and not the last one's tail.
func (b *bencher) quiet(what string) error {
	const (
		window = 2 * time.Second
		idle   = 0.1 // of a core
		limit  = time.Minute
	)
	start := time.Now()
	for {
		before, err := b.procs.cpu()
		if err != nil {
			return err
		}
		time.Sleep(window)
		after, err := b.procs.cpu()
		if err != nil {
			return err
		}
		busy := (after - before).Seconds() / window.Seconds()
		switch {
		case busy < idle:
			if waited := time.Since(start); waited > window {
				fmt.Printf("  (waited %.0f s for the suite to go quiet before %s)\n", waited.Seconds(), what)
			}
			return nil
		case time.Since(start) > limit:
			fmt.Printf("  (the suite still used %.0f %% of a core after %s; %s starts anyway)\n", 100*busy, limit, what)
			return nil
		}
	}
}
