package devserver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/workflows/names"
)

// childEnv names the variables that turn this test binary into a bare
// embedded server (see TestMain), so a test can kill -9 a real process.
const (
	childDBEnv   = "DEVSERVER_TEST_CHILD_DB"
	childAddrEnv = "DEVSERVER_TEST_CHILD_ADDR"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(childDBEnv); db != "" {
		srv, err := devserver.Start(devserver.Options{DBPath: db, FrontendAddr: os.Getenv(childAddrEnv)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child server:", err)
			os.Exit(3)
		}
		_ = srv
		select {} // until killed
	}
	os.Exit(m.Run())
}

// restartBound is far above what a restart costs (well under a second on
// two cores) and far below the ~50 s that stale cluster-membership rows
// used to cost, so the tests below fail on that bug without timing anything
// finer than "promptly".
const restartBound = 15 * time.Second

// runGreeting starts a worker and one workflow on the server at addr and
// waits, at most restartBound, for its result.
func runGreeting(t *testing.T, addr, id string) { greetWithin(t, addr, id, restartBound) }

// greetWithin starts a worker and one workflow on the server at addr and
// waits, at most within, for its result and for the worker to be listed as
// the task queue's poller.
func greetWithin(t *testing.T, addr, id string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	w := sdkworker.New(c, names.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: names.TaskQueue}, greet, "ada")
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "hello ada" {
		t.Fatalf("workflow %s did not complete within %s of the start: %q %v", id, within, out, err)
	}
	// Matching serves the task queue and lists this worker as a poller.
	desc, err := c.DescribeTaskQueue(ctx, names.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil || len(desc.GetPollers()) == 0 {
		t.Fatalf("describe task queue: %v %v", desc, err)
	}
}

// TestGracefulRestartServesAtOnce: stopped cleanly and started again on the
// same file, the server runs a new workflow at once, every time.
func TestGracefulRestartServesAtOnce(t *testing.T) {
	opts := devserver.Options{DBPath: filepath.Join(t.TempDir(), "temporal.db"), FrontendAddr: freeAddr(t)}
	for round := range 4 {
		srv, err := devserver.Start(opts)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		runGreeting(t, opts.FrontendAddr, fmt.Sprintf("greet/graceful-%d", round))
		if err := srv.Stop(5 * time.Second); err != nil {
			t.Logf("round %d stop: %v", round, err)
		}
	}
}

// TestRestartAfterKillServesAtOnce: the server process is killed with
// SIGKILL (no shutdown at all, as a crash or `kill -9` of `suite dev`), and
// a new process on the same file runs a new workflow at once, every time.
func TestRestartAfterKillServesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dbPath := filepath.Join(t.TempDir(), "temporal.db")
	addr := freeAddr(t)
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childDBEnv+"="+dbPath, childAddrEnv+"="+addr)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitDial(t, addr, &stderr)
		runGreeting(t, addr, fmt.Sprintf("greet/killed-%d", round))
		if err := cmd.Process.Kill(); err != nil { // SIGKILL: nothing is cleaned up
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	// And the in-process server also starts cleanly on what the last
	// killed process left behind.
	srv, err := devserver.Start(devserver.Options{DBPath: dbPath, FrontendAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop(5 * time.Second) }()
	runGreeting(t, addr, "greet/after-kill-in-process")
}

// waitDial waits for the child's frontend to accept connections.
func waitDial(t *testing.T, addr string, stderr *strings.Builder) {
	t.Helper()
	deadline := time.Now().Add(restartBound)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: addr})
		cancel()
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child server at %s did not come up: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
