package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// slaRoundsPerRun is how many times a run reads the timers before it
// continues as new.
const slaRoundsPerRun = 200

// TicketSLA holds one ticket's SLA timers: the warning and the
// breach of each running clock (models.SLATimers). Every change that moves
// the ticket's clocks wakes it through the outbox, in the transaction of
// the change (signal-with-start: a ticket without a running workflow gets
// one); it then reads its timers again. A timer that fires is recorded by
// FireSLATimer, which fires each warning and breach once, however late —
// a timer due while the worker or Temporal was down fires when they are
// back. The workflow ends when the ticket is closed or deleted (each wakes
// it): a solved ticket may be reopened, and Temporal would not start a
// finished workflow's ID again. It continues as new after a while, to keep
// its history short.
//
// It runs as names.TicketSLAWorkflow.
//
// Its two database steps, reading the timers and firing one, are local
// activities (in.LocalSteps): each runs inside the workflow task that
// needs it, recorded as a marker, where an activity would take a round
// trip through the server's activity queue and a second workflow task:
// a ticket with a timer costs a third less CPU from its create to its
// breach (`make bench`, the SLA timers row; docs/decisions.md).
func TicketSLA(ctx workflow.Context, in models.TicketSLAInput) error {
	var a *activities.SLA
	step := databaseSteps(ctx, in.LocalSteps)
	wake := workflow.GetSignalChannel(ctx, names.SignalTicketSLAWake)
	var err error
	var plan *activities.SLAPlan // the timers as the last firing left them
	for range slaRoundsPerRun {
		// A wake-up (read here, or left by the select below) means the
		// clocks moved since the timers were read: read them again.
		if drain(wake) || plan == nil {
			plan = new(activities.SLAPlan)
			if err := step(a.SLATimers, in.TicketID).Get(ctx, plan); err != nil {
				return err
			}
		}
		if !plan.Live {
			if drain(wake) {
				plan = nil
				continue // a change came in meanwhile: read again
			}
			return nil
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		woken := false
		sel.AddReceive(wake, func(workflow.ReceiveChannel, bool) { woken = true })
		var next *models.SLATimer
		if len(plan.Timers) > 0 {
			next = &plan.Timers[0]
			wait := max(next.At.Sub(workflow.Now(ctx)), time.Millisecond)
			sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) {})
		}
		sel.Select(ctx)
		cancel()
		if woken || next == nil {
			plan = nil
			continue
		}
		if plan, err = fireSLATimer(ctx, in, step, *next); err != nil {
			return err
		}
	}
	in.LocalSteps = true // a new run has no history to replay
	return workflow.NewContinueAsNewError(ctx, names.TicketSLAWorkflow, in)
}

// fireSLATimer fires timer and starts the push of each notification it
// stored for a member with a browser subscribed, as a workflow of its own
// (NotificationDelivery), so that a slow push service never holds up the
// ticket's next timer. It returns the ticket's timers after the firing.
func fireSLATimer(ctx workflow.Context, in models.TicketSLAInput, step func(any, ...any) workflow.Future, timer models.SLATimer) (*activities.SLAPlan, error) {
	var a *activities.SLA
	var fired activities.SLAFired
	if err := step(a.FireSLATimer, in.TicketID, timer).Get(ctx, &fired); err != nil {
		return nil, err
	}
	for _, id := range fired.Push {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            names.NotificationDeliveryID(id),
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			TypedSearchAttributes: names.SearchAttributes(in.OrgID, names.KindNotificationDelivery),
		})
		child := workflow.ExecuteChildWorkflow(cctx, names.NotificationDeliveryWorkflow, models.NotificationDeliveryInput{NotificationID: id, OrgID: in.OrgID})
		var started workflow.Execution
		if err := child.GetChildWorkflowExecution().Get(ctx, &started); err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			return nil, err
		}
	}
	return &fired.Plan, nil
}

// drain empties a signal channel and reports whether it held anything.
func drain(ch workflow.ReceiveChannel) bool {
	got := false
	for ch.ReceiveAsync(nil) {
		got = true
	}
	return got
}
