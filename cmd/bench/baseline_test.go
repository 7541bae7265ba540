package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestPgbenchLatencyReadsEveryThreadsLog(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "pglog-1")
	// Two threads' logs: 100 transactions of 1 ms to 100 ms.
	for file, from := range map[string]int{prefix + ".4242": 1, prefix + ".4242.1": 51} {
		var log []byte
		for i := from; i < from+50; i++ {
			log = fmt.Appendf(log, "%d %d %d 0 1795909482 123456\n", i%4, i, i*1000)
		}
		if err := os.WriteFile(file, log, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p50, p99, err := pgbenchLatency(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Errorf("p50 %v, p99 %v; want 50ms, 99ms", p50, p99)
	}
	if left, _ := filepath.Glob(prefix + ".*"); len(left) != 0 {
		t.Errorf("logs left behind: %v", left)
	}
	if _, _, err := pgbenchLatency(prefix); err == nil {
		t.Error("no logs: want an error")
	}
}

// pgbench takes ":name" anywhere in a statement, quoted or not: a colon
// followed by a letter in a literal would become a parameter (under -M
// prepared) that the script never sets, and pgbench aborts.
func TestBaselineScriptsNameOnlyTheirVariables(t *testing.T) {
	b := &bencher{org: "01a2248c-6f0d-7b33-bd52-b739ba56a317", mailbox: "ws-01a2248c6f0d7b33bd52b739ba56a317@suite.localhost"}
	ws := fullWorkspace{receiving: "01a2248c-723c-77be-a664-03f55ba6d04a", parked: "01a2248f-c865-73ba-8829-062edf6c3c36"}
	known := map[string]bool{"org": true, "n": true, "counter_month_count": true, "number": true, "customer_id": true, "ticket_id": true, "event_id": true}
	variable := regexp.MustCompile(`[^:]:([A-Za-z_][A-Za-z0-9_]*)`)
	for name, script := range map[string]string{
		"full ticket": fullTicketScript(b, ws), "ticket at once": ticketAtOnce.pgScript(b),
		"mail": mailOwn.pgScript(b), "prepared GET": preparedGetContacts.pgScript(b),
	} {
		for _, line := range regexp.MustCompile(`\n`).Split(script, -1) {
			if len(line) >= 2 && line[:2] == "--" {
				continue // a comment is not sent
			}
			for _, m := range variable.FindAllStringSubmatch(line, -1) {
				if v := m[1]; !known[v] {
					t.Errorf("%s: :%s in %q", name, v, line)
				}
			}
		}
	}
}
