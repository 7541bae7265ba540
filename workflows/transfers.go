package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// transferOptions: a chunk takes about a second; one that fails is
// retried for as long as it takes the database to come back (a chunk
// is written once however often it runs), and a worker that dies
// mid-chunk is noticed by its missing heartbeat within 15 s.
var transferOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	HeartbeatTimeout:    15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeBadPayload, activities.ErrTypeNotFound}},
}

// transferChunksPerRun is how many chunks a run takes before it continues
// as new: its history stays short (about 2,500,000 rows a run).
const transferChunksPerRun = 500

// Import reads an uploaded file into its organization: the rows counted
// (ValidateImport), then a chunk at a time, each chunk's rows written with
// the import's progress in one transaction (ImportChunk), until the file
// or the import (cancelled) ends; then the file is deleted. A failure no
// retry cures fails the import, visibly.
func Import(ctx workflow.Context, in models.ImportInput) error {
	var t *activities.Transfers
	actx := workflow.WithActivityOptions(ctx, transferOptions)
	err := workflow.ExecuteActivity(actx, t.ValidateImport, in).Get(ctx, nil)
	for i := 0; err == nil && i < transferChunksPerRun; i++ {
		var step activities.ImportStep
		if err = workflow.ExecuteActivity(actx, t.ImportChunk, in).Get(ctx, &step); err == nil && step.Done {
			return workflow.ExecuteActivity(actx, t.CloseImport, in, "").Get(ctx, nil)
		}
	}
	if err == nil {
		return workflow.NewContinueAsNewError(ctx, Import, in)
	}
	if cerr := workflow.ExecuteActivity(actx, t.CloseImport, in, err.Error()).Get(ctx, nil); cerr != nil {
		return cerr
	}
	return err
}

// Export writes an organization's rows to a file, a chunk at a time, each
// chunk appended with the export's progress in one transaction
// (ExportChunk), until the rows run out. A failure no retry cures fails
// the export, visibly, and deletes what it had written.
func Export(ctx workflow.Context, in models.ExportInput) error {
	var t *activities.Transfers
	actx := workflow.WithActivityOptions(ctx, transferOptions)
	for range transferChunksPerRun {
		var step activities.ImportStep
		err := workflow.ExecuteActivity(actx, t.ExportChunk, in).Get(ctx, &step)
		if err != nil {
			if ferr := workflow.ExecuteActivity(actx, t.FailExport, in, err.Error()).Get(ctx, nil); ferr != nil {
				return ferr
			}
			return err
		}
		if step.Done {
			return nil
		}
	}
	return workflow.NewContinueAsNewError(ctx, Export, in)
}
