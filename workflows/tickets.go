package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// TicketAutoCloseInput names the solved ticket and the generation of its
// solved state (how many times it has been solved); recorded by
// record.Tx.FollowTicketStatus.
type TicketAutoCloseInput = models.TicketAutoCloseInput

// TicketAutoClose waits on a durable timer, then closes the ticket unless it
// was reopened meanwhile. The timer survives worker and server restarts.
func TicketAutoClose(ctx workflow.Context, in TicketAutoCloseInput) (bool, error) {
	if err := workflow.Sleep(ctx, in.After); err != nil {
		return false, err
	}
	var a *activities.Tickets
	ctx = workflow.WithActivityOptions(ctx, dbOptions)
	var closed bool
	err := workflow.ExecuteActivity(ctx, a.CloseIfStillSolved, in.TicketID, in.SolveCount).Get(ctx, &closed)
	return closed, err
}

// TicketAutoCloseCancelInput names the timer to cancel: the ticket and the
// generation of the solved state it left.
type TicketAutoCloseCancelInput = models.TicketAutoCloseCancelInput

// Waiting for a timer whose start is still in the outbox: how often to look
// again, and for how long at most (the timer's close is a no-op anyway once
// the ticket has left that solved state; cancelling only tidies the UI).
const (
	cancelRecheck  = 30 * time.Second
	cancelPatience = 120
)

// TicketAutoCloseCancel cancels the auto-close timer of a solved state the
// ticket has left. Recorded through the outbox in the transaction that
// reopens, moves or deletes the ticket, so the request is never lost. The
// timer's own start may still be in the outbox (Temporal was down): then
// this waits for it to start, then cancels it. A timer that is already gone
// (fired, terminated) is fine.
func TicketAutoCloseCancel(ctx workflow.Context, in TicketAutoCloseCancelInput) error {
	timerID := names.TicketAutoCloseID(in.TicketID, in.SolveCount)
	var a *activities.Tickets
	actx := workflow.WithActivityOptions(ctx, dbOptions)
	for range cancelPatience {
		var state string
		if err := workflow.ExecuteActivity(actx, a.TimerStartState, timerID).Get(ctx, &state); err != nil {
			return err
		}
		switch state {
		case activities.TimerPending:
			if err := workflow.Sleep(ctx, cancelRecheck); err != nil {
				return err
			}
			continue
		case activities.TimerStarted:
			err := workflow.RequestCancelExternalWorkflow(ctx, timerID, "").Get(ctx, nil)
			var gone *temporal.UnknownExternalWorkflowExecutionError
			if errors.As(err, &gone) {
				return nil
			}
			return err
		}
		return nil // never recorded, or refused by Temporal: no timer runs
	}
	return nil
}
