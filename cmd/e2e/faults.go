package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Two faults struck during the intakes: a worker killed (kill -9), and
// the Temporal server stopped for a while.

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
		if err := p.awaitListening(ctx, t.temporalAddrs[i], time.Minute); err != nil {
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
