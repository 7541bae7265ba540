package ai_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// aiOrg is an organization on plan with an ai_ key.
type aiOrg struct {
	id    string
	owner *apitest.User
	key   string
}

func newAIOrg(t *testing.T, e *apitest.Env, name, plan string) aiOrg {
	t.Helper()
	o := aiOrg{owner: e.SignUp(apitest.UniqueEmail("owner"))}
	o.id = e.CreateOrg(o.owner, name)
	e.SetPlan(o.id, plan)
	o.key = e.CreateKey(o.owner, o.id, "ai")
	return o
}

// call sends an AI request with the key (and extra headers).
func call(e *apitest.Env, key, method, path string, body any, headers ...map[string]string) *apitest.Response {
	e.T.Helper()
	h := apitest.Bearer(key)
	for _, extra := range headers {
		maps.Copy(h, extra)
	}
	return e.Do(apitest.Request{Method: method, Path: path, Headers: h, Body: body})
}

func wait(n string) map[string]string { return map[string]string{"Prefer": "wait=" + n} }

// job is the part of a job response the tests read.
type job struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Status     string  `json:"status"`
	DocumentID *string `json:"document_id"`
	Cached     bool    `json:"cached"`
	Refresh    bool    `json:"refresh"`
	Provider   *string `json:"provider"`
	Model      *string `json:"model"`
	WorkflowID string  `json:"workflow_id"`
	Error      *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
		ModelCalls       int   `json:"model_calls"`
	} `json:"usage"`
	Timings struct {
		RunMS *int64 `json:"run_ms"`
	} `json:"timings"`
	Result struct {
		Summary string `json:"summary"`
		Length  string `json:"length"`
		Chunks  int    `json:"chunks"`
		Items   []struct {
			Text    string  `json:"text"`
			Owner   *string `json:"owner"`
			DueDate *string `json:"due_date"`
		} `json:"items"`
		Rows    int `json:"rows"`
		Columns []struct {
			Name string   `json:"name"`
			Sum  *float64 `json:"sum"`
			Mean *float64 `json:"mean"`
		} `json:"columns"`
		Groups []struct {
			Key  string `json:"key"`
			Rows int    `json:"rows"`
		} `json:"groups"`
		Narrative string `json:"narrative"`
	} `json:"result"`
}

func readJob(r *apitest.Response) job {
	var j job
	r.JSON(&j)
	return j
}

// awaitJob polls the job until it reaches a final status.
func awaitJob(e *apitest.Env, key, id string) job {
	e.T.Helper()
	var j job
	e.Eventually(func() bool {
		j = readJob(call(e, key, "GET", "/v1/ai/jobs/"+id, nil).Expect(200))
		return j.Status == models.AIJobSucceeded || j.Status == models.AIJobFailed || j.Status == models.AIJobCanceled
	}, "job %s to finish", id)
	return j
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "activities", "ai", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countingProvider counts the calls that reach the provider; with a gate,
// Summarize waits for it to open (or for its activity to be canceled).
type countingProvider struct {
	ai.Provider
	calls   atomic.Int64
	gate    chan struct{}
	entered chan struct{}
}

func newCounting(p ai.Provider) *countingProvider { return &countingProvider{Provider: p} }

func (c *countingProvider) Summarize(ctx context.Context, req ai.SummarizeRequest) (ai.Completion, error) {
	c.calls.Add(1)
	if c.gate != nil {
		select {
		case c.entered <- struct{}{}:
		default:
		}
		select {
		case <-c.gate:
		case <-ctx.Done():
			return ai.Completion{}, ctx.Err()
		}
	}
	return c.Provider.Summarize(ctx, req)
}

func (c *countingProvider) ActionItems(ctx context.Context, req ai.ActionItemsRequest) (ai.ActionItemsResult, error) {
	c.calls.Add(1)
	return c.Provider.ActionItems(ctx, req)
}

func (c *countingProvider) Narrate(ctx context.Context, req ai.NarrateRequest) (ai.Completion, error) {
	c.calls.Add(1)
	return c.Provider.Narrate(ctx, req)
}
