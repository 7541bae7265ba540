package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// mergeOptions: moving a person's rows takes seconds for most, minutes for
// one with thousands of tickets (heartbeating as it goes); a step that
// fails is retried, for as long as the database takes to come back.
var mergeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeNotFound}},
}

// PersonMerge merges a duplicate contact or customer into a survivor: it
// moves every row that points at the duplicate (deals, tasks, leads;
// tickets, comments, time, history) in batches, then folds the duplicate's
// values into the survivor, deletes it and emits the merged event, in one
// transaction. Both steps are idempotent, so a merge interrupted anywhere
// resumes and never half-finishes.
func PersonMerge(ctx workflow.Context, in models.MergeInput) error {
	var m *activities.Merges
	actx := workflow.WithActivityOptions(ctx, mergeOptions)
	moved := map[string]int64{}
	if err := workflow.ExecuteActivity(actx, m.MoveMergeReferences, in).Get(ctx, &moved); err != nil {
		return err
	}
	return workflow.ExecuteActivity(actx, m.FinishMerge, in, moved).Get(ctx, nil)
}
