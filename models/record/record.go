// Package record records the work a change sets off — workflow starts,
// signals to workflows, change events for webhook endpoints, notifications
// to members — in the database transaction of the change itself (a
// transactional outbox): a change that rolls back records nothing, one
// that commits is carried out. The outbox relay (api/outbox) dispatches the
// rows to Temporal; workflow IDs are business keys (workflows/names), so a
// row is started once however often it is dispatched.
//
// It is the one way every layer records work: a request through
// outbox.Starter.In (which wakes the relay when the request commits),
// activities and `suite admin` through In with their own context. Every
// row carries the trace and the request id of the context it was recorded
// in, so the workflow it starts continues the request's trace and logs.
package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// Start describes one workflow to start.
type Start struct {
	// WorkflowID is built from a business key by a names.*ID function.
	WorkflowID string
	// Workflow is the registered workflow type name.
	Workflow string
	// Input is the workflow's single argument; it is stored as JSON.
	Input any
	// OrgID and Kind become the OrgId and Kind search attributes.
	OrgID string
	Kind  string
}

// Signal describes one signal to deliver to a workflow.
type Signal struct {
	// WorkflowID is the workflow to signal (its current run).
	WorkflowID string
	// Name is the signal name (workflows/names).
	Name string
	// Input is the signal's single argument; it is stored as JSON.
	Input any
	// OrgID and Kind are the workflow's: the signal takes its turn among
	// that organization's and kind's rows, after the workflow's start
	// (models.DueStarts). Start's, when Start is set.
	OrgID, Kind string
	// Start, when set, makes the delivery a signal-with-start: if no run of
	// WorkflowID is open and none ever ran, the workflow is started with
	// Start.Workflow and Start.Input and receives the signal first thing.
	// Use it when the workflow's own start may still be waiting in the
	// outbox. (Start.WorkflowID is ignored.) Without it, a signal to a
	// workflow that is not running is skipped.
	Start *Start
}

// ErrDuplicate is returned by Tx.Start when a start with the same workflow ID
// was already recorded; callers treat it as "already under way".
var ErrDuplicate = errors.New("workflow start already recorded")

// Tx is a database transaction that can also record work: it is carried
// out once the transaction commits, and never if it rolls back.
type Tx struct {
	*gorm.DB
	// recorded, when set, is called after each row recorded with the row's
	// organization: the API arranges the relay's wake-up once the
	// transaction commits.
	recorded func(orgID string)
	// traceContext and requestID are the trace and the id of the request
	// the transaction serves, stored with every row it records.
	traceContext, requestID string
	// woken are the webhook endpoints this Tx has woken (Emit).
	woken map[string]bool
	// cause, when set, is the automation rule whose step makes the
	// changes (As).
	cause *models.AutomationCause
}

// In is tx able to record work, for the trace and request id of ctx.
// recorded, when not nil, is called with the organization of every row
// recorded; the API uses it to wake its relay once the request commits
// (outbox.Starter.In). Activities pass nil: the worker runs no relay, and
// the rows they record are dispatched by an API's relay at its next poll.
func In(ctx context.Context, tx *gorm.DB, recorded func(orgID string)) *Tx {
	return &Tx{DB: tx, recorded: recorded, traceContext: telemetry.Inject(ctx), requestID: telemetry.RequestID(ctx)}
}

// Transact runs fn in a transaction of its own on db, recording for ctx:
// what fn records commits or rolls back with its writes.
func Transact(ctx context.Context, db *gorm.DB, fn func(tx *Tx) error) error {
	return db.WithContext(ctx).Transaction(func(gtx *gorm.DB) error {
		return fn(In(ctx, gtx, nil))
	})
}

// Savepoint runs fn in a savepoint of the transaction (GORM's nested
// Transaction): when fn fails, its writes and the work it recorded are
// undone and the transaction goes on, so that the caller can still write
// why — an audit entry of a refused action.
func (tx *Tx) Savepoint(fn func(sp *Tx) error) error {
	return tx.DB.Transaction(func(db *gorm.DB) error {
		sp := *tx
		sp.DB = db
		sp.woken = nil // a rolled-back savepoint's wake-ups are undone with it
		err := fn(&sp)
		if err == nil {
			for id := range sp.woken {
				tx.markWoken(id)
			}
		}
		return err
	})
}

// Start records s in the transaction. It is dispatched only if the
// transaction commits; ErrDuplicate when a start of s.WorkflowID was
// recorded before.
func (tx *Tx) Start(s Start) error {
	row, err := tx.startRow(s)
	if err != nil {
		return err
	}
	ok, err := models.InsertWorkflowStart(tx.DB, row)
	if err != nil {
		return err
	}
	if !ok {
		return ErrDuplicate
	}
	tx.noteRecorded(s.OrgID)
	return nil
}

// InsertWith runs insert, an INSERT … ON CONFLICT DO NOTHING RETURNING
// (its one row scanned into dest), and records start only if insert wrote
// its row: one statement on PostgreSQL (models.RecordWithStart), so it
// can be a request's one statement (web.OneStatementTx). It reports
// whether the row was written; when it was not, nothing was.
func (tx *Tx) InsertWith(insert string, args []any, start Start, dest ...any) (bool, error) {
	row, err := tx.startRow(start)
	if err != nil {
		return false, err
	}
	written, err := models.RecordWithStart(tx.DB, insert, args, row, dest...)
	if written && err == nil {
		tx.noteRecorded(start.OrgID)
	}
	return written, err
}

// startRow is the outbox row of s.
func (tx *Tx) startRow(s Start) (*models.WorkflowStart, error) {
	input, err := json.Marshal(s.Input)
	if err != nil {
		return nil, fmt.Errorf("encode input of %s: %w", s.WorkflowID, err)
	}
	return &models.WorkflowStart{
		WorkflowID: s.WorkflowID, WorkflowType: s.Workflow, TaskQueue: names.TaskQueue, Input: string(input),
		OrgID: s.OrgID, Kind: s.Kind, TraceContext: tx.traceContext, RequestID: tx.requestID,
	}, nil
}

// Signal records sig in the transaction. It is delivered only if the
// transaction commits; a workflow that has already finished is not
// signalled (the row ends as skipped).
func (tx *Tx) Signal(sig Signal) error {
	input, err := json.Marshal(sig.Input)
	if err != nil {
		return fmt.Errorf("encode signal %s to %s: %w", sig.Name, sig.WorkflowID, err)
	}
	row := &models.WorkflowStart{WorkflowID: sig.WorkflowID, TaskQueue: names.TaskQueue, SignalName: sig.Name, SignalInput: string(input),
		OrgID: sig.OrgID, Kind: sig.Kind, TraceContext: tx.traceContext, RequestID: tx.requestID}
	if sig.Start != nil {
		startInput, err := json.Marshal(sig.Start.Input)
		if err != nil {
			return fmt.Errorf("encode input of %s: %w", sig.WorkflowID, err)
		}
		row.WorkflowType, row.Input, row.OrgID, row.Kind = sig.Start.Workflow, string(startInput), sig.Start.OrgID, sig.Start.Kind
	}
	if err := models.InsertWorkflowSignal(tx.DB, row); err != nil {
		return err
	}
	tx.noteRecorded(row.OrgID)
	return nil
}

func (tx *Tx) noteRecorded(orgID string) {
	if tx.recorded != nil {
		tx.recorded(orgID)
	}
}
