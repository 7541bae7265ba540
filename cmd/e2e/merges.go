package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"
)

// mergeTickets is how many tickets the duplicate customer of the merge
// under way when both workers are killed has (issue 47), each with a
// comment by the customer: it rides along faultSLAWorkersDown.
const mergeTickets = 5_000

// runningMerge is a PersonMerge of a customer with mergeTickets tickets
// into another, held mid-way: the harness holds a lock on the duplicate's
// last ticket, so the merge's batches stop at it until the lock goes.
type runningMerge struct {
	from, into string
	// hold is the transaction that holds the lock (nil once released).
	hold *sql.Tx
}

// startMerge makes the two customers (the duplicate's tickets written by
// SQL: thousands of creates through the API would only cost the stage
// time), locks the duplicate's last ticket, asks for the merge, and
// returns once its batches have moved some of the tickets and are waiting
// at the lock.
func (t *e2e) startMerge(ctx context.Context) (*runningMerge, error) {
	hd := []string{"x-api-key", t.hdKey, "x-workspace-id", t.orgID}
	stamp := time.Now().UnixNano()
	var into, from struct{ ID string }
	if err := expect(ctx, t.http, http.StatusCreated, &into, "POST", t.base(t.next())+"/helpdesk/customers",
		map[string]string{"name": "Dora", "email": fmt.Sprintf("dora-%d@example.com", stamp)}, hd...); err != nil {
		return nil, err
	}
	if err := expect(ctx, t.http, http.StatusCreated, &from, "POST", t.base(t.next())+"/helpdesk/customers",
		map[string]string{"name": "Dora D.", "email": fmt.Sprintf("dora.d-%d@example.com", stamp)}, hd...); err != nil {
		return nil, err
	}
	run := &runningMerge{from: from.ID, into: into.ID}
	// Numbers far above the workspace's counter, which the run's own
	// tickets never reach.
	if _, err := t.db.ExecContext(ctx, `INSERT INTO tickets (id, org_id, number, subject, status, priority, channel, customer_id, requester_email, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 10000000 + n, 'Ticket ' || n, 'open', 'normal', 'email', $2, 'dora.d@example.com',
			now() - make_interval(secs => $3 - n), now()
		FROM generate_series(1, $3) AS n`, t.orgID, from.ID, mergeTickets); err != nil {
		return nil, fmt.Errorf("write the duplicate's tickets: %w", err)
	}
	if _, err := t.db.ExecContext(ctx, `INSERT INTO ticket_comments (id, org_id, ticket_id, author_type, author_customer_id, body, public, created_at)
		SELECT gen_random_uuid(), org_id, id, 'customer', customer_id, 'Any news?', true, created_at FROM tickets WHERE customer_id = $1`, from.ID); err != nil {
		return nil, fmt.Errorf("write the duplicate's comments: %w", err)
	}
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	run.hold = tx
	if _, err := tx.ExecContext(ctx, `SELECT id FROM tickets WHERE customer_id = $1 ORDER BY number DESC LIMIT 1 FOR UPDATE`, from.ID); err != nil {
		run.release()
		return nil, err
	}
	if err := expect(ctx, t.http, http.StatusAccepted, nil, "POST", t.base(t.next())+"/helpdesk/customers/"+into.ID+"/merge",
		map[string]string{"from": from.ID}, hd...); err != nil {
		run.release()
		return nil, err
	}
	began := time.Now()
	for {
		moved, err := run.moved(ctx, t)
		if err != nil {
			run.release()
			return nil, err
		}
		if moved > 0 {
			return run, nil
		}
		if time.Since(began) > 30*time.Second {
			run.release()
			return nil, fmt.Errorf("the merge moved no ticket in 30 s")
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			run.release()
			return nil, err
		}
	}
}

// moved is how many of the duplicate's tickets point at the survivor.
func (run *runningMerge) moved(ctx context.Context, t *e2e) (int, error) {
	var n int
	err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM tickets WHERE customer_id = $1`, run.into).Scan(&n)
	return n, err
}

// release lets go of the lock that holds the merge.
func (run *runningMerge) release() {
	if run.hold != nil {
		_ = run.hold.Rollback()
		run.hold = nil
	}
}

// checkCut, once the workers are killed, checks that the merge was cut
// mid-way (some tickets moved, not all, the duplicate still there) and
// lets go of the lock.
func (run *runningMerge) checkCut(ctx context.Context, t *e2e) error {
	moved, err := run.moved(ctx, t)
	run.release()
	if err != nil {
		return err
	}
	t.step("the workers were killed with the merge of a customer with %d tickets under way, %d of them moved", mergeTickets, moved)
	if moved == 0 || moved >= mergeTickets {
		return fmt.Errorf("%d of %d tickets had moved when the workers were killed: the kill did not cut the merge", moved, mergeTickets)
	}
	return nil
}

// check waits for the merge to be done and checks that every ticket and
// comment points at the survivor exactly once, none at the duplicate,
// which is gone (a GET of it is a 301 to the survivor).
func (run *runningMerge) check(ctx context.Context, t *e2e, back time.Time) error {
	for {
		var status string
		if err := t.db.QueryRowContext(ctx, `SELECT status FROM person_merges WHERE from_id = $1`, run.from).Scan(&status); err != nil {
			return err
		}
		if status == "done" {
			break
		}
		if time.Since(back) > 2*time.Minute {
			return fmt.Errorf("the merge is %s 2 minutes after the workers came back", status)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	var tickets, distinct, comments, left, dups int
	err := t.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM tickets WHERE customer_id = $1),
		(SELECT count(DISTINCT number) FROM tickets WHERE customer_id = $1),
		(SELECT count(*) FROM ticket_comments WHERE author_customer_id = $1),
		(SELECT count(*) FROM tickets WHERE customer_id = $2) + (SELECT count(*) FROM ticket_comments WHERE author_customer_id = $2),
		(SELECT count(*) FROM customers WHERE id = $2)`, run.into, run.from).Scan(&tickets, &distinct, &comments, &left, &dups)
	if err != nil {
		return err
	}
	t.figure("merge across both workers killed: done %s after they were ready; the survivor has %d tickets (%d distinct) and %d comments, the duplicate %d rows and exists %d times",
		time.Since(back).Round(100*time.Millisecond), tickets, distinct, comments, left, dups)
	if tickets != mergeTickets || distinct != mergeTickets || comments != mergeTickets || left != 0 || dups != 0 {
		return fmt.Errorf("after the merge the survivor has %d tickets (%d distinct) and %d comments, want %d each; %d rows still point at the duplicate, which exists %d times",
			tickets, distinct, comments, mergeTickets, left, dups)
	}
	noRedirect := *t.http
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return expect(ctx, &noRedirect, http.StatusMovedPermanently, nil, "GET", t.base(t.next())+"/helpdesk/customers/"+run.from, nil,
		"x-api-key", t.hdKey, "x-workspace-id", t.orgID)
}
