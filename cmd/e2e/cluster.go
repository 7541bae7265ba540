package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/business-suite/suite/cmd/internal/harness"
	"github.com/business-suite/suite/worker/devserver"
)

// temporalNodes makes the Temporal processes of the run (not started): one
// `suite temporal` on its file at first, or two nodes of a cluster on
// fresh PostgreSQL databases at first and second (-temporal postgres).
func (t *e2e) temporalNodes(ctx context.Context, first, second string) error {
	if t.o.temporal != "postgres" {
		t.temporalAddrs = []string{first}
		t.temporals = []*proc{t.newProc("temporal", "", "temporal",
			"SUITE_DATA_DIR="+filepath.Join(t.dir, "temporal"),
			"TEMPORAL_ADDRESS="+first,
			"SUITE_TEMPORAL_UI_ADDR=",
		)}
		return nil
	}
	t.temporalDB = fmt.Sprintf("temporal_e2e_%d", os.Getpid())
	for _, db := range []string{t.temporalDB, t.temporalDB + "_visibility"} {
		if _, err := t.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop a leftover %s: %w", db, err)
		}
	}
	dbURL := harness.WithDatabase(t.o.postgres, t.temporalDB)
	t.temporalAddrs = []string{first, second}
	for i, addr := range t.temporalAddrs {
		name := fmt.Sprintf("temporal%d", i+1)
		t.temporals = append(t.temporals, t.newProc(name, "", "temporal",
			"SUITE_DATA_DIR="+filepath.Join(t.dir, name),
			"TEMPORAL_ADDRESS="+addr,
			"TEMPORAL_DB_URL="+dbURL,
			"TEMPORAL_HISTORY_SHARDS=4",
			// Two nodes and four suite processes share the machine's
			// PostgreSQL (100 connections) with whatever else runs there.
			"TEMPORAL_DB_MAX_CONNS=5",
			"SUITE_TEMPORAL_UI_ADDR=",
		))
	}
	t.step("Temporal cluster of 2 nodes on databases %s and %s_visibility", t.temporalDB, t.temporalDB)
	return nil
}

// temporalTopology names the Temporal processes for the report.
func (t *e2e) temporalTopology() string {
	if len(t.temporals) == 1 {
		return "1 temporal (SQLite file)"
	}
	return fmt.Sprintf("%d temporal nodes (one cluster on PostgreSQL)", len(t.temporals))
}

// faultTemporalNodeKill: kill -9 one node of the Temporal cluster during
// the intakes and leave it dead: the other node takes over its history
// shards and task queues, the processes' clients (which know both
// frontends) go on through it, and every intake must become exactly one
// lead. The node is restarted afterwards, as a supervisor would, and must
// rejoin the cluster.
func (t *e2e) faultTemporalNodeKill(ctx context.Context) error {
	if len(t.temporals) < 2 {
		return fmt.Errorf("temporal-node-kill needs a cluster: run with -temporal postgres")
	}
	n := t.o.intakes
	source := fmt.Sprintf("e2e-node-kill-%d", time.Now().Unix())
	s, done, began, err := t.quarterAccepted(ctx, source, n)
	if err != nil {
		return err
	}
	victim, survivor := t.temporals[0], t.temporalAddrs[1]
	victim.kill()
	killed := time.Now()
	t.step("kill -9 %s (pid %d) after %d of %d intakes were accepted; it stays down", victim.name, victim.pid(), s.ok.Load(), n)
	alone := t.awaitMembers(ctx, survivor, 1)
	if alone == 0 {
		return fmt.Errorf("%s still counts %s as a member 2 minutes after its kill", t.temporals[1].name, victim.name)
	}
	t.step("%s counts itself alone in the cluster %s after the kill", t.temporals[1].name, alone.Round(100*time.Millisecond))
	<-done
	sentAt := s.ended
	sentFor := sentAt.Sub(began)
	accepted := int(s.ok.Load())
	c, err := t.awaitLeads(ctx, source, accepted)
	// awaitLeads watched 2 s more for late duplicates after the last lead.
	lastLead := time.Now().Add(-2 * time.Second)
	inPlace, afterLast := lastLead.Sub(killed), lastLead.Sub(sentAt)
	if timeline, terr := t.leadTimeline(ctx, source, killed, 10*time.Second); terr == nil {
		t.step("leads made per 10 s from the kill on: %s", timeline)
	}
	var rejoined time.Duration // 0: not rejoined
	if err == nil {
		if err = victim.start(); err == nil {
			restarted := time.Now()
			if err = victim.awaitListening(ctx, t.temporalAddrs[0], 2*time.Minute); err == nil && t.awaitMembers(ctx, survivor, 2) > 0 {
				rejoined = time.Since(restarted)
			}
		}
	}
	t.figure("Temporal node kill -9 during %d intakes: sent %d, accepted %d (in %s, %d client retries), processed %d, leads %d, duplicates %d, lost %d; "+
		"every lead in place %s after the kill, %s after the last acceptance; the node restarted and back in the cluster %s after its start",
		n, s.sent.Load(), accepted, sentFor.Round(100*time.Millisecond), s.retries.Load(), c.processed, c.leads, c.leads-c.emails, accepted-c.emails,
		inPlace.Round(100*time.Millisecond), afterLast.Round(100*time.Millisecond), rejoined.Round(100*time.Millisecond))
	if err != nil {
		return err
	}
	if accepted != n {
		return fmt.Errorf("%d of %d intakes accepted (first refusal: %s)", accepted, n, s.sample)
	}
	if rejoined == 0 {
		return fmt.Errorf("%s did not rejoin the cluster within 2 minutes of its restart", victim.name)
	}
	return checkLeads(c, n)
}

// awaitMembers waits (up to 2 minutes) until the node at frontend counts n
// hosts of every service role, and returns how long that took (0: never).
func (t *e2e) awaitMembers(ctx context.Context, frontend string, n int) time.Duration {
	began := time.Now()
	var seen string
	for time.Since(began) < 2*time.Minute {
		askCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		members, err := devserver.Members(askCtx, frontend)
		cancel()
		if err == nil && len(members) == 4 && members["frontend"] == n && members["history"] == n &&
			members["matching"] == n && members["worker"] == n {
			return time.Since(began)
		}
		seen = fmt.Sprint(members, err)
		if sleep(ctx, 200*time.Millisecond) != nil {
			break
		}
	}
	t.step("the node at %s still counts %s, not %d of each role", frontend, strings.TrimSpace(seen), n)
	return 0
}
