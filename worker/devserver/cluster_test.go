package devserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/worker/devserver"
)

// clusterStore is a PostgreSQL store on fresh databases of the test's
// server, dropped when the test ends.
func clusterStore(t *testing.T) *devserver.PostgresStore {
	t.Helper()
	admin := dbtest.PostgresURL(t)
	if admin == "" {
		t.Skip("no PostgreSQL (TEST_DATABASE_URL)")
	}
	name := fmt.Sprintf("temporal_test_%d", rand.Uint32())
	store := &devserver.PostgresStore{URL: admin, HistoryShards: 4}
	store.URL = store.URLOf(name)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Log(err)
			return
		}
		defer conn.Close(ctx)
		for _, db := range []string{name, name + "_visibility"} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
				t.Log(err)
			}
		}
	})
	return store
}

// Two nodes on one PostgreSQL store are one cluster: the first installs
// the schema and the namespace and serves, the second joins; workflows
// started through either node's frontend run, and keep running on the
// second node once the first is gone (its history shards move over). A
// node started again on the same databases finds the schema current and
// its state there.
func TestTwoNodesOnPostgresAreOneCluster(t *testing.T) {
	store := clusterStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := t.TempDir()
	started := 0
	start := func() (*node, string) {
		addr := freeAddr(t)
		started++
		log := filepath.Join(logs, fmt.Sprintf("node-%d.log", started))
		t.Cleanup(func() { showLogOnFailure(t, log) })
		srv, err := devserver.Start(devserver.Options{FrontendAddr: addr, Postgres: store, LogFile: log})
		if err != nil {
			t.Fatal(err)
		}
		n := &node{srv: srv}
		t.Cleanup(func() {
			if !n.stopped {
				_ = srv.Stop(10 * time.Second)
			}
		})
		return n, addr
	}
	// greetOn runs one greet through the frontend at addr, with a worker
	// polling there.
	greetOn := func(addr, id string) { greetWithin(t, addr, id, time.Minute) }
	// The first node serves alone before the second starts, as a cluster
	// grows: its matching service creates the task queue. Two matching
	// services that both create a task queue while they still disagree
	// about who owns it collide (Temporal 1.32.1: "duplicate key …
	// task_queues_pkey" in AddWorkflowTask), and the first workflow task
	// then waited over a minute (CI, 2026-11-30; 1 start in 5 under load).
	first, firstAddr := start()
	greetOn(firstAddr, "greet-alone")
	_, secondAddr := start()
	awaitMembers(ctx, t, firstAddr, 2)
	awaitMembers(ctx, t, secondAddr, 2)
	for i := range 8 { // spread over the four shards, through both frontends
		greetOn([]string{firstAddr, secondAddr}[i%2], fmt.Sprintf("greet-%d", i))
	}
	first.stop(t)
	awaitMembers(ctx, t, secondAddr, 1)
	for i := range 8 {
		greetOn(secondAddr, fmt.Sprintf("after-%d", i))
	}
	// A node started again on the databases finds the workflows there.
	again, againAddr := start()
	c, err := client.DialContext(ctx, client.Options{HostPort: againAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.DescribeWorkflowExecution(ctx, "greet-0", ""); err != nil {
		t.Fatalf("greet-0 through the node started again: %v", err)
	}
	again.stop(t)
}

// showLogOnFailure prints the last lines of a node's own log (warnings and
// errors) when the test failed: what the cluster did is in there.
func showLogOnFailure(t *testing.T, path string) {
	if !t.Failed() {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Log(err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	t.Logf("the last lines of %s:\n%s", filepath.Base(path), strings.Join(lines[max(0, len(lines)-60):], "\n"))
}

// node is a started cluster node, stopped once: in the test, or at its
// end.
type node struct {
	srv     *devserver.Server
	stopped bool
}

func (n *node) stop(t *testing.T) {
	n.stopped = true
	if err := n.srv.Stop(10 * time.Second); err != nil {
		t.Log(err)
	}
}

// awaitMembers waits until the node at frontend counts n hosts of every
// service role.
func awaitMembers(ctx context.Context, t *testing.T, frontend string, n int) {
	t.Helper()
	for {
		members, err := devserver.Members(ctx, frontend)
		if err == nil && len(members) == 4 && members["frontend"] == n && members["history"] == n && members["matching"] == n && members["worker"] == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the node at %s sees %v (%v), want %d of each role", frontend, members, err, n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
