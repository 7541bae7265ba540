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
		NonRetryableErrorTypes: []string{"NotFound", "BadPayload"},
	},
}

// LeadIntake turns an accepted web-form submission into a lead: dedupe by
// e-mail (an authenticated duplicate merges into the existing lead; an
// anonymous one is only recorded on its timeline), log it on the timeline,
// score it, assign it round-robin to an AGENT and notify them (stored, and
// pushed to their browsers).
func LeadIntake(ctx workflow.Context, in LeadIntakeInput) (LeadIntakeResult, error) {
	var a *activities.Leads
	ctx = workflow.WithActivityOptions(ctx, dbOptions)
	var out activities.LeadOutcome
	if err := workflow.ExecuteActivity(ctx, a.UpsertLead, in.IntakeID).Get(ctx, &out); err != nil {
		return LeadIntakeResult{}, err
	}
	if err := workflow.ExecuteActivity(ctx, a.LogIntakeActivity, in.IntakeID, out.LeadID).Get(ctx, nil); err != nil {
		return LeadIntakeResult{}, err
	}
	var assignee string
	if !out.RecordedOnly { // an anonymous duplicate changes nothing, assignment included
		if err := workflow.ExecuteActivity(ctx, a.AssignLead, out.LeadID).Get(ctx, &assignee); err != nil {
			return LeadIntakeResult{}, err
		}
	}
	if assignee != "" {
		var notificationID string
		if err := workflow.ExecuteActivity(ctx, a.NotifyAssignee, in.IntakeID, out.LeadID, assignee).Get(ctx, &notificationID); err != nil {
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
	if err := workflow.ExecuteActivity(ctx, a.CompleteIntake, in.IntakeID).Get(ctx, nil); err != nil {
		return LeadIntakeResult{}, err
	}
	return LeadIntakeResult{LeadID: out.LeadID, Duplicate: out.Duplicate, AssignedToID: assignee}, nil
}
