package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"time"
)

// automationLoad is the automations' load name (-only matches it).
const automationLoad = "automation runs"

const (
	// automationRate and automationFor are the steady stream of tickets,
	// each matching a rule (issue 46: 50 events a second).
	automationRate = 50
	automationFor  = 20 * time.Second
)

// automationResult is how soon a matching ticket got its rule's first step.
type automationResult struct {
	sent, created, completed int
	p50, p99                 time.Duration
}

func (r automationResult) String() string {
	return fmt.Sprintf("%-42s sent %d, created %d, runs completed %d, missing %d; ticket created → first step applied p50 %.0f ms, p99 %.0f ms",
		fmt.Sprintf("%s, %d tickets/s matching a rule (%s)", automationLoad, automationRate, automationFor), r.sent, r.created, r.completed,
		r.created-r.completed, ms(r.p50), ms(r.p99))
}

// automationRuns makes a rule — a ticket tagged auto-bench is tagged seen
// — sends automationRate such tickets a second for automationFor, waits
// for their runs, and measures, per ticket, the time from its creation to
// its first step's outcome (both stamped by the suite). The rule is
// disabled at the end, so the loads after it open their tickets as before.
func (b *bencher) automationRuns(ctx context.Context, db *sql.DB) (automationResult, error) {
	var res automationResult
	// From a quiet suite: the rows before leave thousands of intakes and
	// deliveries queued, and a run started behind them measured their
	// backlog (14 s), not its own latency (42 ms alone).
	if err := b.quiet(automationLoad); err != nil {
		return res, err
	}
	token, err := signIn(b.base, b.email)
	if err != nil {
		return res, err
	}
	rule := map[string]any{"name": "Bench", "object": "ticket", "on": []string{"created"},
		"conditions": map[string]any{"all": []any{map[string]any{"field": "tags", "operator": "includes", "value": "auto-bench"}}},
		"steps":      []any{map[string]any{"action": "add_tags", "value": []string{"seen"}}}}
	var created struct{ ID string }
	rules := b.base + "/crm/organization/" + b.org + "/automations"
	if err := call(rules, token, rule, &created); err != nil {
		return res, fmt.Errorf("create the rule: %w", err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	res.sent, res.created = steadily(automationRate, automationFor, func(n int) bool {
		status, err := sendJSON(client, "POST", b.base+"/helpdesk/tickets",
			fmt.Sprintf(`{"subject":"Automated %d","email":"auto-%d@example.com","tags":["auto-bench"]}`, n, n),
			"X-Api-Key", b.hdKey, "X-Workspace-Id", b.org)
		return err == nil && status == http.StatusCreated
	})
	if res.completed, err = pollCount(ctx, db, func(n int) bool { return n >= res.created },
		`SELECT count(*) FROM automation_runs WHERE automation_id = $1 AND status = 'completed'`, created.ID); err != nil {
		return res, err
	}
	rows, err := db.QueryContext(ctx, `SELECT t.created_at, (r.steps::jsonb->0->>'at')::timestamptz
		FROM automation_runs r JOIN tickets t ON t.id::text = r.object_id
		WHERE r.automation_id = $1 AND r.status = 'completed'`, created.ID)
	if err != nil {
		return res, err
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var opened, applied time.Time
		if err := rows.Scan(&opened, &applied); err != nil {
			return res, err
		}
		lat = append(lat, applied.Sub(opened))
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	res.p50, res.p99 = p50p99(lat)
	rule["active"] = false
	return res, put(rules+"/"+created.ID, token, rule)
}

// rulesLoad is the ticket create with a workspace's rules beside the same
// create without them (issue 46: ≥ 0.9×).
const rulesLoad = "POST /helpdesk/tickets with 20 rules (1 matching) beside none"

// rulesGoal is issue 46's goal for it.
const rulesGoal = 0.9

// rulesResult is the create's rate without rules and with them, over the
// rounds (the median round's, and the range of the ratios).
type rulesResult struct {
	none, with         row
	ratioMin, ratioMax float64
	// cpuNone and cpuWith are the suite's CPU a ticket on each side over
	// every round, the work each create queued included: the CPU from a
	// side's start to the end of its drain, over the side's tickets. Unlike
	// the rate of a 3-second side, which moves with how much of that work
	// lands inside the side, it says what a matching rule costs.
	cpuNone, cpuWith time.Duration
}

func (r rulesResult) ratio() float64 { return r.with.apiRPS / r.none.apiRPS }

func (r rulesResult) String() string {
	met := "met"
	if r.ratio() < rulesGoal {
		met = "NOT met"
	}
	return fmt.Sprintf("%-42s c%d: no rules %.0f req/s (p99 %.1f ms), 20 rules %.0f req/s (p99 %.1f ms); ratio %.2f (%.2f–%.2f), goal ≥ %.1f: %s; "+
		"suite CPU a ticket with its queued work: no rules %.2f ms, 20 rules %.2f ms",
		rulesLoad, r.with.conns, r.none.apiRPS, ms(r.none.apiP99), r.with.apiRPS, ms(r.with.apiP99), r.ratio(), r.ratioMin, r.ratioMax, rulesGoal, met,
		ms(r.cpuNone), ms(r.cpuWith))
}

// ticketsWithRules measures POST /helpdesk/tickets in a workspace of its
// own as a real one has it (SLA policy, business plan, a webhook endpoint:
// the create's transaction, fullTicketWorkspace), in alternating rounds
// without rules and with 20 active ones, of which one matches every ticket
// and tags it (each create starts a run) and nineteen look at every ticket
// and match none. Each round waits for what the last one queued — the
// endpoint's wake-ups, deliveries, runs — before it starts.
func (r *benchRun) ticketsWithRules() (rulesResult, error) {
	var res rulesResult
	ws, err := r.workspace()
	if err != nil {
		return res, err
	}
	sink, err := newSink()
	if err != nil {
		return res, err
	}
	defer sink.Close()
	ids, err := ws.fullTicketWorkspace(sink.Addr().String())
	if err != nil {
		return res, fmt.Errorf("set up the workspace of %q: %w", rulesLoad, err)
	}
	w := ticketTransaction(ids)
	w.backlog = `SELECT (` + fullTicketBacklog + `) + (SELECT count(*) FROM automation_runs WHERE org_id = CAST($1 AS uuid) AND status IN ('running', 'waiting'))`
	rules := ws.base + "/crm/organization/" + ws.org + "/automations"
	var made []map[string]any
	var ids20 []string
	for i := range 20 {
		rule := map[string]any{"name": fmt.Sprintf("Bench %d", i), "object": "ticket", "on": []string{"created"}, "active": false,
			"conditions": map[string]any{"all": []any{map[string]any{"field": "priority", "operator": "is", "value": "urgent"},
				map[string]any{"field": "tags", "operator": "includes", "value": fmt.Sprintf("rule-%d", i)}}},
			"steps": []any{map[string]any{"action": "add_tags", "value": []string{"seen"}}}}
		if i == 0 { // the one that matches: every ticket of the row is about a printer
			rule["conditions"] = map[string]any{"all": []any{map[string]any{"field": "subject", "operator": "contains", "value": "printer"}}}
		}
		var created struct{ ID string }
		if err := call(rules, ws.token, rule, &created); err != nil {
			return res, fmt.Errorf("a rule: %w", err)
		}
		made, ids20 = append(made, rule), append(ids20, created.ID)
	}
	activate := func(on bool) error {
		for i, rule := range made {
			rule["active"] = on
			if err := put(rules+"/"+ids20[i], ws.token, rule); err != nil {
				return err
			}
		}
		return nil
	}
	threads := strconv.Itoa(min(16, runtime.NumCPU()))
	var rounds []rulesResult
	for i := range max(1, r.b.cfg.rounds) {
		var round rulesResult
		// The sides take turns going first, as the paired rows' database
		// and API runs alternate: the workspace grows with every run, and
		// a side that always ran second ran against more tickets (and
		// whatever the run before it left behind) than the other.
		sides := []*row{&round.none, &round.with}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if err := activate(side == &round.with); err != nil {
				return res, fmt.Errorf("the rules: %w", err)
			}
			*side = row{name: rulesLoad, conns: 16, apiRun: r.b.cfg.duration}
			ws.rounds++
			if err := ws.analyze(); err != nil {
				return res, err
			}
			profiled := func() error { return nil }
			if side == &round.with && len(rounds) == 0 {
				// With -profile, the first round's side with rules and most
				// of its drain: where the runs' work is done.
				profiled = r.b.profile(rulesLoad, side.apiRun+10*time.Second)
			}
			cpuBefore, _ := ws.procs.cpu()
			if err := ws.load(side, w, threads); err != nil {
				return res, err
			}
			if err := ws.drain(w.backlog, "the round's tickets, deliveries and runs"); err != nil {
				return res, err
			}
			if err := profiled(); err != nil {
				return res, err
			}
			cpuAfter, _ := ws.procs.cpu()
			side.suiteCPU = cpuAfter - cpuBefore
		}
		rounds = append(rounds, round)
	}
	r.b.rounds = ws.rounds
	var cpuNone, cpuWith cpuTally
	for _, round := range rounds {
		cpuNone.add(round.none)
		cpuWith.add(round.with)
	}
	slices.SortFunc(rounds, func(a, b rulesResult) int { return cmp.Compare(a.ratio(), b.ratio()) })
	res = rounds[len(rounds)/2]
	res.ratioMin, res.ratioMax = rounds[0].ratio(), rounds[len(rounds)-1].ratio()
	res.cpuNone, res.cpuWith = cpuNone.perRequest(), cpuWith.perRequest()
	return res, activate(false)
}

// cpuTally sums the suite's CPU and the requests of several rounds.
type cpuTally struct {
	cpu      time.Duration
	requests int
}

func (t *cpuTally) add(r row) { t.cpu, t.requests = t.cpu+r.suiteCPU, t.requests+r.requests }

func (t cpuTally) perRequest() time.Duration {
	return row{suiteCPU: t.cpu, requests: t.requests}.cpuPerRequest()
}

// waitingLoad is the runs waiting in a delay (-only matches it).
const waitingLoad = "automation runs waiting in a delay"

const (
	// waitingRuns is how many runs wait (issue 46: 10,000 within the
	// memory goal).
	waitingRuns = 10_000
	// memoryGoalMB is the memory goal of a process (DESIGN: ≤ 1 GB).
	memoryGoalMB = 1024
)

// waitingResult is the suite holding waitingRuns runs in a delay.
type waitingResult struct {
	created, waiting int
	createTime       time.Duration
	// armed is how long after the first create every run was waiting.
	armed                  time.Duration
	rssMB, peakMB, idleCPU float64
}

func (r waitingResult) String() string {
	met := "met"
	if r.peakMB > memoryGoalMB {
		met = "NOT met"
	}
	return fmt.Sprintf("%-42s created %d contacts in %.1f s, each matching a rule that waits a day: %d runs waiting %.1f s after the first; "+
		"then idle: suite CPU %.1f %% of a core, RSS %.0f MB (peak %.0f MB; goal ≤ %d MB a process: %s)",
		fmt.Sprintf("%d %s", waitingRuns, waitingLoad), r.created, r.createTime.Seconds(), r.waiting, r.armed.Seconds(),
		100*r.idleCPU, r.rssMB, r.peakMB, memoryGoalMB, met)
}

// runsWaiting makes a rule — a contact of the company Wait bench waits a
// day, then the admins are notified — creates waitingRuns such contacts,
// waits until every run waits in its delay (a durable timer in Temporal,
// the run's workflow evicted from the worker's cache or not), and
// measures the suite's memory and its idle CPU. The runs are left
// waiting: the suite stops after the bench. b is a workspace of its own
// (benchRun.workspace, its token fresh), so that each create starts its
// run and nothing else. Until issue 44 the runs were tickets' of the bench
// organization, which by then had an SLA policy and a webhook endpoint:
// each ticket also started an SLA workflow and woke the endpoint, and the
// row took 7 minutes of a bench of 33 (3m13s in a workspace of its own).
// A run waits alike whatever its object; a contact costs the API less.
func (b *bencher) runsWaiting(ctx context.Context, db *sql.DB) (waitingResult, error) {
	var res waitingResult
	rule := map[string]any{"name": "Wait a day", "object": "contact", "on": []string{"created"},
		"conditions": map[string]any{"all": []any{map[string]any{"field": "company", "operator": "is", "value": "Wait bench"}}},
		"steps":      []any{map[string]any{"action": "delay", "duration": "P1D"}, map[string]any{"action": "notify", "to": "admins"}}}
	var created struct{ ID string }
	if err := call(b.base+"/crm/organization/"+b.org+"/automations", b.token, rule, &created); err != nil {
		return res, fmt.Errorf("create the rule: %w", err)
	}
	began := time.Now()
	res.created, res.createTime = burst(waitingRuns, 16, func(n int) bool {
		status, err := sendJSON(http.DefaultClient, "POST", b.base+"/crm/contacts",
			fmt.Sprintf(`{"name":"Waiting %d","email":"wait-%d@example.com","company":"Wait bench"}`, n, n), "Authorization", "Bearer "+b.key)
		return err == nil && status == http.StatusCreated
	})
	var err error
	if res.waiting, err = pollCount(ctx, db, func(n int) bool { return n >= res.created },
		`SELECT count(*) FROM automation_runs WHERE automation_id = $1 AND status = 'waiting'`, created.ID); err != nil {
		return res, err
	}
	res.armed = time.Since(began)
	time.Sleep(5 * time.Second) // the last runs' workflow tasks
	cpuBefore, err := b.procs.cpu()
	if err != nil {
		return res, err
	}
	const idle = 10 * time.Second
	time.Sleep(idle)
	cpuAfter, err := b.procs.cpu()
	if err != nil {
		return res, err
	}
	res.idleCPU = (cpuAfter - cpuBefore).Seconds() / idle.Seconds()
	rss, err := b.procs.residentMiB()
	if err != nil {
		return res, err
	}
	peak, err := b.procs.peakMiB()
	res.rssMB, res.peakMB = float64(rss), float64(peak)
	return res, err
}
