package models_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

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
