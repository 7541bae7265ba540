package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// lockedBuffer is a log sink the worker's goroutines write to while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the JSON log lines whose msg is msg.
func (b *lockedBuffer) lines(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(b.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func logProbe(ctx workflow.Context) error {
	workflow.GetLogger(ctx).Info("probe workflow line")
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteActivity(ctx, "LogProbeActivity").Get(ctx, nil)
}

func logProbeActivity(ctx context.Context) error {
	activity.GetLogger(ctx).Info("probe activity line")
	return nil
}

// The request id travels with the work a request causes: the request's
// context carries it into the outbox row, the relay into the workflow's
// headers, and every line the workflow and its activities log carries it.
func TestWorkLogLinesCarryTheRequestID(t *testing.T) {
	logs := &lockedBuffer{}
	e := apitest.New(t, database.SQLite, apitest.WithTemporalLog(logs), apitest.WithRegistered(func(r sdkworker.Registry) {
		r.RegisterWorkflowWithOptions(logProbe, workflow.RegisterOptions{Name: "LogProbe"})
		r.RegisterActivityWithOptions(logProbeActivity, activity.RegisterOptions{Name: "LogProbeActivity"})
	}))

	// A request's id reaches the outbox row of the work it records.
	owner := e.SignUp(apitest.UniqueEmail("reqid"))
	r := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Body: map[string]string{"name": "Request Co"},
		Headers: map[string]string{"Authorization": "Bearer " + owner.Token, "X-Request-Id": "req-org-create-1"}})
	var org struct{ ID string }
	r.JSON(&org)
	var start models.WorkflowStart
	if err := e.DB.Where("org_id = ? AND kind = ?", org.ID, names.KindOrgRegistration).Take(&start).Error; err != nil {
		t.Fatal(err)
	}
	if start.RequestID != "req-org-create-1" {
		t.Fatalf("the outbox row's request id is %q", start.RequestID)
	}

	// From the outbox row on: the workflow's and the activity's lines.
	ctx := telemetry.WithRequestID(t.Context(), "req-probe-7")
	if err := e.Starter.Transact(ctx, func(tx *record.Tx) error {
		return tx.Start(record.Start{WorkflowID: "log-probe", Workflow: "LogProbe"})
	}); err != nil {
		t.Fatal(err)
	}
	e.Eventually(func() bool { return len(logs.lines("probe activity line")) > 0 }, "the probe activity's log line")
	for _, msg := range []string{"probe workflow line", "probe activity line"} {
		lines := logs.lines(msg)
		if len(lines) == 0 || lines[0]["request_id"] != "req-probe-7" {
			t.Fatalf("%q lines: %v", msg, lines)
		}
	}
}
