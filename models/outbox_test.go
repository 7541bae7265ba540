package models_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// RecordWithStart writes a row and its workflow start together (one
// statement on PostgreSQL), neither when the row is already there, and
// neither when the start is.
func TestRecordWithStartWritesBothOrNeither(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		window := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
		record := func(bucket, workflowID string) (bool, int, error) {
			var hits int
			ok, err := models.RecordWithStart(db,
				"INSERT INTO rate_counters (bucket, window_start, hits, expires_at) VALUES (?, ?, 1, ?) ON CONFLICT DO NOTHING RETURNING hits",
				[]any{bucket, window, window.Add(time.Hour)},
				&models.WorkflowStart{WorkflowID: workflowID, WorkflowType: "probe", TaskQueue: "q", Input: "{}"}, &hits)
			return ok, hits, err
		}
		count := func(table, where string, args ...any) (n int64) {
			t.Helper()
			if err := db.Table(table).Where(where, args...).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if ok, hits, err := record("a", "wf/1"); err != nil || !ok || hits != 1 {
			t.Fatalf("a new row: %v %d %v", ok, hits, err)
		}
		if n := count("workflow_starts", "workflow_id = ? AND status = ?", "wf/1", models.StartPending); n != 1 {
			t.Fatalf("%d pending starts of wf/1", n)
		}
		// The row is there already: nothing is written, the start neither.
		if ok, _, err := record("a", "wf/2"); err != nil || ok {
			t.Fatalf("the same row again: %v %v", ok, err)
		}
		if n := count("workflow_starts", "workflow_id = ?", "wf/2"); n != 0 {
			t.Fatalf("a start was recorded for a row that was not written")
		}
		// The start is there already: an error, and the row is not written.
		if ok, _, err := record("b", "wf/1"); err == nil || ok {
			t.Fatalf("a start recorded twice: %v %v", ok, err)
		}
		if n := count("rate_counters", "bucket = ?", "b"); n != 0 {
			t.Fatalf("the row was written without its start")
		}
	})
}

// A request transaction whose BEGIN failed — the database went away —
// hands RecordWithStart its error, not a connection: the intake is refused
// with that error (503), never with a panic (seen as a 500 in make e2e's
// PostgreSQL restart).
func TestRecordWithStartOnAFailedBegin(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("no PostgreSQL (TEST_DATABASE_URL)")
	}
	severable, sever := dbtest.Severable(t, dbtest.Open(t, database.Postgres))
	sever()
	tx := severable.Begin()
	if tx.Error == nil {
		t.Fatal("BEGIN on a severed connection succeeded")
	}
	var hits int
	ok, err := models.RecordWithStart(tx, "INSERT INTO rate_counters (bucket, window_start, hits, expires_at) VALUES (?, ?, 1, ?) RETURNING hits",
		[]any{"a", models.Now(), models.Now()}, &models.WorkflowStart{WorkflowID: "wf/1", WorkflowType: "probe", TaskQueue: "q", Input: "{}"}, &hits)
	if ok || err == nil {
		t.Fatalf("RecordWithStart on a failed BEGIN: %v %v, want its error", ok, err)
	}
}

// RecordWithStart's PostgreSQL statement names the outbox columns itself:
// it must name every column of the model, so that a column added to
// WorkflowStart is not silently left at its default there.
func TestRecordWithStartWritesEveryOutboxColumn(t *testing.T) {
	s, err := schema.Parse(&models.WorkflowStart{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	written := strings.Split(models.StartColumns, ", ")
	want := slices.Clone(s.DBNames)
	slices.Sort(written)
	slices.Sort(want)
	if !slices.Equal(written, want) {
		t.Fatalf("RecordWithStart writes %v, the model has %v", written, want)
	}
}

// DueStarts takes the due rows in turns across organizations and kinds:
// behind one organization's backlog of 50 lead intakes, another's two
// intakes and the first one's SLA wake come in the first turns; each
// (organization, kind) keeps its rows in order; rows not yet due and rows
// dispatched already are left out.
func TestDueStartsTakeTurnsAcrossOrganizationsAndKinds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := models.Now()
		at := now.Add(-time.Hour)
		record := func(id, org, kind string, due time.Time, status string) {
			t.Helper()
			at = at.Add(time.Second)
			row := &models.WorkflowStart{ID: models.NewID(), WorkflowID: id, WorkflowType: "probe", TaskQueue: "q", Input: "{}", OrgID: org, Kind: kind,
				NextAttemptAt: due, Status: status, CreatedAt: at, UpdatedAt: at}
			if ok, err := models.InsertWorkflowStart(db, row); err != nil || !ok {
				t.Fatalf("record %s: %v %v", id, ok, err)
			}
		}
		for i := range 50 {
			record(fmt.Sprintf("a-lead-%02d", i), "a", "lead", at, models.StartPending)
		}
		record("b-lead-00", "b", "lead", at, models.StartPending)
		record("a-sla-00", "a", "ticket-sla", at, models.StartPending)
		record("b-lead-01", "b", "lead", at, models.StartPending)
		record("b-lead-later", "b", "lead", now.Add(time.Hour), models.StartPending)
		record("b-lead-done", "b", "lead", at, models.StartStarted)

		var due []models.WorkflowStart
		if err := models.DueStarts(db, now, 6).Scan(&due).Error; err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, row := range due {
			ids = append(ids, row.WorkflowID)
		}
		// Turn 1 of each (organization, kind), oldest first, then turn 2.
		want := []string{"a-lead-00", "b-lead-00", "a-sla-00", "a-lead-01", "b-lead-01", "a-lead-02"}
		if !slices.Equal(ids, want) {
			t.Fatalf("due %v, want %v", ids, want)
		}
		if due[1].OrgID != "b" || due[1].Kind != "lead" || due[1].WorkflowType != "probe" {
			t.Fatalf("the row reads %+v", due[1])
		}
	})
}
