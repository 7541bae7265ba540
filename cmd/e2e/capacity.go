package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/business-suite/suite/cmd/internal/harness"
)

// measureCapacity (-faults capacity, with -capacity N) measures what an
// intake costs each process of the topology and how fast the pipeline
// drains, with both workers and then with one: each time a burst of N
// intakes sent by 16 clients as fast as they are accepted, timed from the
// first send to the last lead in place, with the CPU time every process
// used meanwhile (/proc), the PostgreSQL server's processes included. It
// checks what the faults check (every intake one lead) and reports the
// figures deploy/README's capacity model ("Capacity") is built from.
func (t *e2e) measureCapacity(ctx context.Context) error {
	// The crm_ key's intakes a minute are limited (SUITE_WEBHOOK_KEY_RATE,
	// 6,000): let the faults' intakes age out of the window first.
	if err := sleep(ctx, time.Minute); err != nil {
		return err
	}
	for _, workers := range []int{2, 1} {
		if workers == 1 {
			t.workers[1].stop(30 * time.Second)
			t.step("%s stopped: one worker from here", t.workers[1].name)
		}
		if err := t.capacityRun(ctx, workers); err != nil {
			return err
		}
	}
	if err := t.workers[1].start(); err != nil {
		return err
	}
	if _, err := t.workers[1].awaitReady(ctx, t.http, time.Minute); err != nil {
		return err
	}
	err := t.openTickets(ctx)
	var peaks []string
	for _, p := range t.peakRSS() {
		peaks = append(peaks, fmt.Sprintf("%s %d MiB", p.name, p.mib))
	}
	t.figure("peak resident memory per process over the run: %s", strings.Join(peaks, ", "))
	return err
}

// capacityRun is one burst of measureCapacity's.
func (t *e2e) capacityRun(ctx context.Context, workers int) error {
	n := t.o.capacity
	source := fmt.Sprintf("e2e-capacity-%dw-%d", workers, time.Now().Unix())
	before, err := t.cpuByRole()
	if err != nil {
		return err
	}
	s := &sender{t: t, source: source, conc: 16, max: n}
	began := time.Now()
	s.run(ctx)
	acceptedIn := time.Since(began)
	accepted := int(s.ok.Load())
	c, err := t.awaitLeads(ctx, source, accepted)
	if err != nil {
		return err
	}
	// awaitLeads watched 2 s more for late duplicates; the last lead came
	// before that.
	drained := time.Since(began) - 2*time.Second
	after, err := t.cpuByRole()
	if err != nil {
		return err
	}
	per, total := cpuPer(before, after, accepted)
	t.figure("capacity, %s, %d worker(s): %d intakes accepted in %s (%.0f/s), every lead in place %s after the first send: %.0f leads/s end to end; "+
		"CPU per intake: %s; %.2f ms in all (%.0f intakes per core-second)",
		t.temporalTopology(), workers, accepted, acceptedIn.Round(100*time.Millisecond), float64(accepted)/acceptedIn.Seconds(),
		drained.Round(100*time.Millisecond), float64(accepted)/drained.Seconds(), strings.Join(per, ", "),
		float64(total.Microseconds())/1000, float64(time.Second)/float64(max(total, 1)))
	if accepted != n {
		return fmt.Errorf("%d of %d intakes accepted (first refusal: %s)", accepted, n, s.sample)
	}
	return checkLeads(c, n)
}

// cpuPer is each role's CPU time between two cpuByRole readings, per one
// of n (intakes, tickets), as "role 1.23 ms" in roles' order, and the sum.
func cpuPer(before, after map[string]time.Duration, n int) (parts []string, total time.Duration) {
	for _, role := range roles {
		used := (after[role] - before[role]) / time.Duration(max(n, 1))
		total += used
		parts = append(parts, fmt.Sprintf("%s %.2f ms", role, float64(used.Microseconds())/1000))
	}
	return parts, total
}

// procPeak is a process's peak resident memory.
type procPeak struct {
	name string
	mib  int
}

// peakRSS is the peak resident memory (VmHWM) of every running process of
// the run, in start order.
func (t *e2e) peakRSS() []procPeak {
	var peaks []procPeak
	for _, p := range t.procs {
		if !p.alive() {
			continue
		}
		if mib, err := harness.PeakRSS(p.pid()); err == nil {
			peaks = append(peaks, procPeak{p.name, mib})
		}
	}
	return peaks
}

// roles are what cpuByRole reports on, in order.
var roles = []string{"api", "worker", "temporal", "postgres (suite)", "postgres (temporal)", "postgres (other)"}

// cpuByRole is the CPU time used so far by the topology's processes, per
// role (api, worker, temporal), and by the PostgreSQL server's processes:
// the backends of the suite's database, those of Temporal's two, and the
// rest (the server's own: WAL writer, checkpointer, …). Every process of
// that name this user may read counts; a backend that exited takes its
// time with it, so the pools' long-lived connections count, a short-lived
// one may not.
func (t *e2e) cpuByRole() (map[string]time.Duration, error) {
	used := map[string]time.Duration{}
	for _, p := range t.procs {
		if !p.alive() || p.binary != t.o.binary {
			continue
		}
		cpu, err := harness.ProcessCPU(p.pid())
		if err != nil {
			return nil, fmt.Errorf("CPU time of %s: %w", p.name, err)
		}
		used[p.args[0]] += cpu
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		cpu, err := harness.ProcessCPU(pid)
		if err != nil {
			continue
		}
		used[postgresRole(pid, t.dbName, t.temporalDB)] += cpu
	}
	return used, nil
}

// openTickets (part of measureCapacity) opens -capacity tickets under an
// SLA policy that gives each a first-response and a resolution clock, each
// ticket with its TicketSLA workflow waiting on its timers, and reports
// what each open ticket costs: CPU per create in each process, and the
// growth of the suite's and Temporal's databases and of the Temporal
// processes' resident memory per open ticket.
func (t *e2e) openTickets(ctx context.Context) error {
	n := t.o.capacity
	if t.temporalDB == "" {
		return fmt.Errorf("the open-tickets measurement needs Temporal's databases: run with -temporal postgres")
	}
	// Enterprise: no monthly allowance, so creates take no lock (the
	// walkthrough left the organization on Business).
	setPlan := exec.CommandContext(ctx, t.o.binary, "admin", "set-plan", t.orgID, "enterprise")
	setPlan.Env = append(os.Environ(), t.suiteEnv()...)
	if out, err := setPlan.CombinedOutput(); err != nil {
		return fmt.Errorf("suite admin set-plan: %v: %s", err, out)
	}
	hd := []string{"x-api-key", t.hdKey, "x-workspace-id", t.orgID}
	policy := map[string]any{"businessHours": "24x7", "targets": map[string]any{"normal": map[string]any{"firstResponse": 480, "resolution": 2880}}}
	if err := expect(ctx, t.http, http.StatusOK, nil, "PUT", t.base(t.next())+"/helpdesk/sla-policy", policy, hd...); err != nil {
		return err
	}
	sizes := func() (suite, temporal int64, rss int, err error) {
		if err = t.db.QueryRowContext(ctx, `SELECT pg_database_size($1), pg_database_size($2) + pg_database_size($3)`,
			t.dbName, t.temporalDB, t.temporalDB+"_visibility").Scan(&suite, &temporal); err != nil {
			return
		}
		for _, p := range t.temporals {
			mib, rerr := harness.ResidentMiB(p.pid())
			if rerr != nil {
				return 0, 0, 0, rerr
			}
			rss += mib
		}
		return
	}
	suiteBefore, temporalBefore, rssBefore, err := sizes()
	if err != nil {
		return err
	}
	cpuBefore, err := t.cpuByRole()
	if err != nil {
		return err
	}
	began := time.Now()
	var next, created atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				r, err := request(ctx, t.http, "POST", t.base(int(i%2))+"/helpdesk/tickets",
					map[string]string{"subject": fmt.Sprintf("Printer %d on fire", i), "email": fmt.Sprintf("requester-%d@example.com", i)}, hd...)
				if err == nil && r.status == http.StatusCreated {
					created.Add(1)
				} else if err != nil {
					failure.CompareAndSwap(nil, err.Error())
				} else {
					failure.CompareAndSwap(nil, fmt.Sprintf("%d %s", r.status, r.body))
				}
			}
		})
	}
	wg.Wait()
	createdIn := time.Since(began)
	if created.Load() != int64(n) {
		return fmt.Errorf("%d of %d tickets created (first failure: %v)", created.Load(), n, failure.Load())
	}
	// Every ticket's TicketSLA workflow started (its outbox row done).
	for {
		var pending int
		if err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM workflow_starts WHERE workflow_id LIKE 'ticket-sla/%' AND status = 'pending'`).Scan(&pending); err != nil {
			return err
		}
		if pending == 0 {
			break
		}
		if time.Since(began) > 10*time.Minute {
			return fmt.Errorf("%d tickets' SLA workflows still not started after 10 minutes", pending)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	started := time.Since(began)
	cpuAfter, err := t.cpuByRole()
	if err != nil {
		return err
	}
	suiteAfter, temporalAfter, rssAfter, err := sizes()
	if err != nil {
		return err
	}
	per, _ := cpuPer(cpuBefore, cpuAfter, n)
	t.figure("open tickets, %s: %d tickets under an SLA policy created in %s (%.0f/s), every SLA workflow started %s after the first; "+
		"CPU per ticket: %s; per open ticket: suite database +%.1f KB, Temporal's databases +%.1f KB, Temporal processes' memory %+.1f KB",
		t.temporalTopology(), n, createdIn.Round(100*time.Millisecond), float64(n)/createdIn.Seconds(), started.Round(100*time.Millisecond),
		strings.Join(per, ", "), float64(suiteAfter-suiteBefore)/1024/float64(n), float64(temporalAfter-temporalBefore)/1024/float64(n),
		float64(rssAfter-rssBefore)*1024/float64(n))
	return nil
}

// postgresRole tells whose a PostgreSQL process is by its title
// ("postgres: [cluster:] user database client state" for a backend).
func postgresRole(pid int, suiteDB, temporalDB string) string {
	title, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	for _, field := range strings.Fields(strings.ReplaceAll(string(title), "\x00", " ")) {
		switch {
		case field == suiteDB:
			return "postgres (suite)"
		case temporalDB != "" && (field == temporalDB || field == temporalDB+"_visibility"):
			return "postgres (temporal)"
		}
	}
	return "postgres (other)"
}

// backlogRSS is the largest resident memory a process may reach with a
// backlog of -backlog intakes (issue 35).
const backlogRSS = 1024 // MiB

// measureBacklog (-faults backlog, with -backlog N) sends N intakes as fast
// as 16 clients are answered — far faster than the pipeline drains them —
// and then samples every process's resident memory each second for two
// minutes while the backlog (outbox rows, then workflows) is worked off.
// It fails when a process's peak (VmHWM) passes backlogRSS. The crm_ key's
// per-minute intake limit is lifted for this run (suiteEnv).
func (t *e2e) measureBacklog(ctx context.Context) error {
	n := t.o.backlog
	source := fmt.Sprintf("e2e-backlog-%d", time.Now().Unix())
	s := &sender{t: t, source: source, conc: 16, max: n}
	began := time.Now()
	s.run(ctx)
	sentIn := time.Since(began)
	if accepted := int(s.ok.Load()); accepted != n {
		return fmt.Errorf("%d of %d intakes accepted (first refusal: %s)", accepted, n, s.sample)
	}
	var pending, processed int
	backlog := func() error {
		return t.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM workflow_starts WHERE status = 'pending'),
			(SELECT count(processed_at) FROM lead_intakes WHERE payload::jsonb->>'source' = $1)`, source).Scan(&pending, &processed)
	}
	if err := backlog(); err != nil {
		return err
	}
	t.step("%d intakes accepted in %s; %d workflow starts pending, %d intakes processed", n, sentIn.Round(100*time.Millisecond), pending, processed)
	rss := map[string]int{}
	for range 120 {
		for _, p := range t.procs {
			if mib, err := harness.ResidentMiB(p.pid()); p.alive() && err == nil {
				rss[p.name] = max(rss[p.name], mib)
			}
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if err := backlog(); err != nil {
		return err
	}
	var peaks []string
	var over []string
	for _, p := range t.peakRSS() {
		peaks = append(peaks, fmt.Sprintf("%s %d MiB (sampled %d)", p.name, p.mib, rss[p.name]))
		if p.mib > backlogRSS {
			over = append(over, p.name)
		}
	}
	t.figure("backlog of %d intakes (sent in %s), 2 minutes later %d workflow starts pending and %d intakes processed; peak resident memory per process: %s",
		n, sentIn.Round(100*time.Millisecond), pending, processed, strings.Join(peaks, ", "))
	if len(over) > 0 {
		return fmt.Errorf("over %d MiB resident with a backlog of %d: %s", backlogRSS, n, strings.Join(over, ", "))
	}
	return nil
}
