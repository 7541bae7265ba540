package models

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
)

// Workflow start states.
const (
	StartPending = "pending"
	StartStarted = "started"
	// StartRejected means Temporal refused the request as invalid; it will
	// never succeed by retrying and is kept for operators to inspect.
	StartRejected = "rejected"
	// SignalDelivered: a signal row reached its workflow (which signal-with-
	// start may have started).
	SignalDelivered = "delivered"
	// SignalSkipped: the signal's workflow had already finished (or, for a
	// plain signal, does not exist); there is nobody to tell.
	SignalSkipped = "skipped"
)

// PendingStarts selects the rows not yet dispatched. The state is written
// into the statement rather than passed as a parameter so that PostgreSQL
// serves it from the partial index workflow_starts_due also with the
// generic plan of a prepared statement; with a parameter, that plan scans
// every row the outbox has ever recorded.
func PendingStarts(db *gorm.DB) *gorm.DB {
	return db.Where("status = '" + StartPending + "'")
}

// DueStarts reads up to limit rows due at now, taken in turns across
// organizations and kinds: the oldest due row of every (organization,
// kind), then the second oldest of each, and so on. One organization's
// backlog, or one kind's, does not hold another's rows back behind it;
// within an (organization, kind) the rows keep their order (a workflow's
// start before its signals). A signal without a start has no organization
// and takes its turns with the others of its kind. The turns are numbered
// over the index workflow_starts_turns alone; only the rows picked are
// read whole. Scan the statement into a []WorkflowStart.
func DueStarts(db *gorm.DB, now time.Time, limit int) *gorm.DB {
	return db.Raw(`SELECT w.* FROM workflow_starts w JOIN (
	SELECT id, turn, next_attempt_at FROM (
		SELECT id, next_attempt_at, ROW_NUMBER() OVER (PARTITION BY org_id, kind ORDER BY next_attempt_at, id) AS turn
		FROM workflow_starts WHERE status = '`+StartPending+`' AND next_attempt_at <= ?
	) numbered WHERE turn <= ? ORDER BY turn, next_attempt_at, id LIMIT ?
) due ON w.id = due.id ORDER BY due.turn, due.next_attempt_at, due.id`, now, limit, limit)
}

// WorkflowStart is a transactional-outbox row: the intent to start one
// workflow, written in the same transaction as the domain change that needs
// it. The relay (api/outbox) starts it and marks it started; the workflow ID
// is unique among starts, so an intent is recorded once and started at most
// once. A row with SignalName set is a signal instead: delivered to the
// running workflow WorkflowID, or with signal-with-start when WorkflowType
// is set too; any number of signals may target one workflow.
type WorkflowStart struct {
	ID            string `gorm:"primaryKey"`
	WorkflowID    string
	WorkflowType  string
	TaskQueue     string
	Input         string
	OrgID         string
	Kind          string
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	RunID         string
	StartedAt     *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	SignalName    string
	SignalInput   string
	// TraceContext is the W3C traceparent of the request that recorded the
	// row: the relay continues that trace when it calls Temporal.
	TraceContext string
	// RequestID is the id of the request that recorded the row; the
	// workflow's and its activities' log lines carry it.
	RequestID string
}

// InsertWorkflowStart records s inside tx. It reports false when a start with
// the same workflow ID was already recorded (nothing is written then).
func InsertWorkflowStart(tx *gorm.DB, s *WorkflowStart) (bool, error) {
	if s.SignalName != "" {
		return false, errors.New("InsertWorkflowStart: a signal row goes through InsertWorkflowSignal")
	}
	prepareOutboxRow(s)
	// The unique index on workflow_id covers starts only (signal_name = '').
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "workflow_id"}},
		TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "signal_name = ''"}}}, DoNothing: true}).Create(s)
	return res.RowsAffected == 1, res.Error
}

// InsertWorkflowSignal records a signal row inside tx.
func InsertWorkflowSignal(tx *gorm.DB, s *WorkflowStart) error {
	if s.SignalName == "" {
		return errors.New("InsertWorkflowSignal: SignalName is required")
	}
	prepareOutboxRow(s)
	return tx.Create(s).Error
}

func prepareOutboxRow(s *WorkflowStart) {
	if s.ID == "" {
		s.ID = NewID()
	}
	if s.Status == "" {
		s.Status = StartPending
	}
	if s.NextAttemptAt.IsZero() {
		s.NextAttemptAt = Now()
	}
}

// startColumns are the workflow_starts columns RecordWithStart writes, in
// the order of startValues.
const startColumns = "id, workflow_id, workflow_type, task_queue, input, org_id, kind, status, attempts, next_attempt_at, " +
	"last_error, run_id, started_at, created_at, updated_at, signal_name, signal_input, trace_context, request_id"

// startPlaceholders are startColumns' parameters.
var startPlaceholders = strings.TrimSuffix(strings.Repeat("?, ", strings.Count(startColumns, ",")+1), ", ")

func startValues(s *WorkflowStart) []any {
	return []any{s.ID, s.WorkflowID, s.WorkflowType, s.TaskQueue, s.Input, s.OrgID, s.Kind, s.Status, s.Attempts, s.NextAttemptAt,
		s.LastError, s.RunID, s.StartedAt, s.CreatedAt, s.UpdatedAt, s.SignalName, s.SignalInput, s.TraceContext, s.RequestID}
}

// queryRow runs query on db's connection (its transaction, or the pool)
// and scans its first row into dest; it reports whether there was one.
// Unlike GORM's Row, whose fallback in a transaction that could not begin
// hands back a row failing with "context canceled", it returns the
// statement's own error, which the request's error handler maps (a 503
// while the database is away).
func queryRow(db *gorm.DB, query string, args []any, dest ...any) (bool, error) {
	rows, err := db.Statement.ConnPool.QueryContext(db.Statement.Context, query, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	if err := rows.Close(); err != nil { // as Row.Scan: the statement's own error
		return false, err
	}
	return true, nil
}

// RecordWithStart runs insert — an INSERT … ON CONFLICT DO NOTHING
// RETURNING of the caller's, whose one returned row is scanned into dest —
// and records the workflow start s only if insert wrote its row; it
// reports whether it did. PostgreSQL does both in one statement (a
// data-modifying WITH: no BEGIN and COMMIT around two INSERTs), SQLite in
// one transaction (a savepoint when db is one already). A start already recorded under s's
// workflow ID is an error, and then nothing is written.
func RecordWithStart(db *gorm.DB, insert string, args []any, s *WorkflowStart, dest ...any) (bool, error) {
	if s.SignalName != "" {
		return false, errors.New("RecordWithStart: a signal row goes through InsertWorkflowSignal")
	}
	if db.Error != nil {
		// A transaction whose BEGIN failed (the database went away) has no
		// connection to run the statement on, only its error.
		return false, db.Error
	}
	prepareOutboxRow(s)
	now := Now()
	s.CreatedAt, s.UpdatedAt = now, now
	if database.DialectFor(db) == database.Postgres {
		query := database.Numbered("WITH recorded AS (" + insert + "),\n" +
			"started AS (INSERT INTO workflow_starts (" + startColumns + ") SELECT " + startPlaceholders + " FROM recorded RETURNING 1)\n" +
			"SELECT recorded.* FROM recorded, started")
		// No row: the intake was there already, and nothing was written.
		return queryRow(db, query, slices.Concat(args, startValues(s)), dest...)
	}
	written := false
	err := db.Transaction(func(tx *gorm.DB) error {
		err := tx.Raw(insert, args...).Row().Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if ok, err := InsertWorkflowStart(tx, s); err != nil || !ok {
			return cmp.Or(err, fmt.Errorf("workflow %s: a start is already recorded", s.WorkflowID))
		}
		written = true
		return nil
	})
	return written, err
}
