package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
)

// OrgInput names the organization a workflow works on.
type OrgInput struct {
	OrgID string `json:"orgId"`
}

// identityOptions: identity calls are quick; transient failures (network,
// 5xx) retry with backoff for about ten minutes, refusals (4xx) do not.
var identityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        15,
		NonRetryableErrorTypes: []string{activities.ErrTypeIdentityRejected, activities.ErrTypeNotFound},
	},
}

// compensationOptions try harder: leaving a half-registered organization
// behind is worse than a slow compensation.
var compensationOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeNotFound},
	},
}

// OrgRegistration provisions a new organization: register it and its owner
// in the identity service, seed defaults, mark it active. If a step fails
// for good, it compensates — deregisters what it registered — and marks
// the organization failed with a reason, then fails (visible in the UI).
func OrgRegistration(ctx workflow.Context, in OrgInput) (err error) {
	var a *activities.Orgs
	ctx = workflow.WithActivityOptions(ctx, identityOptions)
	log := workflow.GetLogger(ctx)

	defer func() {
		if err == nil {
			return
		}
		log.Warn("organization registration failed; compensating", "orgId", in.OrgID, "error", err)
		// Compensate even if the workflow is being cancelled.
		cctx, _ := workflow.NewDisconnectedContext(ctx)
		cctx = workflow.WithActivityOptions(cctx, compensationOptions)
		if cerr := workflow.ExecuteActivity(cctx, a.DeregisterOrg, in.OrgID).Get(cctx, nil); cerr != nil {
			log.Error("deregistration failed", "orgId", in.OrgID, "error", cerr)
		}
		if cerr := workflow.ExecuteActivity(cctx, a.MarkOrgFailed, in.OrgID, failureReason(err)).Get(cctx, nil); cerr != nil {
			log.Error("could not mark the organization failed", "orgId", in.OrgID, "error", cerr)
		}
	}()

	for _, step := range []any{a.RegisterOrg, a.SyncMembers, a.SeedDefaults, a.MarkOrgActive} {
		if err := workflow.ExecuteActivity(ctx, step, in.OrgID).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// failureReason is the operator- and user-facing reason stored on the
// organization: the refusal's own message, or a retry summary.
func failureReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeIdentityRejected {
		return appErr.Message()
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "Registration was cancelled."
	}
	return "The identity service could not be reached; registration gave up after retrying."
}

// OrgSync pushes an organization's current name and members to the
// identity service after a change. Each change starts its own run; every
// run sends the full current state, so their order does not matter.
func OrgSync(ctx workflow.Context, in OrgInput) error {
	var a *activities.Orgs
	ctx = workflow.WithActivityOptions(ctx, identityOptions)
	if err := workflow.ExecuteActivity(ctx, a.RegisterOrg, in.OrgID).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteActivity(ctx, a.SyncMembers, in.OrgID).Get(ctx, nil)
}
