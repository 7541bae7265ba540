package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
)

// AIJobInput names the job to run.
type AIJobInput struct {
	JobID string `json:"jobId"`
	OrgID string `json:"orgId"`
}

// AIJobResult is how the job ended.
type AIJobResult struct {
	Status string `json:"status"`
	Cached bool   `json:"cached"`
}

// aiMapConcurrency bounds the model calls in flight for one job.
const aiMapConcurrency = 4

// aiModelOptions: one model call per attempt, bounded by the provider's
// call timeout. 429s (after the provider's Retry-After), 5xx, timeouts and
// unusable answers are retried with backoff, six attempts in all (about a
// minute without Retry-After); refusals (400, 401) and canceled jobs are
// not retried.
func aiModelOptions(callTimeout time.Duration, calls int) workflow.ActivityOptions {
	perCall := callTimeout + 30*time.Second
	return workflow.ActivityOptions{
		StartToCloseTimeout: perCall * time.Duration(max(calls, 1)),
		HeartbeatTimeout:    perCall,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 6,
			NonRetryableErrorTypes: activities.AIJobNonRetryableErrorTypes,
		},
	}
}

// aiDBOptions: database steps retry until the database answers.
var aiDBOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeAIJobMissing},
	},
}

// AIJob runs an AI job: Begin loads the input (and answers from the cache
// before any model call), Map calls the model once per chunk (a few at a
// time), Reduce combines the parts, Complete stores the result and the
// token usage. Each step records the job's status in the database: queued
// → running → succeeded | failed | canceled. A job that fails is marked
// failed with the reason and the workflow fails too; when Temporal cancels
// the workflow, the job is marked canceled.
func AIJob(ctx workflow.Context, in AIJobInput) (res AIJobResult, err error) {
	var a *activities.AIJobs
	dbCtx := workflow.WithActivityOptions(ctx, aiDBOptions)
	defer func() {
		if !temporal.IsCanceledError(err) {
			return
		}
		// Canceled: record it, in a context the cancellation does not reach.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		dctx = workflow.WithActivityOptions(dctx, aiDBOptions)
		if cerr := workflow.ExecuteActivity(dctx, a.Cancel, in.JobID).Get(dctx, nil); cerr != nil {
			err = cerr
		}
		res = AIJobResult{Status: activities.AIJobCanceled}
	}()

	var plan activities.AIJobPlan
	if err := workflow.ExecuteActivity(dbCtx, a.Begin, in.JobID).Get(dbCtx, &plan); err != nil {
		return AIJobResult{}, err
	}
	if plan.Done {
		res = AIJobResult{Status: plan.Status, Cached: plan.Cached}
		if plan.Status == activities.AIJobFailed {
			return res, temporal.NewNonRetryableApplicationError(plan.ErrorMessage, plan.ErrorCode, nil)
		}
		return res, nil
	}

	mapCtx := workflow.WithActivityOptions(ctx, aiModelOptions(plan.CallTimeout, 1))
	parts := make([]activities.AIPartial, plan.Chunks)
	futures := make([]workflow.Future, plan.Chunks)
	for i := range plan.Chunks {
		if i >= aiMapConcurrency {
			if err := futures[i-aiMapConcurrency].Get(mapCtx, &parts[i-aiMapConcurrency]); err != nil {
				return fail(ctx, in.JobID, err)
			}
		}
		futures[i] = workflow.ExecuteActivity(mapCtx, a.Map, in.JobID, i)
	}
	for i := max(0, plan.Chunks-aiMapConcurrency); i < plan.Chunks; i++ {
		if err := futures[i].Get(mapCtx, &parts[i]); err != nil {
			return fail(ctx, in.JobID, err)
		}
	}

	// Combining may take a call per group of parts, and one more.
	reduceCtx := workflow.WithActivityOptions(ctx, aiModelOptions(plan.CallTimeout, plan.Chunks+1))
	var out activities.AIOutcome
	if err := workflow.ExecuteActivity(reduceCtx, a.Reduce, in.JobID, parts).Get(reduceCtx, &out); err != nil {
		return fail(ctx, in.JobID, err)
	}
	var status string
	if err := workflow.ExecuteActivity(dbCtx, a.Complete, in.JobID, out).Get(dbCtx, &status); err != nil {
		return AIJobResult{}, err
	}
	return AIJobResult{Status: status}, nil
}

// fail records a failed step on the job and fails the workflow with the
// job's error code as the failure type (what the Temporal UI shows). A
// cancellation passes through; a job that finished meanwhile (canceled
// through the API) ends the workflow quietly.
func fail(ctx workflow.Context, jobID string, err error) (AIJobResult, error) {
	if temporal.IsCanceledError(err) {
		return AIJobResult{}, err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeAIJobFinished {
		return AIJobResult{Status: activities.AIJobCanceled}, nil
	}
	code, message := activities.AIJobFailure(err)
	var a *activities.AIJobs
	dbCtx := workflow.WithActivityOptions(ctx, aiDBOptions)
	if ferr := workflow.ExecuteActivity(dbCtx, a.Fail, jobID, code, message).Get(dbCtx, nil); ferr != nil {
		return AIJobResult{}, ferr
	}
	return AIJobResult{Status: activities.AIJobFailed}, temporal.NewNonRetryableApplicationError(message, code, err)
}
