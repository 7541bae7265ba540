package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
)

const orgID = "01a1fec5-0000-7000-8000-000000000001"

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Orgs{})
	return env
}

func TestOrgRegistrationHappyPath(t *testing.T) {
	env := newEnv(t)
	var a *activities.Orgs
	var order []string
	for name, fn := range map[string]any{"register": a.RegisterOrg, "members": a.SyncMembers, "seed": a.SeedDefaults, "active": a.MarkOrgActive} {
		env.OnActivity(fn, mock.Anything, orgID).Return(func(_ context.Context, _ string) error { order = append(order, name); return nil }).Once()
	}
	env.ExecuteWorkflow(workflows.OrgRegistration, workflows.OrgInput{OrgID: orgID})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	want := []string{"register", "members", "seed", "active"}
	if len(order) != len(want) {
		t.Fatalf("steps %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("steps %v, want %v", order, want)
		}
	}
	env.AssertExpectations(t)
}

// A permanent refusal by the identity service is not retried: the saga
// compensates (deregisters) and records the reason on the organization.
func TestOrgRegistrationCompensatesOnPermanentFailure(t *testing.T) {
	env := newEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity((*activities.Orgs)(nil).SeedDefaults, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity((*activities.Orgs)(nil).MarkOrgActive, mock.Anything, mock.Anything).Return(nil).Maybe()
	var a *activities.Orgs
	refusal := temporal.NewNonRetryableApplicationError("The identity service refused to register the members (422 validation_failed).",
		activities.ErrTypeIdentityRejected, errors.New("422"))
	env.OnActivity(a.RegisterOrg, mock.Anything, orgID).Return(nil).Once()
	env.OnActivity(a.SyncMembers, mock.Anything, orgID).Return(refusal).Once()
	env.OnActivity(a.DeregisterOrg, mock.Anything, orgID).Return(nil).Once()
	var reason string
	env.OnActivity(a.MarkOrgFailed, mock.Anything, orgID, mock.Anything).Return(func(_ context.Context, _ string, r string) error { reason = r; return nil }).Once()

	env.ExecuteWorkflow(workflows.OrgRegistration, workflows.OrgInput{OrgID: orgID})
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("the workflow should fail (visible to operators)")
	}
	if reason != "The identity service refused to register the members (422 validation_failed)." {
		t.Fatalf("failure reason %q", reason)
	}
	env.AssertExpectations(t)
	started.assertNotStarted(t, "SeedDefaults", "MarkOrgActive")
}

// A flapping identity service is retried with backoff until it answers.
func TestOrgRegistrationRetriesTransientFailures(t *testing.T) {
	env := newEnv(t)
	started := recordStarted(env)
	// Mocked so that a wrong call runs on and the recorder reports it.
	env.OnActivity((*activities.Orgs)(nil).DeregisterOrg, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity((*activities.Orgs)(nil).MarkOrgFailed, mock.Anything, mock.Anything, mock.Anything).Return(nil).Maybe()
	var a *activities.Orgs
	calls := 0
	env.OnActivity(a.RegisterOrg, mock.Anything, orgID).Return(func(_ context.Context, _ string) error {
		calls++
		if calls < 4 {
			return errors.New("identity service PUT /v1/orgs: connection refused")
		}
		return nil
	})
	env.OnActivity(a.SyncMembers, mock.Anything, orgID).Return(nil)
	env.OnActivity(a.SeedDefaults, mock.Anything, orgID).Return(nil)
	env.OnActivity(a.MarkOrgActive, mock.Anything, orgID).Return(nil).Once()

	env.ExecuteWorkflow(workflows.OrgRegistration, workflows.OrgInput{OrgID: orgID})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	if calls != 4 {
		t.Fatalf("RegisterOrg called %d times, want 4 (3 failures, then success)", calls)
	}
	started.assertNotStarted(t, "DeregisterOrg", "MarkOrgFailed")
}

// When the retries run out, the saga compensates with a generic reason.
func TestOrgRegistrationGivesUpAfterRetries(t *testing.T) {
	env := newEnv(t)
	var a *activities.Orgs
	env.OnActivity(a.RegisterOrg, mock.Anything, orgID).Return(errors.New("connection refused"))
	env.OnActivity(a.DeregisterOrg, mock.Anything, orgID).Return(nil).Once()
	var reason string
	env.OnActivity(a.MarkOrgFailed, mock.Anything, orgID, mock.Anything).Return(func(_ context.Context, _ string, r string) error { reason = r; return nil }).Once()
	env.ExecuteWorkflow(workflows.OrgRegistration, workflows.OrgInput{OrgID: orgID})
	if env.GetWorkflowError() == nil {
		t.Fatal("expected failure")
	}
	if reason == "" || reason == "connection refused" {
		t.Fatalf("reason %q should be the generic, non-leaking one", reason)
	}
	env.AssertExpectations(t)
}

func TestOrgSyncPushesNameThenMembers(t *testing.T) {
	env := newEnv(t)
	var a *activities.Orgs
	env.OnActivity(a.RegisterOrg, mock.Anything, orgID).Return(nil).Once()
	env.OnActivity(a.SyncMembers, mock.Anything, orgID).Return(nil).Once()
	env.ExecuteWorkflow(workflows.OrgSync, workflows.OrgInput{OrgID: orgID})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}
