package activities

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// The end of a job: its outcome stored, cached and counted against the
// organization's month, its failure or cancellation, and the error code a
// failed job records.

// Complete stores the outcome: the job succeeds with its output and usage,
// the output is cached under the job's key, and the tokens are added to
// the organization's month — all in one transaction, and only if the job
// is still running (a job canceled meanwhile stays canceled, and nothing
// is recorded). It returns the job's final status.
func (a *AIJobs) Complete(ctx context.Context, jobID string, out AIOutcome) (string, error) {
	var status string
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		job, err := a.job(tx.DB, jobID, true)
		if err != nil {
			return err
		}
		status = job.Status
		moved, err := finishJob(tx, job.ID, models.AIJobSucceeded, map[string]any{
			"result": string(out.Output), "prompt_tokens": out.Usage.PromptTokens, "completion_tokens": out.Usage.CompletionTokens,
			"model_calls": out.Usage.Calls, "model_ms": out.ModelMS, "cached": false,
		})
		if err != nil || !moved {
			return err
		}
		status = models.AIJobSucceeded
		org, err := models.FindOrg(ctx, tx.DB, job.OrgID)
		if err != nil {
			return err
		}
		now := a.now()
		if err := models.StoreAIResult(tx.DB, &models.AIResult{OrgID: job.OrgID, CacheKey: job.CacheKey, JobID: job.ID, Kind: job.Kind,
			Provider: job.Provider, Model: job.Model, Result: string(out.Output), PromptTokens: out.Usage.PromptTokens,
			CompletionTokens: out.Usage.CompletionTokens, CreatedAt: now}); err != nil {
			return err
		}
		return models.RecordAIUsage(tx.DB, job.OrgID, models.AIMonth(org, now), out.Usage.PromptTokens, out.Usage.CompletionTokens)
	})
	return status, err
}

// Fail records why a job failed (unless it already finished).
func (a *AIJobs) Fail(ctx context.Context, jobID, code, message string) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		_, err := finishJob(tx, jobID, models.AIJobFailed, map[string]any{"error_code": code, "error_message": message})
		return err
	})
}

// finishJob moves job id to succeeded or failed in tx (models.MoveAIJob)
// and, when it moved, records ai.job.succeeded or ai.job.failed for the
// organization's webhooks with it.
func finishJob(tx *record.Tx, id, to string, set map[string]any) (bool, error) {
	moved, err := models.MoveAIJob(tx.DB, id, to, set)
	if err != nil || !moved {
		return moved, err
	}
	var job models.AIJob
	if err := tx.Take(&job, "id = ?", id).Error; err != nil {
		return false, err
	}
	return true, tx.Emit(models.Event{OrgID: job.OrgID, Type: models.AIJobEventType(to), Object: views.ToAIJob(&job)})
}

// Cancel marks a job canceled (unless it already finished): the workflow
// calls it when Temporal cancels the workflow.
func (a *AIJobs) Cancel(ctx context.Context, jobID string) error {
	_, err := models.MoveAIJob(a.DB.WithContext(ctx), jobID, models.AIJobCanceled, nil)
	return err
}

// AIJobFailure names the error code and message a failed job records for
// the error its workflow got from an activity: the provider's refusals as
// they are, anything retryable that kept failing as provider_unavailable.
// It is pure (workflow code calls it).
func AIJobFailure(err error) (code, message string) {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message()
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "AIProvider") {
			msg = msg[i+2:]
		}
		switch appErr.Type() {
		case ai.ErrTypeRejected:
			return models.AIErrProviderRejected, capitalize(msg) + "."
		case ai.ErrTypeUnauthorized:
			return models.AIErrProviderUnauthorized, capitalize(msg) + "."
		case ErrTypeAIInvalidData:
			return models.AIErrInvalidData, msg
		case ai.ErrTypeRateLimited, ai.ErrTypeUnavailable, ai.ErrTypeTimeout, ai.ErrTypeBadOutput:
			return models.AIErrProviderUnavailable, "The AI provider kept failing (" + msg + "); the job gave up after its retries."
		}
	case errors.As(err, &timeoutErr):
		return models.AIErrProviderUnavailable, "The AI provider did not answer in time, even after retries."
	}
	return models.AIErrInternal, "The job failed unexpectedly."
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
