package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// outageLog tallies the answers seen while PostgreSQL restarts: every
// 5xx must be a 503 problem+json with Retry-After.
type outageLog struct {
	mu       sync.Mutex
	statuses map[string]int
	good503  int
	bad      []string
}

func (o *outageLog) record(r *response, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.statuses["no answer"]++
		if len(o.bad) < 3 {
			o.bad = append(o.bad, "no answer: "+err.Error())
		}
		return
	}
	o.statuses[fmt.Sprint(r.status)]++
	if r.status < 500 {
		return
	}
	ct := r.header.Get("Content-Type")
	if r.status == http.StatusServiceUnavailable && strings.HasPrefix(ct, "application/problem+json") && r.header.Get("Retry-After") != "" {
		o.good503++
		return
	}
	if len(o.bad) < 3 {
		o.bad = append(o.bad, fmt.Sprintf("%d (%s, Retry-After %q): %s", r.status, ct, r.header.Get("Retry-After"), strings.TrimSpace(string(r.body))))
	}
}

func (o *outageLog) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []string
	for k := range o.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, o.statuses[k]))
	}
	return strings.Join(parts, ", ")
}

// faultPostgresRestart restarts the machine's PostgreSQL cluster (every
// database on it: other work on the machine sees it too, hence opt-in)
// during intakes and reads. Requests that meet the outage must fail with
// 503 problem+json and Retry-After, every accepted intake must become one
// lead (nothing half-written), and the suite must recover by itself.
func (t *e2e) faultPostgresRestart(ctx context.Context) error {
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) != 1 {
		return fmt.Errorf("pg-restart needs exactly one cluster version under /etc/postgresql (Debian's layout): %v", err)
	}
	source := fmt.Sprintf("e2e-pg-%d", time.Now().Unix())
	outage := &outageLog{statuses: map[string]int{}}
	var restarting atomic.Bool
	s := &sender{t: t, source: source, conc: 4, pace: 100 * time.Millisecond, max: 1 << 30,
		until: time.Now().Add(20 * time.Second),
		answered: func(r *response, err error) {
			if restarting.Load() || err != nil || r.status >= 500 {
				outage.record(r, err)
			}
		}}
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	// Reads on both APIs, every 50 ms, throughout.
	readsDone := make(chan struct{})
	stopReads := make(chan struct{})
	var firstFailure, lastFailure atomic.Int64 // unix nanos of the first and last reads that failed
	go func() {
		defer close(readsDone)
		for i := 0; ; i++ {
			select {
			case <-stopReads:
				return
			case <-time.After(50 * time.Millisecond):
			}
			r, err := request(ctx, t.http, "GET", t.base(i%2)+"/crm/contacts?limit=1", nil, "Authorization", "Bearer "+t.crmKey)
			if err != nil || r.status != http.StatusOK {
				firstFailure.CompareAndSwap(0, time.Now().UnixNano())
				lastFailure.Store(time.Now().UnixNano())
				outage.record(r, err)
			}
		}
	}()
	if err := sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	began := time.Now()
	restarting.Store(true)
	out, err := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart").CombinedOutput()
	restarted := time.Now()
	if err != nil {
		close(stopReads)
		<-readsDone
		<-done
		return fmt.Errorf("pg_ctlcluster restart: %v: %s", err, out)
	}
	t.step("PostgreSQL %s/main restarted in %s", versions[0].Name(), restarted.Sub(began).Round(10*time.Millisecond))
	// Recovered: every process ready again and reads succeed.
	for _, p := range []*proc{t.apis[0], t.apis[1], t.workers[0], t.workers[1]} {
		if _, err := p.awaitReady(ctx, t.http, time.Minute); err != nil {
			close(stopReads)
			return fmt.Errorf("after the PostgreSQL restart: %w", err)
		}
	}
	allReady := time.Since(restarted)
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	restarting.Store(false)
	close(stopReads)
	<-readsDone
	<-done
	failures := "no read failed"
	if first := firstFailure.Load(); first != 0 {
		failures = fmt.Sprintf("reads failed from %s to %s after pg_ctlcluster began (it took %s)",
			time.Unix(0, first).Sub(began).Round(10*time.Millisecond), time.Unix(0, lastFailure.Load()).Sub(began).Round(10*time.Millisecond),
			restarted.Sub(began).Round(10*time.Millisecond))
	}
	accepted := int(s.ok.Load())
	c, err := t.awaitLeads(ctx, source, accepted)
	t.figure("PostgreSQL restart (%s) during intakes and reads: answers during the outage %s; 503 problem+json with Retry-After %d; "+
		"intakes sent %d, accepted %d (%d client retries), processed %d, leads %d, duplicates %d, lost %d, intake rows %d; "+
		"%s; every /readyz 200 again %s after it returned, no process restarted",
		restarted.Sub(began).Round(10*time.Millisecond), outage, outage.good503, s.sent.Load(), accepted, s.retries.Load(), c.processed, c.leads,
		c.leads-c.emails, accepted-c.emails, c.intakes, failures, allReady.Round(100*time.Millisecond))
	if err != nil {
		return err
	}
	if !t.intact() {
		return fmt.Errorf("a process exited during the PostgreSQL restart")
	}
	if len(outage.bad) > 0 {
		return fmt.Errorf("answers during the outage that are not 503 problem+json with Retry-After: %s", strings.Join(outage.bad, "; "))
	}
	if outage.good503 == 0 {
		return fmt.Errorf("no request met the outage (no 503 seen): the restart was too quick to observe")
	}
	if s.refused.Load() > 0 {
		return fmt.Errorf("%d intakes refused for good (first: %s)", s.refused.Load(), s.sample)
	}
	if c.intakes != accepted {
		return fmt.Errorf("%d intake rows for %d accepted intakes (half-written requests?)", c.intakes, accepted)
	}
	return checkLeads(c, accepted)
}
