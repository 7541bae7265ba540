package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// The timer is durable: the test clock skips the four days, then the
// ticket is closed if it is still in the same solved state.
func TestTicketAutoCloseWaitsThenCloses(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Tickets{})
	var a *activities.Tickets
	start := env.Now()
	var firedAt time.Time
	env.OnActivity(a.CloseIfStillSolved, mock.Anything, "t-1", 2).Return(func(_ context.Context, _ string, _ int) (bool, error) {
		firedAt = env.Now()
		return true, nil
	}).Once()
	env.ExecuteWorkflow(workflows.TicketAutoClose, workflows.TicketAutoCloseInput{TicketID: "t-1", SolveCount: 2, After: 96 * time.Hour})
	var closed bool
	if err := env.GetWorkflowResult(&closed); err != nil || !closed {
		t.Fatalf("closed %v err %v", closed, err)
	}
	if got := firedAt.Sub(start); got < 96*time.Hour {
		t.Fatalf("closed after %s, want 96h", got)
	}
	env.AssertExpectations(t)
}

// The canceller waits while the timer's start is still in the outbox, then
// asks Temporal to cancel it.
func TestTicketAutoCloseCancelWaitsForTheTimerThenCancelsIt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Tickets{})
	var a *activities.Tickets
	timerID := names.TicketAutoCloseID("t-1", 3)
	env.OnActivity(a.TimerStartState, mock.Anything, timerID).Return(activities.TimerPending, nil).Twice()
	env.OnActivity(a.TimerStartState, mock.Anything, timerID).Return(activities.TimerStarted, nil).Once()
	cancelled := 0
	env.OnRequestCancelExternalWorkflow(mock.Anything, timerID, "").Return(func(string, string, string) error {
		cancelled++
		return nil
	}).Once()
	env.ExecuteWorkflow(workflows.TicketAutoCloseCancel, workflows.TicketAutoCloseCancelInput{TicketID: "t-1", SolveCount: 3})
	if err := env.GetWorkflowError(); err != nil || cancelled != 1 {
		t.Fatalf("cancelled %d times, err %v", cancelled, err)
	}
	env.AssertExpectations(t)
}

// A timer that is gone already (fired, terminated), or that never started,
// needs nothing: the canceller succeeds.
func TestTicketAutoCloseCancelAcceptsAGoneTimer(t *testing.T) {
	for _, tc := range []struct {
		state     string
		cancelErr error
	}{
		{activities.TimerStarted, &temporal.UnknownExternalWorkflowExecutionError{}},
		{activities.TimerNone, nil},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.RegisterActivity(&activities.Tickets{})
		var a *activities.Tickets
		timerID := names.TicketAutoCloseID("t-2", 1)
		env.OnActivity(a.TimerStartState, mock.Anything, timerID).Return(tc.state, nil).Once()
		if tc.state == activities.TimerStarted {
			env.OnRequestCancelExternalWorkflow(mock.Anything, timerID, "").Return(tc.cancelErr).Once()
		}
		env.ExecuteWorkflow(workflows.TicketAutoCloseCancel, workflows.TicketAutoCloseCancelInput{TicketID: "t-2", SolveCount: 1})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatalf("%s: %v", tc.state, err)
		}
		env.AssertExpectations(t)
	}
}

// A cancelled timer ends cancelled without closing anything.
func TestTicketAutoCloseEndsWhenCancelled(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Tickets{})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(workflows.TicketAutoClose, workflows.TicketAutoCloseInput{TicketID: "t-3", SolveCount: 1, After: 96 * time.Hour})
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("want a cancelled workflow, got %v", err)
	}
}
