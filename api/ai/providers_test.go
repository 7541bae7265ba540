package ai_test

import (
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/activities/ai/openaicompat"
	"github.com/business-suite/suite/activities/ai/openaicompat/openaitest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// Cancel: a job stuck in a model call is canceled at once through the API,
// its workflow is canceled in Temporal, and the answer that arrives later
// is dropped (no result, no tokens).
func TestAICancel(t *testing.T) {
	provider := newCounting(ai.NewLocal())
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		provider.gate, provider.entered = make(chan struct{}), make(chan struct{}, 1)
		defer close(provider.gate)
		o := newAIOrg(t, e, "Cancel Co", models.PlanBusiness)
		doc := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"content": testdata(t, "ticket_thread.txt")}).Expect(201).Map()["id"].(string)

		// Prefer: wait that runs out answers 202 with the job so far.
		started := time.Now()
		r := call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, wait("1")).Expect(202)
		j := readJob(r)
		if time.Since(started) < time.Second || r.Header.Get("Preference-Applied") != "wait=1" || j.Status == "succeeded" {
			t.Errorf("wait=1 on a stuck job: %s after %v", j.Status, time.Since(started))
		}
		select {
		case <-provider.entered:
		case <-time.After(20 * time.Second):
			t.Fatal("the job never reached the provider")
		}
		c := readJob(call(e, o.key, "POST", "/v1/ai/jobs/"+j.ID+"/cancel", nil).Expect(200))
		if c.Status != "canceled" || c.Result.Summary != "" {
			t.Fatalf("cancel: %+v", c)
		}
		// Again: the same answer.
		if again := readJob(call(e, o.key, "POST", "/v1/ai/jobs/"+j.ID+"/cancel", nil).Expect(200)); again.Status != "canceled" {
			t.Errorf("second cancel: %s", again.Status)
		}
		e.Eventually(func() bool {
			d, err := e.Temporal.DescribeWorkflowExecution(t.Context(), j.WorkflowID, "")
			return err == nil && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
		}, "workflow %s to be canceled", j.WorkflowID)
		// The provider answers now (if its call is still waiting); nothing
		// is stored.
		select {
		case provider.gate <- struct{}{}:
			time.Sleep(300 * time.Millisecond)
		case <-time.After(2 * time.Second):
		}
		final := readJob(call(e, o.key, "GET", "/v1/ai/jobs/"+j.ID, nil).Expect(200))
		if final.Status != "canceled" || final.Result.Summary != "" || final.Usage.TotalTokens != 0 {
			t.Errorf("after the late answer: %+v", final)
		}
		var page struct{ Data []job }
		call(e, o.key, "GET", "/v1/ai/jobs?status=canceled", nil).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != j.ID {
			t.Errorf("canceled jobs: %+v", page.Data)
		}
		if u := call(e, o.key, "GET", "/v1/ai/usage", nil).Expect(200).Map(); u["total_tokens"] != float64(0) || u["plan"] != models.PlanBusiness {
			t.Errorf("a canceled job counted tokens (or the plan is wrong): %v", u)
		}
	}, apitest.WithAIProvider(provider))
}

// The OpenAI-compatible provider end to end: jobs go through go-openai to
// a chat-completions test server that answers 429 with Retry-After, 500,
// 400, and splits a long document into several calls.
func TestAIOpenAICompatibleProvider(t *testing.T) {
	srv := openaitest.New(t)
	provider := openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: srv.BaseURL(), Model: "gpt-test",
		Timeout: 5 * time.Second, ChunkTokens: 400})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newAIOrg(t, e, "OpenAI Co", models.PlanBusiness)
		short := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{
			"content": "Ana will send the signed contract by Friday. The renewal closes next month."}).Expect(201).Map()["id"].(string)

		// 429 (Retry-After: 1), then 500, then an answer: the job succeeds.
		calls := srv.Calls()
		srv.Enqueue(openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, ErrorMessage: "Rate limit reached"},
			openaitest.Reply{Status: 500, ErrorMessage: "upstream exploded"})
		j := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": short, "length": "short"}, wait("30")).Expect(200))
		if j.Status != "succeeded" || j.Provider == nil || *j.Provider != "openai" || j.Model == nil || *j.Model != "gpt-test" ||
			!strings.HasPrefix(j.Result.Summary, "Model summary of:") || j.Usage.PromptTokens == 0 || j.Usage.CompletionTokens == 0 {
			t.Fatalf("summary through the chat API: %+v", j)
		}
		if n := srv.Calls() - calls; n != 3 {
			t.Errorf("%d chat calls, want 3 (429, 500, success)", n)
		}
		// Cached: no call at all; refresh: one.
		calls = srv.Calls()
		if c := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": short, "length": "short"}, wait("30")).Expect(200)); !c.Cached {
			t.Error("the second summary was not cached")
		}
		if n := srv.Calls() - calls; n != 0 {
			t.Errorf("the cached summary made %d chat calls", n)
		}
		readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": short, "length": "short", "refresh": true}, wait("30")).Expect(200))
		if n := srv.Calls() - calls; n != 1 {
			t.Errorf("refresh made %d chat calls, want 1", n)
		}

		// Action items come back as JSON; relative dates are resolved.
		items := readJob(call(e, o.key, "POST", "/v1/ai/action-items", map[string]any{"document_id": short}, wait("30")).Expect(200))
		if items.Status != "succeeded" || len(items.Result.Items) != 2 || items.Result.Items[0].Owner == nil || *items.Result.Items[0].Owner != "Ana" {
			t.Errorf("action items through the chat API: %+v", items)
		}

		// A 400 fails the job at once, with a clear error, without retries.
		calls = srv.Calls()
		srv.Enqueue(openaitest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens."})
		f := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": short, "refresh": true}, wait("30")).Expect(200))
		if f.Status != "failed" || f.Error == nil || f.Error.Code != models.AIErrProviderRejected || !strings.Contains(f.Error.Message, "maximum context length") {
			t.Errorf("rejected job: %+v", f)
		}
		if n := srv.Calls() - calls; n != 1 {
			t.Errorf("a 400 was called %d times", n)
		}

		// A long document: several map calls and a combining one.
		long := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"content": strings.Repeat(testdata(t, "ticket_thread.txt")+"\n\n", 3)}).Expect(201).Map()["id"].(string)
		calls = srv.Calls()
		l := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": long}, wait("30")).Expect(200))
		if l.Status != "succeeded" || l.Result.Chunks < 2 || srv.Calls()-calls != l.Result.Chunks+1 || l.Usage.ModelCalls != l.Result.Chunks+1 {
			t.Errorf("long document: %d chunks, %d calls (job says %d): %+v", l.Result.Chunks, srv.Calls()-calls, l.Usage.ModelCalls, l.Result)
		}
	}, apitest.WithAIProvider(provider))
}

// A job requested while Temporal is down is not lost: the request answers
// 202 (the start waits in the outbox with the job), and the job runs once
// Temporal is back.
func TestAIJobSurvivesTemporalOutage(t *testing.T) {
	e := apitest.New(t, database.SQLite, apitest.WithTemporalDown())
	owner := e.SignUp(apitest.UniqueEmail("owner"))
	// With Temporal down the organization stays provisioning; activate it
	// by hand (its registration is not what is tested).
	var org struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: owner.Auth(), Body: map[string]string{"name": "Outage"}}).Expect(202).JSON(&org)
	e.DB.Model(&models.Organization{}).Where("id = ?", org.ID).Update("status", models.OrgActive)
	e.SetPlan(org.ID, models.PlanBusiness)
	key := e.CreateKey(owner, org.ID, "ai")

	doc := call(e, key, "POST", "/v1/ai/documents", map[string]any{"content": testdata(t, "ticket_thread.txt")}).Expect(201).Map()["id"].(string)
	j := readJob(call(e, key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, wait("1")).Expect(202))
	if j.Status != "queued" {
		t.Fatalf("status %s while Temporal is down", j.Status)
	}
	var pending models.WorkflowStart
	if err := e.DB.Take(&pending, "workflow_id = ?", "ai-job/"+j.ID).Error; err != nil || pending.Status != models.StartPending || pending.Kind != "ai-job" {
		t.Fatalf("outbox: %+v %v", pending, err)
	}
	e.StartTemporal()
	if done := awaitJob(e, key, j.ID); done.Status != "succeeded" || !strings.Contains(done.Result.Summary, "QuickBooks") {
		t.Fatalf("after Temporal came back: %+v", done)
	}
}
