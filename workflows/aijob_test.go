package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
)

func aiEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *activities.AIJobs) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.AIJobs{})
	return env, nil
}

var runningPlan = activities.AIJobPlan{Kind: models.AIKindSummarize, Status: models.AIJobRunning, Chunks: 6, CallTimeout: 10 * time.Second}

// A long document: one model call per chunk (parts come back in order,
// whatever order the calls finish in), one combining step, then the
// result is stored.
func TestAIJobMapsEveryChunkThenReducesAndCompletes(t *testing.T) {
	env, a := aiEnv(t)
	env.OnActivity(a.Begin, mock.Anything, "job-1").Return(runningPlan, nil).Once()
	for i := range 6 {
		env.OnActivity(a.Map, mock.Anything, "job-1", i).After(time.Duration(6-i)*time.Second).
			Return(activities.AIPartial{Summary: string(rune('a' + i)), Usage: ai.Usage{PromptTokens: 10, Calls: 1}}, nil).Once()
	}
	env.OnActivity(a.Reduce, mock.Anything, "job-1", mock.Anything).Return(
		func(_ context.Context, _ string, parts []activities.AIPartial) (activities.AIOutcome, error) {
			got := ""
			for _, p := range parts {
				got += p.Summary
			}
			if got != "abcdef" {
				t.Errorf("parts reach Reduce as %q, want abcdef", got)
			}
			return activities.AIOutcome{Output: []byte(`{"summary":"x"}`)}, nil
		}).Once()
	env.OnActivity(a.Complete, mock.Anything, "job-1", mock.Anything).Return(models.AIJobSucceeded, nil).Once()
	env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1", OrgID: "org-1"})
	var res workflows.AIJobResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != models.AIJobSucceeded {
		t.Fatalf("result %+v %v", res, err)
	}
	env.AssertExpectations(t)
}

// A cached result, a job canceled before it ran, or one that cannot run:
// no model call at all.
func TestAIJobStopsWhenBeginSaysDone(t *testing.T) {
	cases := []struct {
		plan    activities.AIJobPlan
		status  string
		errType string
	}{
		{activities.AIJobPlan{Done: true, Status: models.AIJobSucceeded, Cached: true}, models.AIJobSucceeded, ""},
		{activities.AIJobPlan{Done: true, Status: models.AIJobCanceled}, models.AIJobCanceled, ""},
		{activities.AIJobPlan{Done: true, Status: models.AIJobFailed, ErrorCode: models.AIErrQuotaExceeded, ErrorMessage: "spent"}, "", models.AIErrQuotaExceeded},
	}
	for _, c := range cases {
		env, a := aiEnv(t)
		env.OnActivity(a.Begin, mock.Anything, "job-1").Return(c.plan, nil).Once()
		env.OnActivity(a.Map, mock.Anything, mock.Anything, mock.Anything).Never()
		env.OnActivity(a.Complete, mock.Anything, mock.Anything, mock.Anything).Never()
		env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1"})
		if c.errType != "" {
			var appErr *temporal.ApplicationError
			if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != c.errType {
				t.Fatalf("%s: error %v", c.plan.Status, err)
			}
			continue
		}
		var res workflows.AIJobResult
		if err := env.GetWorkflowResult(&res); err != nil || res.Status != c.status || res.Cached != c.plan.Cached {
			t.Fatalf("%s: %+v %v", c.plan.Status, res, err)
		}
		env.AssertExpectations(t)
	}
}

// A 429 is retried after the provider's Retry-After (on the test clock),
// not the policy's own interval.
func TestAIJobRetriesRateLimitsAfterRetryAfter(t *testing.T) {
	env, a := aiEnv(t)
	plan := runningPlan
	plan.Chunks = 1
	env.OnActivity(a.Begin, mock.Anything, "job-1").Return(plan, nil)
	var attempts []time.Time
	env.OnActivity(a.Map, mock.Anything, "job-1", 0).Return(func(context.Context, string, int) (activities.AIPartial, error) {
		attempts = append(attempts, env.Now())
		if len(attempts) == 1 {
			return activities.AIPartial{}, ai.TemporalError(&ai.ProviderError{Type: ai.ErrTypeRateLimited, Status: 429, RetryAfter: 42 * time.Second})
		}
		return activities.AIPartial{Summary: "s"}, nil
	})
	env.OnActivity(a.Reduce, mock.Anything, "job-1", mock.Anything).Return(activities.AIOutcome{}, nil)
	env.OnActivity(a.Complete, mock.Anything, "job-1", mock.Anything).Return(models.AIJobSucceeded, nil)
	env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[1].Sub(attempts[0]) < 42*time.Second {
		t.Fatalf("attempts at %v, want the second 42s after the first", attempts)
	}
}

// 400 and 401 fail the job at once, with the provider's reason; 5xx that
// keeps failing fails it after the retries, as provider_unavailable.
func TestAIJobFailsOnProviderErrors(t *testing.T) {
	cases := []struct {
		name     string
		err      *ai.ProviderError
		attempts int
		code     string
	}{
		{"400", &ai.ProviderError{Type: ai.ErrTypeRejected, Status: 400, Message: "the AI provider rejected the request (HTTP 400): context too long"}, 1, models.AIErrProviderRejected},
		{"401", &ai.ProviderError{Type: ai.ErrTypeUnauthorized, Status: 401, Message: "check OPENAI_API_KEY"}, 1, models.AIErrProviderUnauthorized},
		{"500", &ai.ProviderError{Type: ai.ErrTypeUnavailable, Status: 500, Message: "the AI provider failed (HTTP 500)"}, 6, models.AIErrProviderUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, a := aiEnv(t)
			plan := runningPlan
			plan.Chunks = 1
			env.OnActivity(a.Begin, mock.Anything, "job-1").Return(plan, nil)
			calls := 0
			env.OnActivity(a.Map, mock.Anything, "job-1", 0).Return(func(context.Context, string, int) (activities.AIPartial, error) {
				calls++
				return activities.AIPartial{}, ai.TemporalError(c.err)
			})
			var code, message string
			env.OnActivity(a.Fail, mock.Anything, "job-1", mock.Anything, mock.Anything).Return(func(_ context.Context, _, cd, msg string) error {
				code, message = cd, msg
				return nil
			}).Once()
			env.OnActivity(a.Complete, mock.Anything, mock.Anything, mock.Anything).Never()
			env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1"})
			var appErr *temporal.ApplicationError
			if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != c.code {
				t.Fatalf("workflow error %v", err)
			}
			if calls != c.attempts || code != c.code || message == "" {
				t.Fatalf("%d calls, recorded %q %q", calls, code, message)
			}
			env.AssertExpectations(t)
		})
	}
}

// Temporal cancellation while the model works: the job is marked canceled
// and nothing is stored.
func TestAIJobHonoursCancellation(t *testing.T) {
	env, a := aiEnv(t)
	env.OnActivity(a.Begin, mock.Anything, "job-1").Return(runningPlan, nil)
	env.OnActivity(a.Map, mock.Anything, "job-1", mock.Anything).After(time.Hour).Return(activities.AIPartial{}, nil)
	env.OnActivity(a.Cancel, mock.Anything, "job-1").Return(nil).Once()
	env.OnActivity(a.Reduce, mock.Anything, mock.Anything, mock.Anything).Never()
	env.OnActivity(a.Complete, mock.Anything, mock.Anything, mock.Anything).Never()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1"})
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want canceled", err)
	}
	env.AssertExpectations(t)
}

// A job canceled through the API (in the database) while its workflow ran:
// the next step sees it and the workflow ends without failing the job.
func TestAIJobEndsQuietlyWhenTheJobWasCanceled(t *testing.T) {
	env, a := aiEnv(t)
	plan := runningPlan
	plan.Chunks = 1
	env.OnActivity(a.Begin, mock.Anything, "job-1").Return(plan, nil)
	env.OnActivity(a.Map, mock.Anything, "job-1", 0).Return(activities.AIPartial{},
		temporal.NewNonRetryableApplicationError("AI job job-1 is canceled", activities.ErrTypeAIJobFinished, nil)).Once()
	env.OnActivity(a.Fail, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Never()
	env.ExecuteWorkflow(workflows.AIJob, workflows.AIJobInput{JobID: "job-1"})
	var res workflows.AIJobResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != models.AIJobCanceled {
		t.Fatalf("%+v %v", res, err)
	}
	env.AssertExpectations(t)
}
