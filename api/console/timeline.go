package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// event is one line of a change's timeline.
type event struct {
	At   time.Time
	What string
	// Detail says more: who, what Stripe answered, the error.
	Detail string
	// Tone is "ok", "fail" or "" (the page colours the line by it).
	Tone string
	URL  string
}

// timeline is what happened to a change, oldest first, from three
// sources: the database (the request, the retries, the Stripe webhook
// events routed to it, the outcome), and each workflow run's history in
// Temporal (the run, every Stripe call and database step as an activity,
// the webhook events it was signalled). When Temporal cannot be read, the
// timeline says so and shows the rest. runOpen tells whether the latest
// run is still going, as far as its history says.
func (h *handler) timeline(ctx context.Context, ch *models.SubscriptionChange, retries []models.SubscriptionChangeRetry) (out []event, runOpen bool, err error) {
	out = []event{{At: ch.CreatedAt, What: "Requested",
		Detail: fmt.Sprintf("%s from %s to %s (%s) by %s", ch.Kind, ch.FromPlan, ch.ToPlan, ch.Interval, ch.RequestedBy)}}
	for _, r := range retries {
		out = append(out, event{At: r.CreatedAt, What: fmt.Sprintf("Re-run %d requested", r.Number),
			Detail: fmt.Sprintf("by %s, from step %s (failed with %s)", r.RequestedBy, r.FromStep, r.ErrorCode)})
	}
	var stripeEvents []models.StripeEvent
	if err := h.d.DB.WithContext(ctx).Select("id", "type", "outcome", "received_at").
		Where("org_id = ? AND change_id = ?", ch.OrgID, ch.ID).Order("received_at").Find(&stripeEvents).Error; err != nil {
		return nil, false, err
	}
	for _, e := range stripeEvents {
		out = append(out, event{At: e.ReceivedAt, What: "Stripe webhook " + e.Type, Detail: "event " + e.ID + ": " + e.Outcome})
	}
	// One deadline for every run's history: a slow Temporal costs the page
	// temporalTimeout, not that much per run.
	tctx, cancel := context.WithTimeout(ctx, temporalTimeout)
	defer cancel()
	for r := 0; r <= ch.Retry(); r++ {
		events, closed := h.runEvents(tctx, names.SubscriptionChangeID(ch.OrgID, ch.ID, r), r+1)
		out, runOpen = append(out, events...), !closed
	}
	switch {
	case ch.Status == models.ChangeApplied && ch.CompletedAt != nil:
		out = append(out, event{At: *ch.CompletedAt, What: "Applied", Detail: "the organization is on " + ch.ToPlan, Tone: "ok"})
	case ch.Status == models.ChangeFailed:
		out = append(out, event{At: ch.UpdatedAt, What: "Failed at step " + ch.Step, Detail: ch.LastErrorCode + ": " + ch.LastErrorMessage, Tone: "fail"})
	case !models.IsOpenChange(ch.Status):
		out = append(out, event{At: ch.UpdatedAt, What: "Ended " + ch.Status, Detail: ch.LastErrorMessage})
	}
	slices.SortStableFunc(out, func(a, b event) int { return a.At.Compare(b.At) })
	return out, runOpen, nil
}

// runEvents reads one workflow run's history: its start and end, each
// activity's outcome (the Stripe calls), and the signals it received;
// closed tells whether the run has ended (or cannot be read: nothing to
// wait for).
func (h *handler) runEvents(ctx context.Context, workflowID string, number int) (out []event, closed bool) {
	url := h.temporalUI.Workflow(workflowID)
	if h.d.Temporal == nil {
		return []event{{At: h.d.Now(), What: fmt.Sprintf("Run %d", number), Detail: "Temporal is not configured for this process", URL: url}}, true
	}
	activities := map[int64]string{} // scheduled event id → activity type
	it := h.d.Temporal.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return append(out, event{At: h.d.Now(), What: fmt.Sprintf("Run %d not in Temporal", number),
				Detail: "not started yet (its start waits in the outbox), or past the namespace's retention", URL: url}), true
		}
		if err != nil {
			return append(out, event{At: h.d.Now(), What: fmt.Sprintf("Run %d: history not read", number),
				Detail: "Temporal did not answer (" + err.Error() + "); the Temporal UI has it", URL: url}), true
		}
		if ev, ok := historyEvent(e, number, activities); ok {
			ev.URL = url
			out = append(out, ev)
		}
		closed = closed || isClose(e.GetEventType())
	}
	return out, closed
}

// isClose tells whether an event ends its run.
func isClose(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// historyEvent is the timeline's line for a history event, if it has one.
func historyEvent(e *historypb.HistoryEvent, run int, activities map[int64]string) (event, bool) {
	at := e.GetEventTime().AsTime()
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		return event{At: at, What: fmt.Sprintf("Run %d started", run), Detail: "workflow " + e.GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()}, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		activities[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		return event{At: at, What: activities[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()], Detail: "done", Tone: "ok"}, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := e.GetActivityTaskFailedEventAttributes()
		return event{At: at, What: activities[a.GetScheduledEventId()], Detail: "failed: " + a.GetFailure().GetMessage(), Tone: "fail"}, true
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := e.GetActivityTaskTimedOutEventAttributes()
		return event{At: at, What: activities[a.GetScheduledEventId()], Detail: "timed out", Tone: "fail"}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		return event{At: at, What: "Signal " + e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName(), Detail: "relayed to the run"}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		return event{At: at, What: fmt.Sprintf("Run %d completed", run), Tone: "ok"}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		return event{At: at, What: fmt.Sprintf("Run %d failed", run), Detail: e.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage(), Tone: "fail"}, true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		return event{At: at, What: fmt.Sprintf("Run %d ended", run), Detail: e.GetEventType().String(), Tone: "fail"}, true
	}
	return event{}, false
}
