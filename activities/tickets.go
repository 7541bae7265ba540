package activities

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// Tickets are the activities of ticket workflows.
type Tickets struct {
	DB *gorm.DB
}

// CloseIfStillSolved closes a ticket that is still in the solved state it
// was in when its auto-close timer started (generation solveCount). A
// ticket reopened meanwhile — or solved again, which starts a new timer —
// is left alone. It reports whether the ticket was closed.
func (a *Tickets) CloseIfStillSolved(ctx context.Context, ticketID string, solveCount int) (bool, error) {
	closed := false
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		var t models.Ticket
		err := models.LockForUpdate(tx.DB).Take(&t, "id = ?", ticketID).Error
		if err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil // deleted meanwhile: nothing to close
			}
			return err
		}
		if t.Status != models.TicketSolved || t.SolveCount != solveCount {
			return nil
		}
		now := models.Now()
		after := t
		after.Status, after.ClosedAt, after.UpdatedAt = models.TicketClosed, &now, now
		if err := tx.Model(&after).Select("status", "closed_at", "updated_at").Updates(&after).Error; err != nil {
			return err
		}
		closed = true
		if after.HasSLA() { // closed is final: its SLA workflow ends
			if err := tx.WakeTicketSLA(&after); err != nil {
				return err
			}
		}
		events, err := views.TicketChangeEvents(&t, &after)
		if err != nil {
			return err
		}
		if err := tx.Emit(events...); err != nil {
			return err
		}
		if t.CustomerID == nil {
			return nil
		}
		return models.RecordCustomerEvent(tx.DB, t.OrgID, *t.CustomerID, &t.ID, "ticket_closed",
			"Ticket #"+models.Itoa(t.Number)+" closed automatically after being solved", models.ActorSystem)
	})
	return closed, err
}

// States of a timer's workflow start, as TimerStartState reports them.
const (
	TimerPending = "pending" // recorded, not yet started
	TimerStarted = "started" // started (it may have finished since)
	TimerNone    = "none"    // never recorded, or refused by Temporal
)

// TimerStartState reports whether the workflow workflowID was started from
// the outbox yet (the canceller of an auto-close timer waits for it).
func (a *Tickets) TimerStartState(ctx context.Context, workflowID string) (string, error) {
	var row models.WorkflowStart
	err := a.DB.WithContext(ctx).Select("status").Take(&row, "workflow_id = ?", workflowID).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return TimerNone, nil
	case err != nil:
		return "", err
	case row.Status == models.StartPending:
		return TimerPending, nil
	case row.Status == models.StartStarted:
		return TimerStarted, nil
	}
	return TimerNone, nil
}
