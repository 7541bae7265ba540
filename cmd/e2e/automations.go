package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// delayedRule is an automation run waiting in its delay while the
// workers are down (it rides along faultSLAWorkersDown, whose workers
// stay down for longer than the delay: no minute of its own).
type delayedRule struct {
	ruleID, ticketID string
	// wakes is when the delay ends.
	wakes time.Time
}

// automationDelay is the delay of the rule armed across the workers'
// outage: it ends while they are down.
const automationDelay = 20 * time.Second

// armDelayedRule creates a rule — a ticket tagged e2e-delay waits
// automationDelay, then is tagged late — and opens such a ticket, and
// returns once the run waits in its delay (its timer held by Temporal).
func (t *e2e) armDelayedRule(ctx context.Context) (*delayedRule, error) {
	owner := []string{"Authorization", "Bearer " + t.userToken}
	var rule struct{ ID string }
	err := expect(ctx, t.http, http.StatusCreated, &rule, "POST", t.base(t.next())+"/crm/organization/"+t.orgID+"/automations", map[string]any{
		"name": "Late after a delay", "object": "ticket", "on": []string{"created"},
		"conditions": map[string]any{"all": []any{map[string]any{"field": "tags", "operator": "includes", "value": "e2e-delay"}}},
		"steps": []any{map[string]any{"action": "delay", "duration": fmt.Sprintf("PT%dS", int(automationDelay.Seconds()))},
			map[string]any{"action": "add_tags", "value": []string{"late"}}}}, owner...)
	if err != nil {
		return nil, err
	}
	var tk struct{ ID string }
	if err := expect(ctx, t.http, http.StatusCreated, &tk, "POST", t.base(t.next())+"/helpdesk/tickets",
		map[string]any{"subject": "Waits", "email": "dave@example.com", "tags": []string{"e2e-delay"}},
		"x-api-key", t.hdKey, "x-workspace-id", t.orgID); err != nil {
		return nil, err
	}
	d := &delayedRule{ruleID: rule.ID, ticketID: tk.ID}
	for start := time.Now(); ; {
		status, _, err := d.state(ctx, t)
		if err != nil {
			return nil, err
		}
		if status == "waiting" {
			d.wakes = time.Now().Add(automationDelay)
			return d, nil
		}
		if time.Since(start) > 15*time.Second {
			return nil, fmt.Errorf("the rule's run is %q 15 s after its ticket was opened, not waiting in its delay", status)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// state is the run's status and how many times its step after the delay
// ran (the ticket's "late" tags and the step's recorded outcomes).
func (d *delayedRule) state(ctx context.Context, t *e2e) (status string, lateSteps int, err error) {
	err = t.db.QueryRowContext(ctx, `SELECT r.status,
		(SELECT count(*) FROM jsonb_array_elements(r.steps::jsonb) s WHERE s->>'action' = 'add_tags')
		  + (SELECT count(*) FROM tickets tk, jsonb_array_elements_text(tk.tags::jsonb) tag WHERE tk.id = r.object_id::uuid AND tag = 'late')
		FROM automation_runs r WHERE r.automation_id = $1 AND r.object_id = $2`, d.ruleID, d.ticketID).Scan(&status, &lateSteps)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil // the outbox has not recorded it yet
	}
	return status, lateSteps, err
}

// checkDown fails if the step after the delay ran while no worker did.
func (d *delayedRule) checkDown(ctx context.Context, t *e2e) error {
	status, late, err := d.state(ctx, t)
	if err != nil {
		return err
	}
	if status != "waiting" || late != 0 {
		return fmt.Errorf("with no worker running, the delayed rule's run is %q and its step after the delay counted %d times", status, late)
	}
	return nil
}

// checkBack waits for the run to complete once the workers are back, and
// checks that the step after the delay ran once: one outcome, one tag.
func (d *delayedRule) checkBack(ctx context.Context, t *e2e, back time.Time) error {
	for {
		status, late, err := d.state(ctx, t)
		if err != nil {
			return err
		}
		if status == "completed" {
			t.figure("automation delay across both workers killed: the step after it ran %s after they were ready (%s after the delay ended); counted %d (outcome and tag)",
				time.Since(back).Round(100*time.Millisecond), time.Since(d.wakes).Round(100*time.Millisecond), late)
			if late != 2 {
				return fmt.Errorf("the step after the delay counted %d (its outcome and its tag), want 2: once each", late)
			}
			return nil
		}
		if time.Since(back) > time.Minute {
			return fmt.Errorf("the delayed rule's run is %q a minute after the workers came back", status)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
