package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The honest baselines (issue 44, item 2): rows whose pgbench side runs
// what the API itself sends PostgreSQL for one request — prepared, as pgx
// sends it, and every statement of the request, not one INSERT standing
// for them — so that the ratio says how much the suite adds to its own
// database work, and a goal set on it means what it says.

// goal is what an issue asks of a row: the API at least ratio of its
// baseline's rate, and its p99 at most p99x times pgbench's; a zero field
// asks nothing.
type goal struct{ ratio, p99x float64 }

// baselineText is what a row adds after its ratio: the p99 beside
// pgbench's, when pgbench's was measured, and the goals, met or not.
func (r row) baselineText() string {
	var parts []string
	if r.dbP99 > 0 {
		parts = append(parts, fmt.Sprintf("p99 %.2f× pgbench's (p50 %.2f ms, p99 %.2f ms)", r.apiP99.Seconds()/r.dbP99.Seconds(), ms(r.dbP50), ms(r.dbP99)))
	}
	if r.goal.ratio > 0 {
		parts = append(parts, fmt.Sprintf("goal ratio ≥ %.2f %s", r.goal.ratio, met(r.ratio() >= r.goal.ratio)))
	}
	if r.goal.p99x > 0 && r.dbP99 > 0 {
		parts = append(parts, fmt.Sprintf("goal p99 ≤ %.1f× %s", r.goal.p99x, met(r.apiP99.Seconds() <= r.goal.p99x*r.dbP99.Seconds())))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

func met(ok bool) string {
	if ok {
		return "(met)"
	}
	return "(not met)"
}

// pgbenchLatency reads the per-transaction logs pgbench wrote with -l
// --log-prefix prefix (a file per thread: prefix.PID, prefix.PID.1, …),
// removes them, and returns the median and the 99th percentile. Each
// line is "client transaction latency_µs script epoch µs"; pgbench's own
// summary gives only the mean, and a goal on the p99 needs the tail.
func pgbenchLatency(prefix string) (p50, p99 time.Duration, err error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return 0, 0, fmt.Errorf("pgbench wrote no transaction log at %s.*", prefix)
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				f.Close()
				return 0, 0, fmt.Errorf("pgbench log %s: %q: %w", name, sc.Text(), err)
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		err = sc.Err()
		f.Close()
		os.Remove(name)
		if err != nil {
			return 0, 0, err
		}
	}
	p50, p99 = p50p99(lat)
	return p50, p99, nil
}

// drain waits until backlog, a count of the work an API round left queued
// for the bench's workspace (what names it), is down to nothing or has
// not moved for 30 s, and says how long it waited.
func (b *bencher) drain(backlog, what string) error {
	start := time.Now()
	n, err := pollCount(context.Background(), b.db, func(n int) bool { return n == 0 }, backlog, b.org)
	switch {
	case err != nil:
		return err
	case n > 0:
		fmt.Printf("  (%s stalled with %d rows left)\n", what, n)
	case time.Since(start) > time.Second:
		fmt.Printf("  (waited %.0f s for %s)\n", time.Since(start).Seconds(), what)
	}
	return nil
}

// preparedGetLoad is the contact list beside its SELECT sent prepared, as
// pgx sends the API's (the first GET row's pgbench plans the SELECT on
// every run, and so costs PostgreSQL more than the API's own does).
const preparedGetLoad = "GET /crm/contacts?limit=25 (10k in org) beside pgbench -M prepared"

// preparedGetContacts is the list page's statement as the API sends it
// (checked in PostgreSQL's log): the workspace a parameter, the LIMIT a
// number in the text (database.PageLimit).
var preparedGetContacts = workload{
	wrkScript:   getContacts.wrkScript,
	pgbenchMode: "prepared",
	pgScript: func(*bencher) string {
		return "SELECT * FROM contacts WHERE org_id = :org ORDER BY created_at DESC, id DESC LIMIT 26;\n"
	},
}

// pairedWith is paired with a goal shown in the row.
func pairedWith(conns int, w workload, g goal) func(r *benchRun, name string) error {
	return func(r *benchRun, name string) error {
		rw, err := r.b.pair(name, conns, w)
		rw.goal = g
		return r.add(rw, err)
	}
}
