package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/ai/openaicompat"
	"github.com/business-suite/suite/activities/ai/openaicompat/openaitest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// End-to-end: jobs are created and their AIJob workflows started through
// the transactional outbox, exactly as the /v1/ai handlers do, and run on
// a real Temporal server with the real activities and database.

func seedOrg(t *testing.T, db *gorm.DB, plan string) string {
	t.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "AI Co", Status: models.OrgActive, Plan: plan,
		Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&org).Error; err != nil {
		t.Fatal(err)
	}
	return org.ID
}

func document(t *testing.T, e *apitest.Env, orgID, content string) string {
	t.Helper()
	d, err := models.CreateAIDocument(t.Context(), e.DB, models.NewAIDocument{OrgID: orgID, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// startJob records the job and its workflow start in one transaction.
func startJob(t *testing.T, e *apitest.Env, in models.NewAIJob) string {
	t.Helper()
	var id string
	err := e.Starter.Transact(t.Context(), func(tx *record.Tx) error {
		job, err := models.CreateAIJob(tx.DB, in)
		if err != nil {
			return err
		}
		id = job.ID
		return tx.Start(record.Start{WorkflowID: names.AIJobID(job.ID), Workflow: names.AIJobWorkflow,
			Input: workflows.AIJobInput{JobID: job.ID, OrgID: job.OrgID}, OrgID: job.OrgID, Kind: names.KindAIJob})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitJob waits until the job's status satisfies done.
func waitJob(t *testing.T, e *apitest.Env, id string, done func(*models.AIJob) bool) *models.AIJob {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var j models.AIJob
		if err := e.DB.Take(&j, "id = ?", id).Error; err != nil {
			t.Fatal(err)
		}
		if done(&j) {
			return &j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func finished(j *models.AIJob) bool { return j.Finished() }

// workflowStatus waits for the job's workflow to close and returns its
// status and error.
func workflowStatus(t *testing.T, e *apitest.Env, jobID string) (enumspb.WorkflowExecutionStatus, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	runErr := e.Temporal.GetWorkflow(ctx, names.AIJobID(jobID), "").Get(ctx, nil)
	desc, err := e.Temporal.DescribeWorkflowExecution(ctx, names.AIJobID(jobID), "")
	if err != nil {
		t.Fatal(err)
	}
	return desc.GetWorkflowExecutionInfo().GetStatus(), runErr
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../activities/ai/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAIJobsRunEndToEndWithTheLocalProvider(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		orgID := seedOrg(t, e.DB, models.PlanBusiness)
		thread := document(t, e, orgID, readTestdata(t, "ticket_thread.txt"))
		meeting := document(t, e, orgID, readTestdata(t, "meeting_transcript.txt"))

		summary := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: thread, Options: models.AIJobOptions{Length: "short"}})
		items := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindActionItems, DocumentID: meeting})
		analysis := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindAnalyze,
			Data: "month,signups\n2026-01,120\n2026-02,150\n2026-03,190\n", Options: models.AIJobOptions{Question: "Are signups growing?"}})

		j := waitJob(t, e, summary, finished)
		var s models.AISummaryOutput
		if err := json.Unmarshal(j.Output(), &s); j.Status != models.AIJobSucceeded || err != nil || !strings.Contains(s.Summary, "none of our invoices sync") {
			t.Fatalf("summary job %s %s: %s", j.Status, j.ErrorMessage, j.Output())
		}
		if status, err := workflowStatus(t, e, summary); status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED || err != nil {
			t.Fatalf("workflow %v %v", status, err)
		}
		j = waitJob(t, e, items, finished)
		var acts models.AIActionItemsOutput
		if err := json.Unmarshal(j.Output(), &acts); err != nil || len(acts.Items) != 9 || acts.ReferenceDate != "2026-03-04" {
			t.Fatalf("action items %s: %s", j.Status, j.Output())
		}
		j = waitJob(t, e, analysis, finished)
		var an models.AIAnalysisOutput
		if err := json.Unmarshal(j.Output(), &an); err != nil || an.Rows != 3 || *an.Columns[1].Sum != 460 ||
			!strings.Contains(an.Narrative, "signups rises over month") {
			t.Fatalf("analysis %s: %s", j.Status, j.Output())
		}
		// The same summary again is served from the cache by its own workflow.
		again := waitJob(t, e, startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: thread,
			Options: models.AIJobOptions{Length: "short"}}), finished)
		if !again.Cached || again.Status != models.AIJobSucceeded || string(again.Output()) != string(waitJob(t, e, summary, finished).Output()) {
			t.Fatalf("cached job %+v", again)
		}
		usage, err := models.AIUsageFor(t.Context(), e.DB, orgID, models.Now())
		if err != nil || usage.Jobs != 3 || usage.TotalTokens == 0 {
			t.Fatalf("usage %+v %v", usage, err)
		}
	})
}

// Through go-openai against the chat-completions test server: a long
// document needs a call per chunk plus combining; a 429 is retried after
// its Retry-After; a 400 fails the job (and its workflow) at once.
func TestAIJobsRunEndToEndThroughTheChatAPI(t *testing.T) {
	srv := openaitest.New(t)
	provider := openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: srv.BaseURL(), Model: "gpt-test",
		Timeout: 10 * time.Second, ChunkTokens: 300})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		orgID := seedOrg(t, e.DB, models.PlanEnterprise)
		long := strings.Repeat(readTestdata(t, "ticket_thread.txt"), 4)
		before := srv.Calls()
		srv.Enqueue(openaitest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, ErrorMessage: "Rate limit reached"})
		id := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: document(t, e, orgID, long)})
		j := waitJob(t, e, id, finished)
		if j.Status != models.AIJobSucceeded {
			t.Fatalf("job %s %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
		}
		var out models.AISummaryOutput
		_ = json.Unmarshal(j.Output(), &out)
		calls := srv.Calls() - before
		if out.Chunks < 4 || calls != j.ModelCalls+1 || j.ModelCalls < out.Chunks+1 {
			t.Fatalf("%d chunks, %d calls to the server, %d recorded", out.Chunks, calls, j.ModelCalls)
		}

		srv.Enqueue(openaitest.Reply{Status: 400, ErrorMessage: "Invalid 'messages': too long."})
		bad := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindActionItems, DocumentID: document(t, e, orgID, "Please send the report by Friday.")})
		j = waitJob(t, e, bad, finished)
		if j.Status != models.AIJobFailed || j.ErrorCode != models.AIErrProviderRejected || !strings.Contains(j.ErrorMessage, "Invalid 'messages': too long.") {
			t.Fatalf("rejected job %s %s %q", j.Status, j.ErrorCode, j.ErrorMessage)
		}
		status, err := workflowStatus(t, e, bad)
		var appErr *temporal.ApplicationError
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED || !errors.As(err, &appErr) || appErr.Type() != models.AIErrProviderRejected {
			t.Fatalf("workflow %v %v", status, err)
		}
		var usage int64
		e.DB.Model(&models.AIUsage{}).Where("org_id = ?", orgID).Select("COALESCE(SUM(jobs), 0)").Scan(&usage)
		if usage != 1 {
			t.Fatalf("%d jobs charged, want 1 (the failed one is not)", usage)
		}
	}, apitest.WithAIProvider(provider))
}

// Canceling the workflow in Temporal while the model is still answering
// marks the job canceled; nothing is stored or charged.
func TestAIJobCanceledInTemporal(t *testing.T) {
	srv := openaitest.New(t)
	provider := openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: srv.BaseURL(), Model: "gpt-test", Timeout: 10 * time.Second})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		orgID := seedOrg(t, e.DB, models.PlanBusiness)
		srv.Enqueue(openaitest.Reply{Delay: 5 * time.Second, Content: "too late"})
		before := srv.Calls()
		id := startJob(t, e, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: document(t, e, orgID, "A short text to summarize slowly.")})
		// Cancel once the model has the request.
		waitJob(t, e, id, func(*models.AIJob) bool { return srv.Calls() > before })
		if err := e.Temporal.CancelWorkflow(t.Context(), names.AIJobID(id), ""); err != nil {
			t.Fatal(err)
		}
		j := waitJob(t, e, id, finished)
		if j.Status != models.AIJobCanceled || j.Result != nil {
			t.Fatalf("job %s %v", j.Status, j.Result)
		}
		status, err := workflowStatus(t, e, id)
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED || !temporal.IsCanceledError(err) {
			t.Fatalf("workflow %v %v", status, err)
		}
		var rows int64
		e.DB.Model(&models.AIUsage{}).Where("org_id = ?", orgID).Count(&rows)
		if rows != 0 {
			t.Fatal("a canceled job was charged")
		}
	}, apitest.WithAIProvider(provider))
}
