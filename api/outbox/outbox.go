// Package outbox dispatches the work recorded in database transactions
// (models/record) to Temporal: after a request commits, its rows are
// dispatched at once, and a relay retries whatever could not be started —
// Temporal down, network cut, process killed — until it is. Workflow IDs
// are business keys started with a reject-duplicate policy, so a start is
// carried out exactly once however many times it is dispatched; signals go
// through the same rows, lease and back-off, so they survive a Temporal
// outage too.
//
// Starter.In adapts the recording to a request (the relay is woken when it
// commits); the relay and its pacing under load are in this package.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// Starter records and dispatches workflow starts.
type Starter struct {
	db     *gorm.DB
	client client.Client
	log    *slog.Logger
	wake   chan struct{}

	// PollInterval is how often the relay looks for due starts.
	PollInterval time.Duration
	// Lease is how long a dispatcher owns a start before another may retry it.
	Lease time.Duration
	// DispatchTimeout bounds one start call to Temporal.
	DispatchTimeout time.Duration
	// Concurrency is how many workflows one relay pass calls Temporal for
	// at once: 16 from New (one at a time, a relay started about 19
	// workflows a second against a remote server, fewer than a busy web
	// form sends). `suite dev` sets 2 (cmd/suite, SUITE_OUTBOX_CONCURRENCY).
	Concurrency int

	// busy and yield pace the relay while the process has more pressing
	// work (YieldTo); floods tells which organizations' rows it paces;
	// heldBack says that the last pass left rows for the next.
	busy     func() bool
	yield    *rate.Limiter
	floods   *floods
	heldBack atomic.Bool

	results *prometheus.CounterVec
	yields  prometheus.Counter
}

// New creates a Starter. reg may be nil.
func New(db *gorm.DB, c client.Client, log *slog.Logger, reg prometheus.Registerer) *Starter {
	s := &Starter{
		db: db, client: c, log: log,
		wake:            make(chan struct{}, 1),
		PollInterval:    time.Second,
		Lease:           30 * time.Second,
		DispatchTimeout: 5 * time.Second,
		Concurrency:     16,
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "suite_outbox_dispatch_total", Help: "Workflow start dispatch attempts by result.",
		}, []string{"result"}),
		yields: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "suite_outbox_yields_total", Help: "Outbox dispatches held back while the process was busy (YieldTo).",
		}),
	}
	if reg != nil {
		reg.MustRegister(s.results, s.yields)
	}
	return s
}

// Wake asks the relay to look for due starts now.
func (s *Starter) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run is the relay: it dispatches due starts whenever woken and at every
// poll interval, until ctx ends.
func (s *Starter) Run(ctx context.Context) {
	ticker := time.NewTicker(s.PollInterval)
	defer ticker.Stop()
	for {
		n, err := s.DispatchDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("outbox relay pass failed", "error", err)
		}
		if err == nil && n >= dispatchBatch {
			continue // a full pass: more are likely due, go on at once
		}
		var yieldTurn <-chan time.Time
		if s.heldBack.Load() {
			// Held-back rows get the yield rate's next second.
			yieldTurn = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-s.wake:
		case <-yieldTurn:
		}
	}
}

// dispatchBatch is how many due rows one relay pass reads.
const dispatchBatch = 100

// passSlice is how long a pass goes on dispatching once rows have been
// recorded after it began (Wake). A pass of 100 took 0.7 s under `suite
// dev`, and another organization's intake waited for its end behind a
// burst's backlog; a pass that reads the due rows costs 4 ms at a backlog
// of 20,000 (workflow_starts_turns).
const passSlice = 100 * time.Millisecond

// DispatchDue starts every pending start that is due and reports how many
// were started (or delivered, for signals). Several relays may run at once
// (one per API replica): each start is claimed with a lease first, so only
// one of them calls Temporal.
//
// Rows of different workflows are dispatched concurrently (Concurrency at
// a time); the rows of one workflow — a start and the signals that follow
// it — go in the order they were recorded, and a row that is not delivered
// holds back the ones after it until a later pass.
func (s *Starter) DispatchDue(ctx context.Context) (int, error) {
	var due []models.WorkflowStart
	err := models.DueStarts(s.db.WithContext(ctx), models.Now(), dispatchBatch).Scan(&due).Error
	if err != nil {
		return 0, err
	}
	var order []string
	byWorkflow := map[string][]*models.WorkflowStart{}
	for i := range due {
		id := due[i].WorkflowID
		if _, seen := byWorkflow[id]; !seen {
			order = append(order, id)
		}
		byWorkflow[id] = append(byWorkflow[id], &due[i])
	}

	// One goroutine per workflow, Concurrency at a time; a failing
	// workflow does not stop the others (no shared cancellation), and the
	// first error is the pass's.
	var started atomic.Int64
	var g errgroup.Group
	g.SetLimit(max(1, s.Concurrency))
	s.heldBack.Store(false)
	began := time.Now()
	for _, id := range order {
		if ctx.Err() != nil {
			break
		}
		if len(s.wake) > 0 && time.Since(began) > passSlice {
			// Rows were recorded since the pass read its own: end it, so
			// that the next takes them in their turn rather than after the
			// rest of this one (the rows left here stay pending).
			break
		}
		rows := byWorkflow[id]
		g.Go(func() error {
			for len(rows) > 0 {
				group := rows[:sameSignal(rows)]
				rows = rows[len(group):]
				if !s.mayDispatch(group[0]) {
					s.heldBack.Store(true)
					return nil // the rows stay pending for a later pass
				}
				status, err := s.dispatch(ctx, group)
				if err != nil {
					return err
				}
				if status == models.StartStarted || status == models.SignalDelivered {
					started.Add(int64(len(group)))
				}
				if status == "" {
					return nil // still pending (or another relay has it): the rest wait
				}
			}
			return nil
		})
	}
	err = g.Wait()
	return int(started.Load()), err
}

// sameSignal is how many of a workflow's due rows, from the first, are
// one plain signal recorded again and again — a webhook endpoint's wake-up,
// which every request that records a delivery for it sends: the same name
// and input to the same running workflow. They are delivered as one
// signal: a receiver handles a repeated signal as a no-op (signals are
// at-least-once, deliverSignal), and each of them committed before the
// pass read it, so the one delivery comes after every change they stand
// for, in their place in the workflow's order.
func sameSignal(rows []*models.WorkflowStart) int {
	first := rows[0]
	if first.SignalName == "" || first.WorkflowType != "" {
		return 1
	}
	n := 1
	for n < len(rows) && rows[n].WorkflowType == "" && rows[n].SignalName == first.SignalName && rows[n].SignalInput == first.SignalInput {
		n++
	}
	return n
}

// dispatch claims a group of rows — one row, or one plain signal recorded
// several times (sameSignal) — and calls Temporal once; it reports their
// final status (started, delivered, skipped, rejected), or "" when they are
// still pending — deferred with back-off, or claimed by another relay.
func (s *Starter) dispatch(ctx context.Context, group []*models.WorkflowStart) (string, error) {
	row := group[0]
	ids := make([]string, len(group))
	for i, r := range group {
		ids[i] = r.ID
	}
	now := models.Now()
	claim := s.db.WithContext(ctx).Model(&models.WorkflowStart{})
	if len(group) == 1 {
		claim = claim.Where("id = ? AND status = ? AND attempts = ?", row.ID, models.StartPending, row.Attempts)
	} else {
		// A row another relay claimed since the pass read it has its lease
		// ahead of now; this claim takes the others. Delivering the signal
		// once more for a row the other relay delivers too is harmless.
		claim = claim.Where("id IN ? AND status = ? AND next_attempt_at <= ?", ids, models.StartPending, now)
	}
	claim = claim.Updates(map[string]any{"next_attempt_at": now.Add(s.Lease), "attempts": gorm.Expr("attempts + 1"), "updated_at": now})
	if claim.Error != nil || claim.RowsAffected == 0 {
		return "", claim.Error // another relay owns it
	}
	row.Attempts++

	callCtx, cancel := context.WithTimeout(telemetry.WithRequestID(telemetry.Extract(ctx, row.TraceContext), row.RequestID), s.DispatchTimeout)
	defer cancel()
	var update map[string]any
	if row.SignalName != "" {
		update = s.deliverSignal(callCtx, row)
	} else {
		update = s.start(callCtx, row)
	}
	update["updated_at"] = models.Now()
	// Write the outcome even when ctx was cancelled mid-call; a group's
	// rows that another relay has finished meanwhile keep their outcome.
	outcome := s.db.WithContext(context.WithoutCancel(ctx)).Model(&models.WorkflowStart{})
	if len(group) == 1 {
		outcome = outcome.Where("id = ?", row.ID)
	} else {
		outcome = outcome.Where("id IN ? AND status = ?", ids, models.StartPending)
	}
	res := outcome.Updates(update)
	if res.Error != nil {
		return "", res.Error
	}
	status, _ := update["status"].(string)
	if len(group) > 1 && status == models.SignalDelivered {
		// The rows delivered by this one signal besides the first.
		s.results.WithLabelValues("coalesced").Add(float64(len(group) - 1))
	}
	return status, nil
}

// start calls Temporal for a start row and returns the row's new state.
func (s *Starter) start(ctx context.Context, row *models.WorkflowStart) map[string]any {
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       row.WorkflowID,
		TaskQueue:                row.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    names.SearchAttributes(row.OrgID, row.Kind),
		Priority:                 names.Priority(row.OrgID),
		// Where a worker on the same client has a free slot (`suite dev`
		// runs one beside the relay), Temporal hands it the first workflow
		// task in the start's answer instead of queueing it through
		// matching: fewer server writes per workflow. Elsewhere (`suite
		// api` runs no worker) the SDK does not ask, and nothing changes.
		EnableEagerStart: true,
	}, row.WorkflowType, json.RawMessage(row.Input))

	var already *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		s.results.WithLabelValues("started").Inc()
		return map[string]any{"status": models.StartStarted, "run_id": run.GetRunID(), "last_error": "", "started_at": models.Now()}
	case errors.As(err, &already):
		// An earlier dispatch reached Temporal but its bookkeeping did not
		// reach us (crash, timeout): the workflow runs once; record it.
		s.results.WithLabelValues("already_started").Inc()
		return map[string]any{"status": models.StartStarted, "run_id": already.RunId, "last_error": "", "started_at": models.Now()}
	}
	return s.failed(row, err)
}

// deliverSignal calls Temporal for a signal row and returns the row's new
// state. Signals are at-least-once: a delivery whose bookkeeping is lost is
// delivered again, so receivers handle a repeated signal as a no-op.
func (s *Starter) deliverSignal(ctx context.Context, row *models.WorkflowStart) map[string]any {
	var err error
	runID := ""
	if row.WorkflowType != "" {
		var run client.WorkflowRun
		run, err = s.client.SignalWithStartWorkflow(ctx, row.WorkflowID, row.SignalName, json.RawMessage(row.SignalInput),
			client.StartWorkflowOptions{
				ID:                    row.WorkflowID,
				TaskQueue:             row.TaskQueue,
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
				TypedSearchAttributes: names.SearchAttributes(row.OrgID, row.Kind),
				Priority:              names.Priority(row.OrgID),
			}, row.WorkflowType, json.RawMessage(row.Input))
		if err == nil {
			runID = run.GetRunID()
		}
	} else {
		err = s.client.SignalWorkflow(ctx, row.WorkflowID, "", row.SignalName, json.RawMessage(row.SignalInput))
	}
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		s.results.WithLabelValues("delivered").Inc()
		return map[string]any{"status": models.SignalDelivered, "run_id": runID, "last_error": "", "started_at": models.Now()}
	case errors.As(err, &already), errors.As(err, &notFound):
		// The workflow has finished (signal-with-start may not start a
		// closed workflow ID again) or, for a plain signal, is not running:
		// nobody is waiting for this signal.
		s.results.WithLabelValues("skipped").Inc()
		return map[string]any{"status": models.SignalSkipped, "last_error": truncate(err.Error(), 1000)}
	}
	return s.failed(row, err)
}

// failed is the new state of a row whose dispatch failed: rejected for
// good when Temporal calls the request invalid, else retried later.
func (s *Starter) failed(row *models.WorkflowStart, err error) map[string]any {
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && !unregisteredSearchAttribute(invalid) {
		s.results.WithLabelValues("rejected").Inc()
		s.log.Error("temporal rejected outbox row", "workflow_id", row.WorkflowID, "signal", row.SignalName, "error", err)
		return map[string]any{"status": models.StartRejected, "last_error": truncate(err.Error(), 1000)}
	}
	s.results.WithLabelValues("retry").Inc()
	log := s.log.Warn
	if invalid != nil {
		// Waits for an operator (or for the server's caches) rather than
		// for the network: say so louder.
		log = s.log.Error
	}
	log("outbox dispatch deferred; will retry", "workflow_id", row.WorkflowID, "signal", row.SignalName, "attempt", row.Attempts, "error", err)
	return map[string]any{"next_attempt_at": models.Now().Add(backoff(row.Attempts)), "last_error": truncate(err.Error(), 1000)}
}

// unregisteredSearchAttribute tells whether Temporal refused a start
// because a search attribute it carries (OrgId, Kind) is not registered on
// the namespace: not yet in the server's caches (registered moments ago by
// worker.EnsureSearchAttributes, which they learn at their next refresh),
// or not at all (an operator must register it: deploy/README, "Search
// attributes"). The same start is valid once the attribute is known, so it
// is retried rather than rejected for good. Temporal says so only in the
// message: "Namespace x has no mapping defined for search attribute OrgId"
// (SQL visibility), "search attribute OrgId is not defined" (Elasticsearch).
func unregisteredSearchAttribute(err *serviceerror.InvalidArgument) bool {
	msg := err.Message
	return strings.Contains(msg, "search attribute") &&
		(strings.Contains(msg, "no mapping defined") || strings.Contains(msg, "is not defined"))
}

// backoff grows exponentially from 1 s to at most 1 minute, with jitter so
// that many pending starts do not hammer a recovering Temporal together.
func backoff(attempt int) time.Duration {
	d := time.Second << min(attempt-1, 6)
	d = min(d, time.Minute)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Pending counts starts not yet dispatched (for /readyz detail and tests).
func (s *Starter) Pending(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&models.WorkflowStart{}).Scopes(models.PendingStarts).Count(&n).Error
	return n, err
}
