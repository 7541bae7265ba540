package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
)

const invitationID = "01a1fec5-0000-7000-8000-00000000eeee"

func invitationEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Invitations{})
	return env
}

// An SMTP server that answers 4xx ("try later") or cannot be reached is
// retried with backoff until the e-mail goes out.
func TestInvitationEmailRetriesTemporaryFailures(t *testing.T) {
	env := invitationEnv()
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity((*activities.Invitations)(nil).MarkInvitationEmailFailed, mock.Anything, mock.Anything, mock.Anything).Return(nil).Maybe()
	var a *activities.Invitations
	temporary := temporal.NewApplicationError("the SMTP server answered 451: try again later", activities.ErrTypeSMTPTemporary)
	env.OnActivity(a.SendInvitationEmail, mock.Anything, invitationID).Return(activities.InvitationEmailResult{}, temporary).Twice()
	env.OnActivity(a.SendInvitationEmail, mock.Anything, invitationID).Return(activities.InvitationEmailResult{Sent: true}, nil).Once()
	env.ExecuteWorkflow(workflows.InvitationEmail, workflows.InvitationEmailInput{InvitationID: invitationID})
	var out activities.InvitationEmailResult
	if err := env.GetWorkflowResult(&out); err != nil || !out.Sent {
		t.Fatalf("result %+v %v", out, err)
	}
	env.AssertExpectations(t)
	started.assertNotStarted(t, "MarkInvitationEmailFailed")
}

// A 5xx answer is final: no retry; the invitation is marked failed with
// the server's answer and the workflow fails visibly.
func TestInvitationEmailGivesUpOnPermanentRejection(t *testing.T) {
	env := invitationEnv()
	var a *activities.Invitations
	rejected := temporal.NewNonRetryableApplicationError("the SMTP server answered 550: no such mailbox", activities.ErrTypeSMTPRejected, nil)
	env.OnActivity(a.SendInvitationEmail, mock.Anything, invitationID).Return(activities.InvitationEmailResult{}, rejected).Once()
	env.OnActivity(a.MarkInvitationEmailFailed, mock.Anything, invitationID, "the SMTP server answered 550: no such mailbox").Return(nil).Once()
	env.ExecuteWorkflow(workflows.InvitationEmail, workflows.InvitationEmailInput{InvitationID: invitationID})
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("the workflow succeeded")
	}
	env.AssertExpectations(t)
}

// Retries are bounded: after the policy's attempts the workflow gives up
// the same way.
func TestInvitationEmailStopsRetryingAfterItsAttempts(t *testing.T) {
	env := invitationEnv()
	var a *activities.Invitations
	temporary := temporal.NewApplicationError("the SMTP server could not be reached", activities.ErrTypeSMTPTemporary)
	env.OnActivity(a.SendInvitationEmail, mock.Anything, invitationID).Return(activities.InvitationEmailResult{}, temporary).Times(12)
	env.OnActivity(a.MarkInvitationEmailFailed, mock.Anything, invitationID, mock.Anything).Return(nil).Once()
	env.ExecuteWorkflow(workflows.InvitationEmail, workflows.InvitationEmailInput{InvitationID: invitationID})
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("the workflow succeeded")
	}
	env.AssertExpectations(t)
}
