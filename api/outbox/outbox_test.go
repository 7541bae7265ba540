package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/worker"
	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/worker/ports"
	"github.com/business-suite/suite/workflows/names"
)

// runs counts executions per workflow ID across the test.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) Record(ctx context.Context, workflowID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[workflowID]++
	return nil
}

func (r *runs) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id]
}

type probeInput struct{ Note string }

func probeWorkflow(ctx workflow.Context, in probeInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var r *runs
	if err := workflow.ExecuteActivity(ctx, r.Record, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil); err != nil {
		return "", err
	}
	return in.Note, nil
}

// freeAddr is an address for a server the test starts later (see
// ports.Addr for why not port 0).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := ports.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestStartsRecordedWhileTemporalIsDownRunExactlyOnce is the outbox's
// promise: callers succeed while Temporal is unreachable, and once it is
// back every recorded start happens, exactly once.
func TestStartsRecordedWhileTemporalIsDownRunExactlyOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		addr := freeAddr(t)
		// A lazy client pointing at a Temporal that is not running yet.
		tc, err := client.NewLazyClient(client.Options{HostPort: addr, Namespace: "default", Logger: nil})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		starter := outbox.New(db, tc, quiet, nil)
		starter.DispatchTimeout = 500 * time.Millisecond

		var ids []string
		for i := range 5 {
			id := fmt.Sprintf("probe/%s/%d", db.Dialector.Name(), i)
			ids = append(ids, id)
			err := starter.Transact(ctx, func(tx *record.Tx) error {
				return tx.Start(record.Start{WorkflowID: id, Workflow: "probeWorkflow", Input: probeInput{Note: id}, OrgID: "org-1", Kind: "probe"})
			})
			if err != nil {
				t.Fatalf("record start %d: %v", i, err)
			}
		}
		// Recording the same workflow ID twice is refused, and rolls back.
		err = starter.Transact(ctx, func(tx *record.Tx) error {
			return tx.Start(record.Start{WorkflowID: ids[0], Workflow: "probeWorkflow", Input: probeInput{}})
		})
		if !errors.Is(err, record.ErrDuplicate) {
			t.Fatalf("duplicate start: %v", err)
		}
		// A start in a transaction that rolls back never happens.
		_ = starter.Transact(ctx, func(tx *record.Tx) error {
			if err := tx.Start(record.Start{WorkflowID: "probe/rolled-back", Workflow: "probeWorkflow", Input: probeInput{}}); err != nil {
				return err
			}
			return errors.New("domain write failed")
		})

		started, err := starter.DispatchDue(ctx)
		if err != nil || started != 0 {
			t.Fatalf("dispatch with Temporal down: started %d, err %v", started, err)
		}
		var failed models.WorkflowStart
		if err := db.Where("workflow_id = ?", ids[0]).Take(&failed).Error; err != nil {
			t.Fatal(err)
		}
		if failed.Status != models.StartPending || failed.Attempts != 1 || failed.LastError == "" || !failed.NextAttemptAt.After(models.Now()) {
			t.Fatalf("after a failed dispatch: %+v", failed)
		}

		// Temporal comes up; a worker runs the probe workflow. The worker
		// gets its own connection; the starter keeps the lazy client that
		// has been failing, which must recover by itself.
		counter := &runs{n: map[string]int{}}
		startTemporal(t, addr, func(w sdkworker.Worker) {
			w.RegisterWorkflow(probeWorkflow)
			w.RegisterActivity(counter)
		})

		// Two relays race for the same due starts (two API replicas).
		db.Model(&models.WorkflowStart{}).Where("status = ?", models.StartPending).Update("next_attempt_at", models.Now())
		other := outbox.New(db, tc, quiet, nil)
		var wg sync.WaitGroup
		for _, s := range []*outbox.Starter{starter, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 150 {
					if n, _ := s.Pending(ctx); n == 0 {
						return
					}
					_, _ = s.DispatchDue(ctx)
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if n, _ := starter.Pending(ctx); n != 0 {
			t.Fatalf("%d starts still pending after Temporal came back", n)
		}
		for _, id := range ids {
			var note string
			if err := tc.GetWorkflow(ctx, id, "").Get(ctx, &note); err != nil || note != id {
				t.Fatalf("workflow %s: %q %v", id, note, err)
			}
			if c := counter.count(id); c != 1 {
				t.Fatalf("workflow %s ran %d times", id, c)
			}
			// Its organization is its fairness key (names.Priority).
			desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
			if err != nil || desc.GetWorkflowExecutionInfo().GetPriority().GetFairnessKey() != "org-1" {
				t.Fatalf("workflow %s: priority %v, %v; want the fairness key org-1", id, desc.GetWorkflowExecutionInfo().GetPriority(), err)
			}
		}

		// Lost bookkeeping (start reached Temporal, the "started" mark did
		// not): re-dispatching finds the execution and records it — no rerun.
		db.Model(&models.WorkflowStart{}).Where("workflow_id = ?", ids[1]).
			Updates(map[string]any{"status": models.StartPending, "next_attempt_at": models.Now(), "run_id": ""})
		if _, err := starter.DispatchDue(ctx); err != nil {
			t.Fatal(err)
		}
		var row models.WorkflowStart
		db.Where("workflow_id = ?", ids[1]).Take(&row)
		if row.Status != models.StartStarted || row.RunID == "" || counter.count(ids[1]) != 1 {
			t.Fatalf("re-dispatch: %+v, runs %d", row, counter.count(ids[1]))
		}
		var rolledBack int64
		db.Model(&models.WorkflowStart{}).Where("workflow_id = ?", "probe/rolled-back").Count(&rolledBack)
		if rolledBack != 0 {
			t.Fatal("a start recorded in a rolled-back transaction survived")
		}
	})
}

// signalProbeInput says how many signals the probe waits for.
type signalProbeInput struct{ Want int }

const probeSignal = "probe-signal"

// signalProbeWorkflow collects Want signals, records its run and returns them.
func signalProbeWorkflow(ctx workflow.Context, in signalProbeInput) ([]string, error) {
	var got []string
	ch := workflow.GetSignalChannel(ctx, probeSignal)
	for len(got) < in.Want {
		var s string
		ch.Receive(ctx, &s)
		got = append(got, s)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var r *runs
	if err := workflow.ExecuteActivity(ctx, r.Record, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil); err != nil {
		return nil, err
	}
	return got, nil
}

// TestSignalsRecordedWhileTemporalIsDownAreDeliveredAfter: a signal is
// recorded like a start and delivered by the same relay once Temporal is
// back. Signal-with-start reaches a workflow whose own start is still in the
// outbox (whichever row goes first, it runs once and gets every signal); a
// signal to a workflow that is not running, or that has finished, is
// skipped and never starts it again.
func TestSignalsRecordedWhileTemporalIsDownAreDeliveredAfter(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		addr := freeAddr(t)
		tc, err := client.NewLazyClient(client.Options{HostPort: addr, Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		starter := outbox.New(db, tc, quiet, nil)
		starter.DispatchTimeout = 500 * time.Millisecond

		prefix := "signal-probe/" + db.Dialector.Name()
		both, byStart, nobody := prefix+"/both", prefix+"/by-signal", prefix+"/nobody"
		withStart := func(want int) *record.Start {
			return &record.Start{Workflow: "signalProbeWorkflow", Input: signalProbeInput{Want: want}, OrgID: "org-1", Kind: "probe"}
		}
		err = starter.Transact(ctx, func(tx *record.Tx) error {
			// "both" has its start recorded and two signals-with-start.
			if err := tx.Start(record.Start{WorkflowID: both, Workflow: "signalProbeWorkflow", Input: signalProbeInput{Want: 2}, OrgID: "org-1", Kind: "probe"}); err != nil {
				return err
			}
			for _, s := range []string{"one", "two"} {
				if err := tx.Signal(record.Signal{WorkflowID: both, Name: probeSignal, Input: s, Start: withStart(2)}); err != nil {
					return err
				}
			}
			// "by-signal" is started by its signal.
			if err := tx.Signal(record.Signal{WorkflowID: byStart, Name: probeSignal, Input: "hello", Start: withStart(1)}); err != nil {
				return err
			}
			// A plain signal to a workflow that never runs.
			return tx.Signal(record.Signal{WorkflowID: nobody, Name: probeSignal, Input: "lost"})
		})
		if err != nil {
			t.Fatal(err)
		}
		// A signal in a rolled-back transaction is never delivered.
		_ = starter.Transact(ctx, func(tx *record.Tx) error {
			if err := tx.Signal(record.Signal{WorkflowID: both, Name: probeSignal, Input: "rolled back", Start: withStart(2)}); err != nil {
				return err
			}
			return errors.New("domain write failed")
		})

		if n, err := starter.DispatchDue(ctx); err != nil || n != 0 {
			t.Fatalf("dispatch with Temporal down: %d, %v", n, err)
		}
		var signals []models.WorkflowStart
		db.Where("signal_name = ?", probeSignal).Find(&signals)
		if len(signals) != 4 {
			t.Fatalf("%d signal rows recorded, want 4", len(signals))
		}
		for _, r := range signals {
			// The signals of "both" wait behind its start, which failed:
			// they are not tried before it goes through.
			tried := r.WorkflowID != both
			if r.Status != models.StartPending || (r.Attempts == 1) != tried || (r.LastError != "") != tried {
				t.Fatalf("signal row after a failed dispatch: %+v", r)
			}
		}

		counter := &runs{n: map[string]int{}}
		wc := startTemporal(t, addr, func(w sdkworker.Worker) {
			w.RegisterWorkflow(signalProbeWorkflow)
			w.RegisterActivity(counter)
		})
		db.Model(&models.WorkflowStart{}).Where("status = ?", models.StartPending).Update("next_attempt_at", models.Now())
		for range 150 {
			if n, _ := starter.Pending(ctx); n == 0 {
				break
			}
			_, _ = starter.DispatchDue(ctx)
			time.Sleep(100 * time.Millisecond)
		}
		if n, _ := starter.Pending(ctx); n != 0 {
			t.Fatalf("%d rows still pending after Temporal came back", n)
		}
		var got []string
		// Bounded: a lost signal would leave the probe waiting for ever.
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := wc.GetWorkflow(waitCtx, both, "").Get(waitCtx, &got); err != nil || len(got) != 2 {
			t.Fatalf("workflow %s got %v, %v", both, got, err)
		}
		if err := wc.GetWorkflow(waitCtx, byStart, "").Get(waitCtx, &got); err != nil || len(got) != 1 || got[0] != "hello" {
			t.Fatalf("workflow %s got %v, %v", byStart, got, err)
		}
		if counter.count(both) != 1 || counter.count(byStart) != 1 || counter.count(nobody) != 0 {
			t.Fatalf("runs: %v", counter.n)
		}
		var start, lost models.WorkflowStart
		db.Where("workflow_id = ? AND signal_name = ''", both).Take(&start)
		db.Where("workflow_id = ?", nobody).Take(&lost)
		if start.Status != models.StartStarted || lost.Status != models.SignalSkipped {
			t.Fatalf("start row %s, plain signal to no workflow %s", start.Status, lost.Status)
		}

		// The workflow has finished: a late signal-with-start is skipped and
		// does not run it a second time.
		err = starter.Transact(ctx, func(tx *record.Tx) error {
			return tx.Signal(record.Signal{WorkflowID: byStart, Name: probeSignal, Input: "late", Start: withStart(1)})
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := starter.DispatchDue(ctx); err != nil {
			t.Fatal(err)
		}
		var late models.WorkflowStart
		db.Where("workflow_id = ? AND signal_input = ?", byStart, `"late"`).Take(&late)
		if late.Status != models.SignalSkipped || counter.count(byStart) != 1 {
			t.Fatalf("late signal: %+v, runs %d", late, counter.count(byStart))
		}
	})
}

// A start that carries search attributes the namespace does not have yet
// waits in the outbox — retried, not rejected — and starts once they are
// registered.
func TestStartsWaitForUnregisteredSearchAttributes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		addr := freeAddr(t)
		ts, err := devserver.Start(devserver.Options{FrontendAddr: addr}) // a namespace without them
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ts.Stop(3 * time.Second) })
		tc, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		starter := outbox.New(db, tc, quiet, nil)
		id := "probe/" + db.Dialector.Name() + "/unregistered"
		err = starter.Transact(ctx, func(tx *record.Tx) error {
			return tx.Start(record.Start{WorkflowID: id, Workflow: "probeWorkflow", Input: probeInput{Note: id}, OrgID: "org-1", Kind: "probe"})
		})
		if err != nil {
			t.Fatal(err)
		}
		row := func() models.WorkflowStart {
			var r models.WorkflowStart
			if err := db.Where("workflow_id = ?", id).Take(&r).Error; err != nil {
				t.Fatal(err)
			}
			return r
		}
		if n, err := starter.DispatchDue(ctx); n != 0 || err != nil {
			t.Fatalf("dispatch without the search attributes: started %d, %v", n, err)
		}
		if r := row(); r.Status != models.StartPending || !strings.Contains(r.LastError, "search attribute") || !r.NextAttemptAt.After(models.Now()) {
			t.Fatalf("after the refusal: %+v", r)
		}

		// An operator registers them; the next attempt starts the workflow.
		if err := worker.EnsureSearchAttributes(ctx, tc, "default"); err != nil {
			t.Fatal(err)
		}
		db.Model(&models.WorkflowStart{}).Where("workflow_id = ?", id).Update("next_attempt_at", models.Now())
		if n, err := starter.DispatchDue(ctx); n != 1 || err != nil {
			t.Fatalf("dispatch once registered: started %d, %v (%+v)", n, err, row())
		}
		if r := row(); r.Status != models.StartStarted {
			t.Fatalf("once registered: %+v", r)
		}
		if _, err := tc.DescribeWorkflowExecution(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	})
}

// startTemporal brings up a dev server at addr with a worker registered by
// register, and returns the worker's client.
func startTemporal(t *testing.T, addr string, register func(sdkworker.Worker)) client.Client {
	t.Helper()
	ts, err := devserver.Start(devserver.Options{FrontendAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Stop(3 * time.Second) })
	wc, err := client.DialContext(t.Context(), client.Options{HostPort: addr, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wc.Close)
	w := sdkworker.New(wc, names.TaskQueue, sdkworker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if err := worker.EnsureSearchAttributes(t.Context(), wc, "default"); err != nil {
		t.Fatal(err)
	}
	return wc
}

// gateClient stands in for a Temporal whose calls hang until released and
// then fail: it records which workflows were called, and how many calls
// were in flight at once.
type gateClient struct {
	client.Client
	release chan struct{}

	mu             sync.Mutex
	inflight, peak int
	calls          []string
}

func (g *gateClient) call(ctx context.Context, what string) error {
	g.mu.Lock()
	g.inflight++
	g.peak = max(g.peak, g.inflight)
	g.calls = append(g.calls, what)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return errors.New("temporal unavailable (test)")
}

func (g *gateClient) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	return nil, g.call(ctx, "start "+o.ID)
}

func (g *gateClient) SignalWorkflow(ctx context.Context, id, _, name string, _ any) error {
	return g.call(ctx, "signal "+id+" "+name)
}

func (g *gateClient) snapshot() (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak, append([]string(nil), g.calls...)
}

// TestRelayDispatchesWorkflowsConcurrentlyInOrderPerWorkflow: a relay pass
// calls Temporal for several workflows at once, and a workflow's signal is
// never sent before its start has gone through.
func TestRelayDispatchesWorkflowsConcurrentlyInOrderPerWorkflow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		gate := &gateClient{release: make(chan struct{})}
		starter := outbox.New(db, gate, quiet, nil)
		starter.Concurrency = 4
		starter.DispatchTimeout = time.Minute
		for i := range 8 {
			id := fmt.Sprintf("gate/%d", i)
			err := starter.Transact(ctx, func(tx *record.Tx) error {
				if err := tx.Start(record.Start{WorkflowID: id, Workflow: "probeWorkflow", Input: probeInput{}}); err != nil {
					return err
				}
				return tx.Signal(record.Signal{WorkflowID: id, Name: "poke", Input: i})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() {
			n, err := starter.DispatchDue(ctx)
			if err == nil && n != 0 {
				err = fmt.Errorf("%d dispatched by a Temporal that fails every call", n)
			}
			done <- err
		}()
		// Hold every call until Concurrency of them are in flight together:
		// a relay that dispatches one at a time never gets there.
		deadline := time.Now().Add(20 * time.Second)
		for {
			if peak, _ := gate.snapshot(); peak >= starter.Concurrency {
				break
			}
			if time.Now().After(deadline) {
				peak, calls := gate.snapshot()
				close(gate.release)
				<-done
				t.Fatalf("at most %d calls in flight at once, want %d: %v", peak, starter.Concurrency, calls)
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(gate.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		peak, calls := gate.snapshot()
		if peak > starter.Concurrency {
			t.Fatalf("%d calls in flight, the limit is %d", peak, starter.Concurrency)
		}
		if len(calls) != 8 {
			t.Fatalf("want one start call per workflow and no signal before its start went through, got %v", calls)
		}
		for _, c := range calls {
			if !strings.HasPrefix(c, "start ") {
				t.Fatalf("a signal was sent before its workflow started: %v", calls)
			}
		}
	})
}

// TestRelayGivesWayToFloodsWhileTheProcessIsBusy: while busy, the rows
// of an organization that records more than FloodRate a second are
// dispatched no faster than the yield rate (here one an hour: one start,
// from the limiter's burst), and another organization's rows are not held
// back behind them; once the process is idle the waiting starts go at once.
func TestRelayGivesWayToFloodsWhileTheProcessIsBusy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		gate := &gateClient{release: make(chan struct{})}
		close(gate.release) // every call fails at once: the calls are counted
		starter := outbox.New(db, gate, quiet, nil)
		starter.Concurrency = 4
		var busy atomic.Bool
		busy.Store(true)
		starter.YieldTo(busy.Load, 1.0/3600)
		record := func(org string, n int) {
			err := starter.Transact(t.Context(), func(tx *record.Tx) error {
				for i := range n {
					err := tx.Start(record.Start{WorkflowID: fmt.Sprintf("yield/%s/%d", org, i), Workflow: "probeWorkflow", Input: probeInput{}, OrgID: org, Kind: "lead"})
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		record("flood", outbox.FloodRate+20)
		record("light", 3)
		if _, err := starter.DispatchDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, calls := gate.snapshot()
		light, flood := 0, 0
		for _, c := range calls {
			if strings.Contains(c, "/light/") {
				light++
			} else {
				flood++
			}
		}
		if light != 3 || flood != 1 {
			t.Fatalf("busy: %d calls for the light organization (want 3) and %d for the flooding one (want 1): %v", light, flood, calls)
		}
		busy.Store(false)
		for range 3 {
			if _, err := starter.DispatchDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		_, calls = gate.snapshot()
		if called := len(slices.Compact(slices.Sorted(slices.Values(calls)))); called != outbox.FloodRate+20+3 {
			t.Fatalf("idle again: %d workflows called, want all %d", called, outbox.FloodRate+20+3)
		}
	})
}

// signalLog stands in for a Temporal that takes every signal: it records
// each call, in order.
type signalLog struct {
	client.Client
	mu    sync.Mutex
	calls []string
}

func (l *signalLog) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	input, _ := arg.(json.RawMessage)
	l.calls = append(l.calls, id+" "+name+" "+string(input))
	return nil
}

// TestRelayDeliversARepeatedSignalOnce: the same plain signal recorded by
// one request after another (a webhook endpoint's wake-up) reaches its
// workflow once per run of them, in its place among the workflow's other
// signals, and every row it stands for is marked delivered; a signal with
// another input is its own.
func TestRelayDeliversARepeatedSignalOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		log := &signalLog{}
		starter := outbox.New(db, log, quiet, nil)
		signal := func(id, name string, input any) {
			err := starter.Transact(ctx, func(tx *record.Tx) error {
				return tx.Signal(record.Signal{WorkflowID: id, Name: name, Input: input, OrgID: "org-1", Kind: "probe"})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			signal("endpoint/1", "wake", nil)
		}
		signal("endpoint/1", "event", "one")
		signal("endpoint/1", "event", "two")
		for range 3 {
			signal("endpoint/1", "wake", nil)
		}
		signal("endpoint/2", "wake", nil)
		n, err := starter.DispatchDue(ctx)
		if err != nil || n != 11 {
			t.Fatalf("dispatched %d rows (%v), want all 11", n, err)
		}
		var endpoint1, endpoint2 []string
		for _, c := range log.calls {
			if strings.HasPrefix(c, "endpoint/1 ") {
				endpoint1 = append(endpoint1, c)
			} else {
				endpoint2 = append(endpoint2, c)
			}
		}
		want := []string{"endpoint/1 wake null", `endpoint/1 event "one"`, `endpoint/1 event "two"`, "endpoint/1 wake null"}
		if !slices.Equal(endpoint1, want) || len(endpoint2) != 1 {
			t.Fatalf("signals sent: %q and %q, want %q and one to endpoint/2", endpoint1, endpoint2, want)
		}
		var delivered int64
		db.Model(&models.WorkflowStart{}).Where("status = ? AND attempts = 1", models.SignalDelivered).Count(&delivered)
		if pending, _ := starter.Pending(ctx); delivered != 11 || pending != 0 {
			t.Fatalf("%d rows delivered and %d pending, want 11 and 0", delivered, pending)
		}
	})
}
