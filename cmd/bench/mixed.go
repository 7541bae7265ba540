package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The mixed loads (issue 35): the intake pipeline beside other work.
const (
	// readsLoad: a steady intake while GETs saturate the API.
	readsLoad = "mixed load: web-form intake beside GETs at saturation"
	// quietRate is the other organization's intake rate during the
	// burst (burstIntake).
	quietRate = 10
	// readConns is how many connections the GETs keep busy.
	readConns = 64
)

// readsResult is the intake at the steady rate while wrk keeps readConns
// GETs in flight, and what the GETs got.
type readsResult struct {
	intake intakeResult
	reads  row
}

func (r readsResult) String() string {
	return fmt.Sprintf("%s\n%-42s GETs beside it: %.0f/s, p50 %.1f ms, p99 %.1f ms, %d errors", r.intake, "", r.reads.apiRPS, ms(r.reads.apiP50), ms(r.reads.apiP99), r.reads.errors)
}

// intakeBesideReads sends the steady intake rate for -mixed-for while wrk
// sends GET /crm/contacts on readConns connections, then measures accept →
// scored per lead. Under `suite dev` the relay gives way to the API while
// more requests are in flight than cores; a light pipeline must not starve.
func (b *bencher) intakeBesideReads(ctx context.Context, db *sql.DB) (readsResult, error) {
	source := fmt.Sprintf("beside%d", time.Now().Unix())
	res := readsResult{intake: intakeResult{label: fmt.Sprintf("intake %d/s beside GETs c%d (%s)", b.cfg.intakeRate, readConns, b.cfg.mixedFor)}, reads: row{conns: readConns}}
	luaFile := filepath.Join(b.dir, "wrk-mixed-reads.lua")
	if err := os.WriteFile(luaFile, []byte(getContacts.wrkScript(b)), 0o644); err != nil {
		return res, err
	}
	if err := b.quiet(readsLoad); err != nil {
		return res, err
	}
	wrk := make(chan error, 1)
	go func() {
		// A second longer than the intake, so the GETs saturate the API
		// from the first submission to the last.
		out, err := exec.Command("wrk", "-t", "2", "-c", strconv.Itoa(readConns), "-d", (b.cfg.mixedFor + 2*time.Second).String(), "--latency",
			"-s", luaFile, b.base).CombinedOutput()
		if err == nil {
			err = parseWrk(out, &res.reads)
		} else {
			err = fmt.Errorf("wrk: %v: %s", err, out)
		}
		wrk <- err
	}()
	time.Sleep(time.Second)
	res.intake.sent, res.intake.accepted = b.sendSteadily(b.tenant(), source, b.cfg.intakeRate, b.cfg.mixedFor)
	if err := <-wrk; err != nil {
		return res, err
	}
	return res, b.awaitLeads(ctx, db, b.org, source, &res.intake)
}

// stringer is a note that is already text.
type stringer string

func (s stringer) String() string { return string(s) }
