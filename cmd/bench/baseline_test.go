package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/models"
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

// The bench's copy of the one-statement ticket create is the statement
// the API sends, but for the values written in: with every value — a
// parameter, a CAST of one, a pgbench expression, a generated id —
// written as one placeholder, and the spacing made one, the two are the
// same text. A change to models' statement that the copy misses fails
// here, not as a baseline that quietly measures something else.
func TestBenchTicketStatementIsTheModels(t *testing.T) {
	if got, want := sameShape(openTicketAtOnce), sameShape(models.OpenTicketStatement); got != want {
		t.Fatalf("the bench's copy differs from models.OpenTicketStatement:\n bench: %s\nmodels: %s", got, want)
	}
}

// sameShape is a statement with each value one "?" and its spaces one.
func sameShape(sql string) string {
	sql = strings.ReplaceAll(sql, "gen_random_uuid()", "CAST(? AS uuid)") // an id the API makes
	sql = regexp.MustCompile(`\$\d+|:org\b`).ReplaceAllString(sql, "?")
	sql = castsAsPlaceholders(sql)
	sql = strings.Join(strings.Fields(sql), " ")
	return strings.NewReplacer("( ", "(", " )", ")").Replace(sql)
}

// castsAsPlaceholders writes every CAST(value AS type) as CAST(? AS type):
// the bench's values are expressions, the API's parameters.
func castsAsPlaceholders(sql string) string {
	var b strings.Builder
	for {
		i := strings.Index(sql, "CAST(")
		if i < 0 {
			return b.String() + sql
		}
		b.WriteString(sql[:i] + "CAST(")
		depth, as, end := 1, -1, -1
		for j := i + len("CAST("); j < len(sql) && end < 0; j++ {
			switch {
			case sql[j] == '(':
				depth++
			case sql[j] == ')':
				if depth--; depth == 0 {
					end = j
				}
			case depth == 1 && strings.HasPrefix(sql[j:], " AS "):
				as = j
			}
		}
		if end < 0 || as < 0 {
			return b.String() + sql[i+len("CAST("):]
		}
		b.WriteString("? " + sql[as+1:end+1])
		sql = sql[end+1:]
	}
}
