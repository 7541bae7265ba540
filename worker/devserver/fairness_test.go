package devserver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/workflows/names"
)

// TestFairnessDispatchesInTurns: with Fairness (what `suite temporal`
// runs), a task queue holding one organization's backlog dispatches
// another organization's task in turns beside it, not behind it. Forty
// workflows of a busy organization are queued before one of a quiet
// organization, with no worker polling; then one worker takes them two at
// a time, and the quiet organization's must be among the first ten it
// runs (first come, first served ran it 23rd to 40th).
func TestFairnessDispatchesInTurns(t *testing.T) {
	addr := freeAddr(t)
	srv, err := devserver.Start(devserver.Options{FrontendAddr: addr, Fairness: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop(3 * time.Second) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const queue, busy = "fairness-test", 40
	var (
		mu  sync.Mutex
		ran []string // the organizations, in the order their workflows first ran
	)
	record := func(ctx workflow.Context, org string) error {
		if !workflow.IsReplaying(ctx) {
			mu.Lock()
			ran = append(ran, org)
			mu.Unlock()
		}
		return nil
	}
	start := func(i int, org string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("fairness/%s/%d", org, i), TaskQueue: queue, Priority: names.Priority(org),
		}, "record", org)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	var runs []client.WorkflowRun
	for i := range busy {
		runs = append(runs, start(i, "busy"))
	}
	runs = append(runs, start(0, "quiet"))
	// A start reaches the task queue a moment after it returns (the
	// history service's transfer task): the worker starts once all of
	// them wait there, or it would run the first ones before the last
	// had arrived.
	for {
		q, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: "default", TaskQueue: &taskqueuepb.TaskQueue{Name: queue},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW, ReportStats: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if q.GetStats().GetApproximateBacklogCount() >= busy+1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	w := sdkworker.New(c, queue, sdkworker.Options{MaxConcurrentWorkflowTaskExecutionSize: 2, MaxConcurrentWorkflowTaskPollers: 2})
	w.RegisterWorkflowWithOptions(record, workflow.RegisterOptions{Name: "record"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, run := range runs {
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	at := slices.Index(ran, "quiet")
	t.Logf("the quiet organization's workflow ran at position %d of %d", at+1, len(ran))
	if at < 0 || at >= busy/4 {
		t.Fatalf("the quiet organization's workflow ran at position %d of %d, behind the busy one's backlog: %v", at+1, len(ran), ran)
	}
}
