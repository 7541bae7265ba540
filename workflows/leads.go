package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
)

// LeadIntakeInput names the intake to process.
type LeadIntakeInput struct {
	IntakeID string `json:"intakeId"`
	OrgID    string `json:"orgId"`
}

// LeadIntakeResult is what the intake became.
type LeadIntakeResult struct {
	LeadID       string `json:"leadId"`
	Duplicate    bool   `json:"duplicate"`
	AssignedToID string `json:"assignedToId,omitempty"`
}

// dbOptions: database steps retry until they succeed — a lead accepted by
// the API is never dropped — except when the data itself is missing.
var dbOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeNotFound, activities.ErrTypeBadPayload},
	},
}

// localDBOptions run the same database steps as local activities (version
// 1 of LeadIntake): they execute inside the workflow task, recorded as
// markers, instead of each going through the Temporal server's activity
// queue — five round trips and their persistence writes fewer per lead. The
// retry policy is dbOptions'; ScheduleToClose bounds the retries, which for
// a local activity default to its StartToClose.
var localDBOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    dbOptions.StartToCloseTimeout,
	ScheduleToCloseTimeout: 7 * 24 * time.Hour,
	RetryPolicy:            dbOptions.RetryPolicy,
}

// intakeLocalSteps is the version change that moved LeadIntake's database
// steps to local activities; executions started before it replay as
// version DefaultVersion, with regular activities.
const intakeLocalSteps = "intake-local-db-steps"

// dbSteps returns how this execution runs a database step: as a local
// activity from version 1 on, as a regular activity before.
func dbSteps(ctx workflow.Context) func(activity any, args ...any) workflow.Future {
	return databaseSteps(ctx, workflow.GetVersion(ctx, intakeLocalSteps, workflow.DefaultVersion, 1) != workflow.DefaultVersion)
}

// databaseSteps returns how an execution runs its database steps: as
// local activities (localDBOptions), or, for an execution whose history
// holds them as regular activities, as those (dbOptions).
func databaseSteps(ctx workflow.Context, local bool) func(activity any, args ...any) workflow.Future {
	if !local {
		actx := workflow.WithActivityOptions(ctx, dbOptions)
		return func(activity any, args ...any) workflow.Future {
			return workflow.ExecuteActivity(actx, activity, args...)
		}
	}
	lctx := workflow.WithLocalActivityOptions(ctx, localDBOptions)
	return func(activity any, args ...any) workflow.Future {
		return workflow.ExecuteLocalActivity(lctx, activity, args...)
	}
}

// LeadIntake turns an accepted web-form submission into a lead: dedupe by
// e-mail (an authenticated duplicate merges into the existing lead; an
// anonymous one is only recorded on its timeline), log it on the timeline,
// score it, assign it round-robin to an AGENT and notify them (stored, and
// pushed to their browsers). A submission from an address erased on
// request is refused and forgotten.
func LeadIntake(ctx workflow.Context, in LeadIntakeInput) (LeadIntakeResult, error) {
	var a *activities.Leads
	step := dbSteps(ctx)
	var out activities.LeadOutcome
	if err := step(a.UpsertLead, in.IntakeID).Get(ctx, &out); err != nil {
		return LeadIntakeResult{}, err
	}
	if out.Refused { // an erased address: nothing more to do
		return LeadIntakeResult{}, nil
	}
	if err := step(a.LogIntakeActivity, in.IntakeID, out.LeadID).Get(ctx, nil); err != nil {
		return LeadIntakeResult{}, err
	}
	var assignee string
	if !out.RecordedOnly { // an anonymous duplicate changes nothing, assignment included
		if err := step(a.AssignLead, out.LeadID).Get(ctx, &assignee); err != nil {
			return LeadIntakeResult{}, err
		}
	}
	if assignee != "" {
		var notificationID string
		if err := step(a.NotifyAssignee, in.IntakeID, out.LeadID, assignee).Get(ctx, &notificationID); err != nil {
			return LeadIntakeResult{}, err
		}
		if notificationID != "" {
			// Push it to the agent's browsers; a push failure does not
			// undo the intake (the notification stays listed in the API).
			var push *activities.Push
			pctx := workflow.WithActivityOptions(ctx, pushOptions)
			if err := workflow.ExecuteActivity(pctx, push.Deliver, notificationID).Get(pctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("lead notification push failed", "notificationId", notificationID, "error", err)
			}
		}
	}
	if err := step(a.CompleteIntake, in.IntakeID).Get(ctx, nil); err != nil {
		return LeadIntakeResult{}, err
	}
	return LeadIntakeResult{LeadID: out.LeadID, Duplicate: out.Duplicate, AssignedToID: assignee}, nil
}
