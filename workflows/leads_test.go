package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
)

const (
	intakeID = "01a1fec5-0000-7000-8000-00000000aaaa"
	leadID   = "01a1fec5-0000-7000-8000-00000000bbbb"
	agentID  = "01a1fec5-0000-7000-8000-00000000cccc"
)

func leadEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Leads{})
	env.RegisterActivity(&activities.Push{})
	return env
}

func TestLeadIntakeAssignsAndNotifies(t *testing.T) {
	env := leadEnv()
	var a *activities.Leads
	env.OnActivity(a.UpsertLead, mock.Anything, intakeID).Return(activities.LeadOutcome{LeadID: leadID}, nil).Once()
	env.OnActivity(a.LogIntakeActivity, mock.Anything, intakeID, leadID).Return(nil).Once()
	env.OnActivity(a.AssignLead, mock.Anything, leadID).Return(agentID, nil).Once()
	env.OnActivity(a.NotifyAssignee, mock.Anything, intakeID, leadID, agentID).Return("n-1", nil).Once()
	var push *activities.Push
	env.OnActivity(push.Deliver, mock.Anything, "n-1").Return(activities.DeliveryResult{}, nil).Once()
	env.OnActivity(a.CompleteIntake, mock.Anything, intakeID).Return(nil).Once()
	env.ExecuteWorkflow(workflows.LeadIntake, workflows.LeadIntakeInput{IntakeID: intakeID})
	var out workflows.LeadIntakeResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.LeadID != leadID || out.AssignedToID != agentID || out.Duplicate {
		t.Fatalf("result %+v", out)
	}
	env.AssertExpectations(t)
}

// A duplicate merges into the existing lead; with no AGENT nobody is
// notified, and the intake still completes.
func TestLeadIntakeDuplicateWithoutAgents(t *testing.T) {
	env := leadEnv()
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity((*activities.Leads)(nil).NotifyAssignee, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return("n-1", nil).Maybe()
	env.OnActivity((*activities.Push)(nil).Deliver, mock.Anything, mock.Anything).Return(activities.DeliveryResult{}, nil).Maybe()
	var a *activities.Leads
	env.OnActivity(a.UpsertLead, mock.Anything, intakeID).Return(activities.LeadOutcome{LeadID: leadID, Duplicate: true}, nil)
	env.OnActivity(a.LogIntakeActivity, mock.Anything, intakeID, leadID).Return(nil)
	env.OnActivity(a.AssignLead, mock.Anything, leadID).Return("", nil)
	env.OnActivity(a.CompleteIntake, mock.Anything, intakeID).Return(nil).Once()
	env.ExecuteWorkflow(workflows.LeadIntake, workflows.LeadIntakeInput{IntakeID: intakeID})
	var out workflows.LeadIntakeResult
	if err := env.GetWorkflowResult(&out); err != nil || !out.Duplicate || out.AssignedToID != "" {
		t.Fatalf("result %+v %v", out, err)
	}
	started.assertNotStarted(t, "NotifyAssignee", "Deliver")
	env.AssertExpectations(t)
}

// A failing activity (database briefly down) is retried, not dropped.
func TestLeadIntakeRetriesFailedActivities(t *testing.T) {
	env := leadEnv()
	var a *activities.Leads
	logCalls := 0
	env.OnActivity(a.UpsertLead, mock.Anything, intakeID).Return(activities.LeadOutcome{LeadID: leadID}, nil)
	env.OnActivity(a.LogIntakeActivity, mock.Anything, intakeID, leadID).Return(func(context.Context, string, string) error {
		logCalls++
		if logCalls <= 3 {
			return errors.New("database is locked")
		}
		return nil
	})
	env.OnActivity(a.AssignLead, mock.Anything, leadID).Return(agentID, nil)
	env.OnActivity(a.NotifyAssignee, mock.Anything, intakeID, leadID, agentID).Return("", nil)
	env.OnActivity(a.CompleteIntake, mock.Anything, intakeID).Return(nil)
	env.ExecuteWorkflow(workflows.LeadIntake, workflows.LeadIntakeInput{IntakeID: intakeID})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if logCalls != 4 {
		t.Fatalf("LogIntakeActivity ran %d times, want 4", logCalls)
	}
}
