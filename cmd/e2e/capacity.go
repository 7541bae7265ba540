package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// figures deploy/README's capacity model is built from.
func (t *e2e) measureCapacity(ctx context.Context) error {
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
	_, err := t.workers[1].awaitReady(ctx, t.http, time.Minute)
	var peaks []string
	for _, p := range t.procs {
		if mib, rerr := harness.PeakRSS(p.pid()); p.alive() && rerr == nil {
			peaks = append(peaks, fmt.Sprintf("%s %d MiB", p.name, mib))
		}
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
	var per []string
	var total time.Duration
	for _, role := range []string{"api", "worker", "temporal", "postgres"} {
		used := (after[role] - before[role]) / time.Duration(max(accepted, 1))
		total += used
		per = append(per, fmt.Sprintf("%s %.2f ms", role, float64(used.Microseconds())/1000))
	}
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

// cpuByRole is the CPU time used so far by the topology's processes, per
// role (api, worker, temporal), and by the PostgreSQL server's processes
// (postgres: every process of that name this user may read; a backend that
// exited takes its time with it, so the pools' long-lived connections
// count, a short-lived one may not).
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
		if cpu, err := harness.ProcessCPU(pid); err == nil {
			used["postgres"] += cpu
		}
	}
	return used, nil
}
