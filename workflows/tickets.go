package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
)

// TicketAutoCloseInput names the solved ticket and the generation of its
// solved state (how many times it has been solved).
type TicketAutoCloseInput struct {
	TicketID   string        `json:"ticketId"`
	SolveCount int           `json:"solveCount"`
	After      time.Duration `json:"after"`
}

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
