package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// faultSLAWorkersDown: every worker killed -9 before an urgent ticket's
// first response falls due, and started again well after it. Nothing can
// record the breach meanwhile; once the workers are back, the ticket's
// TicketSLA timer (kept by Temporal) fires, and the breach is recorded
// exactly once, with exactly one notification. An automation rule's run
// waits in a delay that ends during the same outage: its next step runs
// once, after the workers are back (delayedRule). So do a 100,000-row
// import (runningImport) and the merge of a customer with 5,000 tickets
// (runningMerge), each cut mid-way: every row is written, or moved, once.
func (t *e2e) faultSLAWorkersDown(ctx context.Context) error {
	hd := []string{"x-api-key", t.hdKey, "x-workspace-id", t.orgID}
	policy := map[string]any{"businessHours": "24x7", "targets": map[string]any{"urgent": map[string]any{"firstResponse": 1}}}
	if err := expect(ctx, t.http, http.StatusOK, nil, "PUT", t.base(t.next())+"/helpdesk/sla-policy", policy, hd...); err != nil {
		return err
	}
	var tk struct {
		ID  string
		SLA struct{ FirstResponseDueAt time.Time }
	}
	if err := expect(ctx, t.http, http.StatusCreated, &tk, "POST", t.base(t.next())+"/helpdesk/tickets",
		map[string]string{"subject": "Checkout is down", "email": "carol@example.com", "priority": "urgent"}, hd...); err != nil {
		return err
	}
	due := tk.SLA.FirstResponseDueAt
	// The workflow holds the timer once the outbox has started it.
	for {
		var pending int
		if err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM workflow_starts WHERE workflow_id = $1 AND status = 'pending'`,
			"ticket-sla/"+tk.ID).Scan(&pending); err != nil {
			return err
		}
		if pending == 0 {
			break
		}
		if time.Until(due) < 20*time.Second {
			return fmt.Errorf("the ticket's SLA workflow was not started within %s", time.Since(due.Add(-time.Minute)).Round(time.Second))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	delayed, err := t.armDelayedRule(ctx)
	if err != nil {
		return err
	}
	merging, err := t.startMerge(ctx)
	if err != nil {
		return err
	}
	defer merging.release()
	imported, err := t.startImport(ctx)
	if err != nil {
		return err
	}
	for _, w := range t.workers {
		w.kill()
	}
	killed := time.Now()
	if err := imported.checkCut(ctx, t); err != nil {
		return err
	}
	if err := merging.checkCut(ctx, t); err != nil {
		return err
	}
	t.step("kill -9 both workers %s before the first response of ticket %s falls due, and %s before an automation's delay ends",
		time.Until(due).Round(time.Second), tk.ID, time.Until(delayed.wakes).Round(time.Second))
	if err := sleep(ctx, time.Until(due)+10*time.Second); err != nil {
		return err
	}
	breaches, told, duplicates, err := t.slaRecords(ctx, tk.ID)
	if err != nil {
		return err
	}
	if breaches != 0 || told != 0 {
		return fmt.Errorf("with no worker running, %d breaches were recorded and %d members told", breaches, told)
	}
	if err := delayed.checkDown(ctx, t); err != nil {
		return err
	}
	for _, w := range t.workers {
		if err := w.start(); err != nil {
			return err
		}
	}
	for _, w := range t.workers {
		if _, err := w.awaitReady(ctx, t.http, time.Minute); err != nil {
			return err
		}
	}
	back := time.Now()
	t.step("workers started again %s after the due time", back.Sub(due).Round(time.Second))
	for breaches == 0 {
		if time.Since(back) > time.Minute {
			return fmt.Errorf("no breach recorded a minute after the workers came back")
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
		if breaches, told, duplicates, err = t.slaRecords(ctx, tk.ID); err != nil {
			return err
		}
	}
	recorded := time.Since(back)
	t.figure("SLA across both workers killed: breach recorded %s after they were ready (%s after the due time); breaches %d, members told %d, duplicate notifications %d",
		recorded.Round(100*time.Millisecond), time.Since(due).Round(100*time.Millisecond), breaches, told, duplicates)
	if breaches != 1 || told == 0 || duplicates != 0 {
		return fmt.Errorf("%d breaches, %d members told, %d duplicate notifications; want 1 breach, each admin told once", breaches, told, duplicates)
	}
	if err := delayed.checkBack(ctx, t, back); err != nil {
		return err
	}
	if err := merging.check(ctx, t, back); err != nil {
		return err
	}
	return imported.check(ctx, t, killed)
}

// slaRecords counts the ticket's recorded breaches and its sla_breached
// notifications beyond one per member told (the workspace's admins).
func (t *e2e) slaRecords(ctx context.Context, ticketID string) (breaches, told, duplicates int, err error) {
	err = t.db.QueryRowContext(ctx, `SELECT CASE jsonb_typeof(sla_state::jsonb->'breaches') WHEN 'array'
		THEN jsonb_array_length(sla_state::jsonb->'breaches') ELSE 0 END FROM tickets WHERE id = $1`, ticketID).Scan(&breaches)
	if err != nil {
		return 0, 0, 0, err
	}
	err = t.db.QueryRowContext(ctx, `SELECT count(DISTINCT member_id), count(*) - count(DISTINCT member_id)
		FROM notifications WHERE resource_id = $1 AND type = 'sla_breached'`, ticketID).Scan(&told, &duplicates)
	return breaches, told, duplicates, err
}
