package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
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
