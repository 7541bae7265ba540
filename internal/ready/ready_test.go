package ready_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/ready"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/workflows/names"
)

func noop(workflow.Context) error { return nil }

// A worker process is ready only once matching lists its own worker among
// the task queue's pollers — another process's poller does not count.
func TestWorkerCheckWaitsForThisProcessPoller(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	tc := ts.GetDefaultClient()
	ctx := t.Context()

	other := sdkworker.New(tc, names.TaskQueue, sdkworker.Options{Identity: "someone-else"})
	other.RegisterWorkflow(noop)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()

	c := ready.New(ready.Options{DB: db, Temporal: tc, Namespace: ts.GetDefaultNamespace(), WorkerIdentity: "me", TaskQueue: names.TaskQueue, TTL: time.Hour})
	r := c.Fresh(ctx)
	if r.Ready || r.Checks[ready.CheckWorker].Status != "down" || r.Checks[ready.CheckTemporal].Status != "ok" || r.Checks[ready.CheckDatabase].Status != "ok" {
		t.Fatalf("ready without this process's worker: %+v", r)
	}
	if !strings.HasPrefix(r.Failing(), "worker:") {
		t.Fatalf("failing check %q", r.Failing())
	}

	mine := sdkworker.New(tc, names.TaskQueue, sdkworker.Options{Identity: "me"})
	mine.RegisterWorkflow(noop)
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer mine.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for !c.Fresh(ctx).Ready {
		if time.Now().After(deadline) {
			t.Fatalf("never ready: %+v", c.Fresh(ctx))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Within the TTL the answer is cached: a dependency going away is
	// noticed at the next round, not on every probe.
	if err := database.Close(db); err != nil {
		t.Fatal(err)
	}
	if !c.Check(ctx).Ready {
		t.Fatal("cached answer not reused")
	}
	if r := c.Fresh(ctx); r.Ready || r.Checks[ready.CheckDatabase].Status != "down" {
		t.Fatalf("closed database reported ready: %+v", r)
	}
}

// Temporal unreachable: not ready, and the body says so.
func TestTemporalDownIsNotReady(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	c := ready.New(ready.Options{DB: db, Temporal: tc, WorkerIdentity: "me", TaskQueue: names.TaskQueue})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r := c.Check(ctx)
	if r.Ready || r.Checks[ready.CheckTemporal].Status != "down" || r.Checks[ready.CheckWorker].Status != "down" {
		t.Fatalf("%+v", r)
	}
}
