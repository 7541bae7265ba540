package devserver_test

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/worker/ports"
	"github.com/business-suite/suite/workflows/names"
)

func greet(ctx workflow.Context, name string) (string, error) { return "hello " + name, nil }

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

// TestStateSurvivesRestart: a workflow completed before a restart is still
// there, with its search attributes, after the server starts again on the
// same file — what `make run` users see after Ctrl-C and a new start.
func TestStateSurvivesRestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "temporal.db")
	addr, uiAddr := freeAddr(t), freeAddr(t)
	opts := devserver.Options{
		DBPath: dbPath, FrontendAddr: addr, UIAddr: uiAddr,
		SearchAttributes: map[string]enumspb.IndexedValueType{"OrgId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "Kind": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	srv, err := devserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	w := sdkworker.New(c, names.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "greet/restart", TaskQueue: names.TaskQueue,
		TypedSearchAttributes: names.SearchAttributes("org-7", "greeting"),
	}, greet, "ada")
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "hello ada" {
		t.Fatalf("workflow: %q %v", out, err)
	}
	// The UI is served and knows the namespace.
	resp, err := http.Get("http://" + uiAddr + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("UI namespaces: %d", resp.StatusCode)
	}
	w.Stop()
	c.Close()
	_ = srv.Stop(3 * time.Second)

	srv, err = devserver.Start(opts)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer func() { _ = srv.Stop(3 * time.Second) }()
	c, err = client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, err := c.DescribeWorkflowExecution(ctx, "greet/restart", "")
	if err != nil {
		t.Fatalf("workflow lost across restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("status after restart: %v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: `OrgId = "org-7" AND Kind = "greeting"`})
		if err == nil && len(list.GetExecutions()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search by OrgId/Kind after restart: %v %v", list, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.HasPrefix(srv.UIURL(), "http://") {
		t.Fatalf("UI URL %q", srv.UIURL())
	}
}

// TestFileIsWALWithLeanVisibility: the state file runs in WAL mode (the
// server's connection attributes become PRAGMAs, and a misspelt one is
// ignored without a word), and its visibility table keeps only the indexes
// the UI's usual filters and the search attributes in use need.
// TestStateSurvivesRestart shows filtering by OrgId and Kind still works.
func TestFileIsWALWithLeanVisibility(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "temporal.db")
	srv, err := devserver.Start(devserver.Options{
		DBPath: dbPath, FrontendAddr: freeAddr(t),
		SearchAttributes: map[string]enumspb.IndexedValueType{"OrgId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "Kind": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.Stop(3 * time.Second)

	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	keywords := 0
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if strings.HasPrefix(name, "by_keyword_") {
			keywords++
		}
	}
	for _, want := range []string{"default_idx", "by_workflow_id", "by_workflow_type", "by_status"} {
		if !slices.Contains(names, want) {
			t.Errorf("index %s was dropped: %v", want, names)
		}
	}
	if len(names) != 8 || keywords != 2 {
		t.Fatalf("visibility indexes %v: want the UI's six and one per search attribute (two)", names)
	}
}
