package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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
	return steadily(rate, d, func(n int) bool { return b.sendIntake(client, t, source, n) })
}

// steadily runs send(n) rate times a second for d, each in its own
// goroutine, and reports how many it sent and how many succeeded.
func steadily(rate int, d time.Duration, send func(n int) bool) (sent, ok int) {
	var succeeded atomic.Int64
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
			if send(n) {
				succeeded.Add(1)
			}
		}(n)
	}
	wg.Wait()
	return sent, int(succeeded.Load())
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

// burstResult is the bench organization's burst and, beside it, another
// organization's steady intake (issue 35's mixed load).
type burstResult struct {
	burst, other intakeResult
}

func (r burstResult) String() string { return r.burst.String() + "\n" + r.other.String() }

// burstIntake sends cfg.burst submissions for the bench organization as
// fast as 16 connections allow and reports the rate at which the pipeline
// turns them into scored leads; from the same moment it sends quietRate a
// second for -mixed-for for another organization, and measures accept →
// scored for it. The relay takes starts in turns across organizations, so
// the burst's backlog does not delay the other's leads. One burst serves
// both measurements (until issue 44 a burst of 5,000 ran alone and one of
// 10,000 beside the other organization: two drains of about a minute and
// two): -mixed-for's intake falls inside the burst's drain, which is what
// it measures.
func (b *bencher) burstIntake(ctx context.Context, db *sql.DB, other tenant) (burstResult, error) {
	stamp := time.Now().Unix()
	source, otherSource := fmt.Sprintf("burst%d", stamp), fmt.Sprintf("quiet%d", stamp)
	res := burstResult{
		burst: intakeResult{label: fmt.Sprintf("web-form intake burst of %d", b.cfg.burst), sent: b.cfg.burst},
		other: intakeResult{label: fmt.Sprintf("other organization's intake, %d/s (%s) beside it", quietRate, b.cfg.mixedFor)},
	}
	burstDone := make(chan struct{})
	go func() {
		defer close(burstDone)
		client := &http.Client{Timeout: 10 * time.Second}
		res.burst.accepted, res.burst.acceptTime = burst(b.cfg.burst, 16, func(n int) bool { return b.sendIntake(client, b.tenant(), source, n) })
	}()
	res.other.sent, res.other.accepted = b.sendSteadily(other, otherSource, quietRate, b.cfg.mixedFor)
	<-burstDone
	if err := b.awaitLeads(ctx, db, other.org, otherSource, &res.other); err != nil {
		return res, err
	}
	profiled := b.profile("web-form intake burst drain", 20*time.Second)
	if err := b.awaitLeads(ctx, db, b.org, source, &res.burst); err != nil {
		return res, err
	}
	if err := profiled(); err != nil {
		return res, err
	}
	var first, last sql.NullTime // NULL when no lead was made
	err := db.QueryRowContext(ctx, `SELECT min(i.created_at), max(l.created_at) FROM lead_intakes i JOIN leads l ON l.id = i.lead_id
		WHERE i.org_id = $1 AND l.source = $2`, b.org, source).Scan(&first, &last)
	if err == nil && first.Valid && last.Valid && last.Time.After(first.Time) {
		res.burst.drainRate = float64(res.burst.visible) / last.Time.Sub(first.Time).Seconds()
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
