package apitest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// HistoriesEnv names the directory into which every Env saves, when its
// test ends, one completed history per workflow type that has none there
// yet (`make histories`, for the replay test in workflows/).
const HistoriesEnv = "SUITE_WRITE_HISTORIES"

// saveHistoriesOnCleanup arranges for the Env's completed workflows to be
// saved when SUITE_WRITE_HISTORIES is set. It must be registered after the
// Temporal server and worker start, so that it runs before they stop.
func (e *Env) saveHistoriesOnCleanup() {
	dir := os.Getenv(HistoriesEnv)
	if dir == "" {
		return
	}
	e.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.saveHistories(ctx, dir); err != nil {
			e.T.Errorf("save workflow histories: %v", err)
		}
	})
}

// saveHistories writes dir/<WorkflowType>.json for each type that has no
// file yet: the first completed execution wins, across test packages too
// (the Makefile empties dir first).
func (e *Env) saveHistories(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var token []byte
	for {
		page, err := e.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: e.namespace, Query: "ExecutionStatus = 'Completed'", NextPageToken: token})
		if err != nil {
			return err
		}
		for _, ex := range page.GetExecutions() {
			name := filepath.Join(dir, ex.GetType().GetName()+".json")
			if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := e.saveHistory(ctx, name, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()); err != nil {
				return err
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

func (e *Env) saveHistory(ctx context.Context, name, workflowID, runID string) error {
	var h historypb.History
	it := e.Temporal.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) { // another test package was first
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
