package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// fieldBatchOptions: a batch of 500 objects takes well under a minute; a
// batch that fails is retried (it is idempotent), for as long as it takes
// the database to come back.
var fieldBatchOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeBadPayload}},
}

// fieldBatchesPerRun is how many batches a run takes before it continues
// as new (its history stays short: about 500,000 objects a run).
const fieldBatchesPerRun = 1000

// FieldChange removes a deleted custom field's values from every object of
// its organization, a batch at a time in id order — each batch one
// activity, in its own transaction with the progress it records on the
// definition — then deletes the definition; or (remove_options) takes a
// select's removed options out of the values the same way, or (convert)
// turns the values into values of the field's new type, then records
// that it is done. A worker killed mid-change
// resumes at the batch it was in (the batch is idempotent).
func FieldChange(ctx workflow.Context, in models.FieldChangeInput) error {
	var f *activities.Fields
	actx := workflow.WithActivityOptions(ctx, fieldBatchOptions)
	batchOf, finish := f.RemoveFieldBatch, f.FinishFieldChange
	switch in.Change {
	case models.FieldChangeRemoveOptions:
		batchOf, finish = f.RemoveOptionsBatch, f.FinishOptionsChange
	case models.FieldChangeConvert:
		batchOf, finish = f.ConvertBatch, f.FinishOptionsChange
	}
	for range fieldBatchesPerRun {
		var batch activities.FieldBatch
		if err := workflow.ExecuteActivity(actx, batchOf, in).Get(ctx, &batch); err != nil {
			return err
		}
		if batch.Done {
			return workflow.ExecuteActivity(actx, finish, in).Get(ctx, nil)
		}
		in.After, in.Rewritten, in.Cleared = batch.Last, in.Rewritten+batch.Rewritten, in.Cleared+batch.Cleared
	}
	return workflow.NewContinueAsNewError(ctx, FieldChange, in)
}
