package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
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
