package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sender sends web-form intakes with a crm_ key, alternating between the
// APIs. Each intake has its own Idempotency-Key; a request that fails (no
// answer, 5xx, 409, 429) is retried with the same key on the other API, as
// a client behind a load balancer would, until it is accepted (202) or a
// minute has passed.
type sender struct {
	t        *e2e
	source   string
	conc     int                          // concurrent clients
	pace     time.Duration                // pause of each client between intakes
	max      int                          // intakes to send (at most)
	until    time.Time                    // stop starting intakes after this (zero: no limit)
	accepted func(n int64)                // called after each acceptance with the count so far
	answered func(r *response, err error) // called with every answer (or error), if set

	sent, ok, refused, retries atomic.Int64
	mu                         sync.Mutex
	sample                     string    // the first refusal
	ended                      time.Time // when run returned: the last intake answered
}

func (s *sender) run(ctx context.Context) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range s.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := int(next.Add(1)) - 1
				if n >= s.max || (!s.until.IsZero() && time.Now().After(s.until)) {
					return
				}
				s.sent.Add(1)
				if s.one(ctx, n) {
					got := s.ok.Add(1)
					if s.accepted != nil {
						s.accepted(got)
					}
				}
				if s.pace > 0 {
					_ = sleep(ctx, s.pace)
				}
			}
		}()
	}
	wg.Wait()
	s.ended = time.Now()
}

// one sends intake n until it is accepted or refused for good.
func (s *sender) one(ctx context.Context, n int) bool {
	key := fmt.Sprintf("%s-%d", s.source, n)
	began := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.retries.Add(1)
			if sleep(ctx, 200*time.Millisecond) != nil {
				return false
			}
		}
		r, err := request(ctx, s.t.http, "POST", s.t.base((n+attempt)%2)+"/crm/leads/webhook", intakeBody(s.source, n),
			"x-api-key", s.t.crmKey, "Idempotency-Key", key)
		if s.answered != nil {
			s.answered(r, err)
		}
		if err == nil && r.status == http.StatusAccepted {
			return true
		}
		retry := err != nil || r.status >= 500 || r.status == http.StatusConflict || r.status == http.StatusTooManyRequests
		if !retry || time.Since(began) > time.Minute {
			what := ""
			if err != nil {
				what = err.Error()
			} else {
				what = fmt.Sprintf("%d %s", r.status, strings.TrimSpace(string(r.body)))
			}
			s.mu.Lock()
			if s.sample == "" {
				s.sample = what
			}
			s.mu.Unlock()
			s.refused.Add(1)
			return false
		}
	}
}

// awaitLeads waits until every accepted intake of source is a processed
// intake and a lead, or nothing has moved for a minute, and then a moment
// longer to see late duplicates.
func (t *e2e) awaitLeads(ctx context.Context, source string, accepted int) (leadCount, error) {
	var c leadCount
	progress, last := time.Now(), -1
	for {
		var err error
		if c, err = t.countLeads(ctx, source); err != nil {
			return c, err
		}
		if c.emails >= accepted && c.processed >= accepted {
			break
		}
		if c.emails+c.processed != last {
			progress, last = time.Now(), c.emails+c.processed
		}
		if time.Since(progress) > time.Minute {
			return c, fmt.Errorf("%d accepted intakes: %d leads, %d processed, and nothing moved for a minute", accepted, c.emails, c.processed)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return c, err
		}
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return c, err
	}
	return t.countLeads(ctx, source)
}

// checkLeads fails unless accepted intakes made exactly accepted leads.
func checkLeads(c leadCount, accepted int) error {
	if dup := c.leads - c.emails; dup != 0 || c.leads != accepted || c.processed != accepted {
		return fmt.Errorf("%d accepted intakes made %d leads (%d duplicated, %d lost; %d intakes processed)",
			accepted, c.leads, dup, accepted-c.emails, c.processed)
	}
	return nil
}

// faultWorkerKill: kill -9 one worker during the intakes; a supervisor
// restarts it a few seconds later. Every intake must become exactly one lead.
func (t *e2e) faultWorkerKill(ctx context.Context) error {
	n := t.o.intakes
	source := fmt.Sprintf("e2e-kill-%d", time.Now().Unix())
	s, done, began, err := t.quarterAccepted(ctx, source, n)
	if err != nil {
		return err
	}
	victim := t.workers[0]
	victim.kill()
	killed := time.Now()
	t.step("kill -9 %s (pid %d) after %d of %d intakes were accepted", victim.name, victim.pid(), s.ok.Load(), n)
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	if err := victim.start(); err != nil {
		return err
	}
	if _, err := victim.awaitReady(ctx, t.http, time.Minute); err != nil {
		return err
	}
	back := time.Since(killed)
	t.step("%s restarted 5 s after the kill, ready %s after the kill", victim.name, back.Round(100*time.Millisecond))
	<-done
	sentFor := time.Since(began)
	accepted := int(s.ok.Load())
	c, err := t.awaitLeads(ctx, source, accepted)
	if timeline, terr := t.leadTimeline(ctx, source, killed, 10*time.Second); terr == nil {
		t.step("leads made per 10 s from the kill on: %s", timeline)
	}
	t.figure("worker kill -9 during %d intakes: sent %d, accepted %d (in %s, %d client retries), processed %d, leads %d, duplicates %d, lost %d; "+
		"killed worker ready again %s after the kill; every lead in place %s after the last acceptance",
		n, s.sent.Load(), accepted, sentFor.Round(100*time.Millisecond), s.retries.Load(), c.processed, c.leads, c.leads-c.emails, accepted-c.emails,
		back.Round(100*time.Millisecond), time.Since(began.Add(sentFor)).Round(100*time.Millisecond))
	if err != nil {
		return err
	}
	if accepted != n {
		return fmt.Errorf("%d of %d intakes accepted (first refusal: %s)", accepted, n, s.sample)
	}
	return checkLeads(c, n)
}

// quarterAccepted starts sending n intakes of source (8 clients) and
// returns once a quarter of them is accepted, the moment a fault strikes;
// done closes when the last one is answered.
func (t *e2e) quarterAccepted(ctx context.Context, source string, n int) (s *sender, done chan struct{}, began time.Time, err error) {
	trigger := make(chan struct{})
	var once sync.Once
	s = &sender{t: t, source: source, conc: 8, max: n, accepted: func(got int64) {
		if got >= int64(n/4) {
			once.Do(func() { close(trigger) })
		}
	}}
	done = make(chan struct{})
	began = time.Now()
	go func() { s.run(ctx); close(done) }()
	select {
	case <-trigger:
		return s, done, began, nil
	case <-done:
		return nil, nil, began, fmt.Errorf("the intakes ended before a quarter was accepted (%d of %d; first refusal: %s)", s.ok.Load(), n, s.sample)
	}
}

// faultTemporalDown: the Temporal server stopped (SIGTERM; its file is
// kept) for a while during steady intakes. The APIs keep accepting (the
// outbox), /readyz says not ready, and every accepted intake becomes a
// lead once Temporal is back.
func (t *e2e) faultTemporalDown(ctx context.Context) error {
	source := fmt.Sprintf("e2e-temporal-%d", time.Now().Unix())
	const before, after = 5 * time.Second, 10 * time.Second
	var down atomic.Bool
	var whileDown atomic.Int64
	s := &sender{t: t, source: source, conc: 4, pace: 200 * time.Millisecond, max: 1 << 30,
		until: time.Now().Add(before + t.o.temporalDown + after),
		accepted: func(int64) {
			if down.Load() {
				whileDown.Add(1)
			}
		}}
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	if err := sleep(ctx, before); err != nil {
		return err
	}

	stopping := time.Now()
	down.Store(true)
	for _, p := range t.temporals {
		p.stop(30 * time.Second)
	}
	stopped := time.Now()
	t.step("%s stopped (SIGTERM) in %s; %d intakes accepted so far", t.temporalTopology(), stopped.Sub(stopping).Round(100*time.Millisecond), s.ok.Load())

	// Every /readyz turns not ready (answers are cached up to 2 s).
	probes := []*proc{t.apis[0], t.apis[1], t.workers[0], t.workers[1]}
	notReady := map[string]time.Duration{}
	for len(notReady) < len(probes) && time.Since(stopped) < 15*time.Second {
		for _, p := range probes {
			if _, seen := notReady[p.name]; seen {
				continue
			}
			if st, _, _ := get(ctx, t.http, p.readyz); st != http.StatusOK {
				notReady[p.name] = time.Since(stopping)
			}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	var says []string
	for _, p := range probes {
		if d, ok := notReady[p.name]; ok {
			says = append(says, fmt.Sprintf("%s %s", p.name, d.Round(100*time.Millisecond)))
		} else {
			says = append(says, p.name+" never")
		}
	}
	t.step("/readyz not ready, after the SIGTERM: %s", strings.Join(says, ", "))
	for _, p := range t.apis {
		if _, ok := notReady[p.name]; !ok {
			return fmt.Errorf("%s /readyz still answers 200 15 s after Temporal stopped", p.name)
		}
	}
	// ... and stays so while Temporal is down.
	readyWhileDown := 0
	samples := 0
	for time.Since(stopped) < t.o.temporalDown {
		for _, p := range t.apis {
			samples++
			if st, _, _ := get(ctx, t.http, p.readyz); st == http.StatusOK {
				readyWhileDown++
			}
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if readyWhileDown > 0 {
		return fmt.Errorf("the APIs' /readyz answered 200 %d of %d times while Temporal was down", readyWhileDown, samples)
	}

	restarted := time.Now()
	for i, p := range t.temporals {
		if err := p.start(); err != nil {
			return err
		}
		if err := awaitListening(ctx, p, t.temporalAddrs[i], time.Minute); err != nil {
			return err
		}
	}
	down.Store(false)
	downFor := restarted.Sub(stopping)
	listening := time.Since(restarted)
	var readyAfter []string
	var allReady time.Duration
	for _, p := range probes {
		if _, err := p.awaitReady(ctx, t.http, 2*time.Minute); err != nil {
			return fmt.Errorf("after Temporal came back: %w", err)
		}
		allReady = time.Since(restarted)
		readyAfter = append(readyAfter, fmt.Sprintf("%s %s", p.name, allReady.Round(100*time.Millisecond)))
	}
	t.step("%s restarted on its state, listening after %s; ready again after: %s", t.temporalTopology(), listening.Round(100*time.Millisecond), strings.Join(readyAfter, ", "))
	<-done
	accepted := int(s.ok.Load())
	c, err := t.awaitLeads(ctx, source, accepted)
	drained := time.Since(restarted)
	t.figure("Temporal down %s during intakes: sent %d, accepted %d (%d while down; %d refused, %d client retries), processed %d, leads %d, duplicates %d, lost %d; "+
		"/readyz of both APIs not ready %s after the SIGTERM and at all %d probes while down; every process ready %s and every lead in place %s after the restart",
		downFor.Round(100*time.Millisecond), s.sent.Load(), accepted, whileDown.Load(), s.refused.Load(), s.retries.Load(), c.processed, c.leads, c.leads-c.emails, accepted-c.emails,
		max(notReady["api1"], notReady["api2"]).Round(100*time.Millisecond), samples, allReady.Round(100*time.Millisecond), drained.Round(100*time.Millisecond))
	if err != nil {
		return err
	}
	if s.refused.Load() > 0 {
		return fmt.Errorf("%d intakes refused (first: %s)", s.refused.Load(), s.sample)
	}
	if whileDown.Load() == 0 {
		return fmt.Errorf("no intake was accepted while Temporal was down")
	}
	return checkLeads(c, accepted)
}

// faultAPIKill: kill -9 an API process a moment after a request with an
// Idempotency-Key has been written to it (at once, and 2 to 20 milliseconds
// later, so that the request dies at different points of its handling); the
// client retries with the same key on the other API until it succeeds (a
// 409 while the dead request's claim on the key lasts), and exactly one
// object exists. The killed API is restarted after each round.
func (t *e2e) faultAPIKill(ctx context.Context) error {
	victim, other := t.apis[1], 0
	var figures, failures []string
	worst := time.Duration(0)
	for _, delay := range []time.Duration{0, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		email := fmt.Sprintf("grace-%d@navy.mil", time.Now().UnixNano())
		body := map[string]string{"name": "Grace Hopper", "email": email, "type": "person"}
		hdr := []string{"Authorization", "Bearer " + t.crmKey, "Idempotency-Key", "e2e-kill-" + email}

		var killedAt time.Time
		var once sync.Once
		killed := make(chan struct{})
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
			once.Do(func() {
				go func() {
					time.Sleep(delay)
					killedAt = time.Now()
					_ = victim.cmd.Process.Kill() // kill -9
					close(killed)
				}()
			})
		}}
		// A connection of its own: the shared transport would resend a
		// request with an Idempotency-Key on a fresh connection by itself.
		client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		r, err := request(httptrace.WithClientTrace(ctx, trace), client, "POST", t.base(1)+"/crm/contacts", body, hdr...)
		first := "no answer"
		if err == nil {
			first = strconv.Itoa(r.status)
		}
		select {
		case <-killed:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("the request to %s was never written", victim.name)
		}
		if !victim.wait(10 * time.Second) {
			return fmt.Errorf("%s still runs after kill -9", victim.name)
		}

		attempts := 0
		var statuses []string
		for {
			attempts++
			r, err := request(ctx, t.http, "POST", t.base(other)+"/crm/contacts", body, hdr...)
			if err != nil {
				return fmt.Errorf("retry on api%d: %w", other+1, err)
			}
			statuses = append(statuses, strconv.Itoa(r.status))
			if r.status == http.StatusCreated {
				break
			}
			if r.status != http.StatusConflict || time.Since(killedAt) > 30*time.Second {
				return fmt.Errorf("retry %d on api%d answered %d: %s", attempts, other+1, r.status, r.body)
			}
			wait := time.Second
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
		recovered := time.Since(killedAt)
		worst = max(worst, recovered)
		count, err := t.countContacts(ctx, email)
		if err != nil {
			return err
		}
		t.step("kill -9 %s %s after the request was written (the client got: %s); retries on api%d answered %s, %s after the kill; %d contact(s) with its e-mail",
			victim.name, delay, first, other+1, runs(statuses), recovered.Round(100*time.Millisecond), count)
		figures = append(figures, fmt.Sprintf("+%s: first %s, retries %s, %d object", delay, first, runs(statuses), count))
		if count != 1 {
			// Go on with the other rounds: the figures tell more than the
			// first failure.
			failures = append(failures, fmt.Sprintf("killed %s after the request was written: %d contacts after the retry with the same Idempotency-Key, want exactly 1 "+
				"(the dead request's write committed but its outcome was not stored with the key, so the retry ran again once the claim expired)", delay, count))
		}
		if err := victim.start(); err != nil {
			return err
		}
		if _, err := victim.awaitReady(ctx, t.http, time.Minute); err != nil {
			return err
		}
	}
	t.figure("API kill -9 mid-request, %d rounds (kill delay after the request was written: first answer, retries on the other API, objects): %s; "+
		"rounds with more than one object %d; slowest retry success %s after the kill",
		len(figures), strings.Join(figures, "; "), len(failures), worst.Round(100*time.Millisecond))
	if len(failures) > 0 {
		return fmt.Errorf("%s", strings.Join(failures, "; "))
	}
	return nil
}

// leadTimeline counts the leads of source made in each period from start
// on (the database's clock stamps them), e.g. "310, 120, 95".
func (t *e2e) leadTimeline(ctx context.Context, source string, start time.Time, period time.Duration) (string, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT floor(extract(epoch FROM created_at - $3) / $4)::int AS b, count(*)
		FROM leads WHERE org_id = $1 AND source = $2 AND created_at >= $3 GROUP BY b ORDER BY b`,
		t.orgID, source, start, period.Seconds())
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var b, n int
		if err := rows.Scan(&b, &n); err != nil {
			return "", err
		}
		for len(parts) < b {
			parts = append(parts, "0")
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", "), rows.Err()
}

// runs writes repeated answers once with a count: "409×10, 201".
func runs(statuses []string) string {
	var out []string
	for i := 0; i < len(statuses); {
		j := i
		for j < len(statuses) && statuses[j] == statuses[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s×%d", statuses[i], j-i))
		} else {
			out = append(out, statuses[i])
		}
		i = j
	}
	return strings.Join(out, ", ")
}
