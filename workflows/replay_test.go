package workflows_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/worker"
)

// Replay tests: every saved history of a real run (testdata/histories,
// written by `make histories`) must replay against today's workflow code.
// A change that would break executions already running in production —
// reordered or removed activities, a new timer, a changed version branch —
// fails here; keep such changes behind workflow.GetVersion instead of
// regenerating the histories (docs/decisions.md).

const historiesDir = "testdata/histories"

// replayRegistry lets worker.Register — the registration production uses —
// fill a replayer: workflows are registered and their names recorded;
// activities and Nexus services are ignored (a replay runs none).
type replayRegistry struct {
	// Registry is nil: it only completes the interface (Nexus services,
	// which worker.Register does not use, would panic here).
	sdkworker.Registry
	replayer sdkworker.WorkflowReplayer
	types    []string
}

func (r *replayRegistry) RegisterWorkflow(w any) {
	r.types = append(r.types, "") // unnamed: the test asks for a name
	r.replayer.RegisterWorkflow(w)
}

func (r *replayRegistry) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	r.types = append(r.types, o.Name)
	r.replayer.RegisterWorkflowWithOptions(w, o)
}

func (r *replayRegistry) RegisterActivity(any)                                         {}
func (r *replayRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions)    {}
func (r *replayRegistry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}

func newReplayer(t *testing.T) *replayRegistry {
	t.Helper()
	r := &replayRegistry{replayer: sdkworker.NewWorkflowReplayer()}
	worker.Register(r, worker.Deps{})
	if len(r.types) == 0 || slices.Contains(r.types, "") {
		t.Fatalf("registered workflow types %q: each needs its name (workflows/names/names.go)", r.types)
	}
	return r
}

// historyFiles are the saved histories: <WorkflowType>.json for the current
// code, and under old/ histories of earlier versions that running
// executions may still have (they cannot be regenerated).
func historyFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.json", "old/*.json"} {
		m, err := filepath.Glob(filepath.Join(historiesDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

func TestEveryWorkflowTypeHasASavedHistory(t *testing.T) {
	for _, name := range newReplayer(t).types {
		if _, err := os.Stat(filepath.Join(historiesDir, name+".json")); err != nil {
			t.Errorf("no saved history for workflow type %s (run `make histories`): %v", name, err)
		}
	}
}

func TestSavedHistoriesReplay(t *testing.T) {
	r := newReplayer(t)
	files := historyFiles(t)
	if len(files) == 0 {
		t.Fatalf("no histories under %s", historiesDir)
	}
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, file := range files {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, historiesDir+"/"), ".json"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The file is named for the type its history runs.
			started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
			if base := strings.TrimSuffix(filepath.Base(file), ".json"); !strings.HasPrefix(base, started) {
				t.Fatalf("%s holds a history of %q", file, started)
			}
			if err := r.replayer.ReplayWorkflowHistory(logger, h); err != nil {
				t.Fatalf("replaying %s: %v", file, err)
			}
		})
	}
}
