package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/activities/ai/openaicompat"
	"github.com/business-suite/suite/activities/ai/openaicompat/openaitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// counting wraps a provider and counts its model calls.
type counting struct {
	ai.Provider
	calls atomic.Int64
}

func (c *counting) Summarize(ctx context.Context, r ai.SummarizeRequest) (ai.Completion, error) {
	c.calls.Add(1)
	return c.Provider.Summarize(ctx, r)
}

func (c *counting) ActionItems(ctx context.Context, r ai.ActionItemsRequest) (ai.ActionItemsResult, error) {
	c.calls.Add(1)
	return c.Provider.ActionItems(ctx, r)
}

func (c *counting) Narrate(ctx context.Context, r ai.NarrateRequest) (ai.Completion, error) {
	c.calls.Add(1)
	return c.Provider.Narrate(ctx, r)
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("ai/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newDoc(t *testing.T, db *gorm.DB, in models.NewAIDocument) *models.AIDocument {
	t.Helper()
	d, err := models.CreateAIDocument(context.Background(), db, in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newJob(t *testing.T, db *gorm.DB, in models.NewAIJob) *models.AIJob {
	t.Helper()
	j, err := models.CreateAIJob(db, in)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func loadJob(t *testing.T, db *gorm.DB, id string) *models.AIJob {
	t.Helper()
	var j models.AIJob
	if err := db.Take(&j, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	return &j
}

// run drives a job through its activities in order, as the workflow does.
func run(t *testing.T, a *activities.AIJobs, jobID string) (activities.AIJobPlan, string) {
	t.Helper()
	ctx := context.Background()
	plan, err := a.Begin(ctx, jobID)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if plan.Done {
		return plan, plan.Status
	}
	parts := make([]activities.AIPartial, plan.Chunks)
	for i := range parts {
		if parts[i], err = a.Map(ctx, jobID, i); err != nil {
			t.Fatalf("map %d: %v", i, err)
		}
	}
	out, err := a.Reduce(ctx, jobID, parts)
	if err != nil {
		t.Fatalf("reduce: %v", err)
	}
	status, err := a.Complete(ctx, jobID, out)
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	return plan, status
}

func usageOf(t *testing.T, db *gorm.DB, orgID string) models.AIUsage {
	t.Helper()
	var u models.AIUsage
	db.Where("org_id = ?", orgID).Take(&u)
	return u
}

func TestAIJobRunsAndTheCacheServesTheSameRequest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		p := &counting{Provider: ai.NewLocal()}
		a := &activities.AIJobs{DB: db, Provider: p}
		thread := testdata(t, "ticket_thread.txt")
		doc := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Title: "QuickBooks sync", Content: thread})

		first := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		plan, status := run(t, a, first.ID)
		if status != models.AIJobSucceeded || plan.Chunks != 1 || p.calls.Load() != 1 {
			t.Fatalf("first run: %+v %s, %d calls", plan, status, p.calls.Load())
		}
		j := loadJob(t, db, first.ID)
		var out models.AISummaryOutput
		if err := json.Unmarshal(j.Output(), &out); err != nil || !strings.Contains(out.Summary, "338 of 340 invoices synced") ||
			out.Length != models.AILengthMedium || out.Chunks != 1 {
			t.Fatalf("output %s (%v)", j.Output(), err)
		}
		if j.InputText != thread || j.Provider != "local" || j.Model != ai.LocalModel || j.Cached || j.StartedAt == nil ||
			j.FinishedAt == nil || j.PromptTokens != int64(ai.CountTokens(thread)) || j.CompletionTokens == 0 || j.ModelCalls != 1 {
			t.Fatalf("job %+v", j)
		}
		u := usageOf(t, db, orgID)
		if u.PromptTokens != j.PromptTokens || u.CompletionTokens != j.CompletionTokens || u.Jobs != 1 {
			t.Fatalf("usage %+v", u)
		}

		// The same request again: served from the cache, no model call,
		// no tokens charged.
		second := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID, Options: models.AIJobOptions{Length: "medium"}})
		plan, status = run(t, a, second.ID)
		if !plan.Done || !plan.Cached || status != models.AIJobSucceeded || p.calls.Load() != 1 {
			t.Fatalf("second run: %+v %s, %d calls", plan, status, p.calls.Load())
		}
		j2 := loadJob(t, db, second.ID)
		if !j2.Cached || *j2.Result != *j.Result || j2.PromptTokens != 0 || j2.CacheKey != j.CacheKey {
			t.Fatalf("cached job %+v", j2)
		}
		if u2 := usageOf(t, db, orgID); u2.Jobs != 1 || u2.PromptTokens != u.PromptTokens {
			t.Fatalf("a cached result was charged: %+v", u2)
		}
		// Another length, or refresh: the model runs again.
		short := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID, Options: models.AIJobOptions{Length: "short"}})
		refresh := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID, Refresh: true})
		for _, id := range []string{short.ID, refresh.ID} {
			if plan, status := run(t, a, id); plan.Done || status != models.AIJobSucceeded {
				t.Fatalf("%+v %s", plan, status)
			}
		}
		if p.calls.Load() != 3 || loadJob(t, db, refresh.ID).Cached {
			t.Fatalf("%d calls after a new length and a refresh, want 3", p.calls.Load())
		}
		// Another organization with the same text does not see this cache.
		other, _ := seedOrg(t, db, models.RoleOwner)
		otherDoc := newDoc(t, db, models.NewAIDocument{OrgID: other, Content: thread})
		if plan, _ := run(t, a, newJob(t, db, models.NewAIJob{OrgID: other, Kind: models.AIKindSummarize, DocumentID: otherDoc.ID}).ID); plan.Cached {
			t.Fatal("another organization was served this organization's cache")
		}
	})
}

func TestAIJobAssemblesReferencedRecordsWhenItRuns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, members := seedOrg(t, db, models.RoleOwner)
		a := &activities.AIJobs{DB: db, Provider: ai.NewLocal()}
		now := models.Now()
		ticket := models.Ticket{ID: models.NewID(), OrgID: orgID, Number: 1001, Subject: "Laptop will not boot",
			Description: "My laptop shows a black screen since this morning. I need it for a client demo tomorrow.",
			Status:      models.TicketOpen, Priority: "urgent", Channel: "email", RequesterEmail: "sam@client.io", CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&ticket).Error; err != nil {
			t.Fatal(err)
		}
		doc := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Source: models.AISourceTicket, SourceID: ticket.ID})
		job := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindActionItems, DocumentID: doc.ID})
		if _, status := run(t, a, job.ID); status != models.AIJobSucceeded {
			t.Fatal(status)
		}
		j := loadJob(t, db, job.ID)
		if !strings.Contains(j.InputText, "Ticket #1001: Laptop will not boot") || !strings.Contains(j.InputText, "black screen") {
			t.Fatalf("input %q", j.InputText)
		}
		// A reply arrives: the same document now has other text, so the
		// next job is no cache hit and sees the reply.
		comment := models.TicketComment{ID: models.NewID(), OrgID: orgID, TicketID: ticket.ID, AuthorType: models.AuthorAgent,
			AuthorMemberID: &members[0], Body: "Please hold the power button for 30 seconds. I will call you tomorrow.", Public: true, CreatedAt: now.Add(time.Minute)}
		if err := db.Create(&comment).Error; err != nil {
			t.Fatal(err)
		}
		next := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindActionItems, DocumentID: doc.ID})
		if plan, status := run(t, a, next.ID); plan.Cached || status != models.AIJobSucceeded {
			t.Fatalf("%+v %s", plan, status)
		}
		var out models.AIActionItemsOutput
		_ = json.Unmarshal(loadJob(t, db, next.ID).Output(), &out)
		if len(out.Items) != 2 || !strings.HasPrefix(out.Items[0].Text, "Please hold the power button") ||
			*out.Items[1].DueDate != comment.CreatedAt.UTC().AddDate(0, 0, 1).Format(time.DateOnly) { // the day after the reply's (UTC workspace)
			t.Fatalf("items %+v", out.Items)
		}

		// The ticket is deleted: a queued job fails with source_not_found.
		last := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		db.Delete(&models.TicketComment{}, "ticket_id = ?", ticket.ID)
		db.Delete(&ticket)
		plan, status := run(t, a, last.ID)
		failed := loadJob(t, db, last.ID)
		if !plan.Done || status != models.AIJobFailed || failed.ErrorCode != models.AIErrSourceNotFound || failed.ErrorMessage == "" {
			t.Fatalf("%+v %+v", plan, failed)
		}
	})
}

func TestAIJobFailsWhatCannotRun(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		p := &counting{Provider: ai.NewLocal()}
		a := &activities.AIJobs{DB: db, Provider: p}
		prose := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Content: "We had a good quarter. Sales went up."})

		deleted := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Content: "Gone soon."})
		gone := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: deleted.ID})
		if err := models.DeleteAIDocument(context.Background(), db, orgID, deleted.ID); err != nil {
			t.Fatal(err)
		}
		noTable := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindAnalyze, DocumentID: prose.ID})
		quota := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: prose.ID})
		var org models.Organization
		db.Take(&org, "id = ?", orgID)
		if err := models.RecordAIUsage(db, orgID, models.AIMonth(&org, models.Now()), 1_000_000, 0); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			job  *models.AIJob
			code string
		}{{gone, models.AIErrSourceNotFound}, {noTable, models.AIErrInvalidData}, {quota, models.AIErrQuotaExceeded}} {
			plan, status := run(t, a, c.job.ID)
			j := loadJob(t, db, c.job.ID)
			if !plan.Done || status != models.AIJobFailed || plan.ErrorCode != c.code || j.ErrorCode != c.code || j.Status != models.AIJobFailed {
				t.Errorf("%s: plan %+v job %s %s", c.code, plan, j.Status, j.ErrorCode)
			}
		}
		if p.calls.Load() != 0 {
			t.Fatalf("%d model calls for jobs that cannot run", p.calls.Load())
		}
	})
}

func TestAIJobAnalyzesInlineData(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		a := &activities.AIJobs{DB: db, Provider: ai.NewLocal()}
		job := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindAnalyze,
			Data:    `[{"team":"Blue","tickets":12},{"team":"Red","tickets":30},{"team":"Blue","tickets":18}]`,
			Options: models.AIJobOptions{Question: "Which team handled the most tickets?", GroupBy: "team"}})
		if _, status := run(t, a, job.ID); status != models.AIJobSucceeded {
			t.Fatal(status)
		}
		var out models.AIAnalysisOutput
		if err := json.Unmarshal(loadJob(t, db, job.ID).Output(), &out); err != nil {
			t.Fatal(err)
		}
		if out.Rows != 3 || out.GroupBy != "team" || len(out.Groups) != 2 || *out.Groups[0].Columns[0].Sum != 30 ||
			out.Question != "Which team handled the most tickets?" || !strings.Contains(out.Narrative, "team Blue, with tickets a total of 30") {
			t.Fatalf("output %+v", out)
		}
	})
}

// A result that arrives after the job was canceled is dropped: no result,
// no cache entry, no usage. Completing twice records once.
func TestAIJobCompleteRespectsCancelAndIsIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		a := &activities.AIJobs{DB: db, Provider: ai.NewLocal()}
		doc := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Content: testdata(t, "meeting_transcript.txt")})
		job := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		if _, err := a.Begin(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
		part, err := a.Map(ctx, job.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := a.Reduce(ctx, job.ID, []activities.AIPartial{part})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := models.CancelAIJob(ctx, db, orgID, job.ID); err != nil {
			t.Fatal(err)
		}
		status, err := a.Complete(ctx, job.ID, out)
		if err != nil || status != models.AIJobCanceled {
			t.Fatalf("complete after cancel: %s %v", status, err)
		}
		var results, usage int64
		db.Model(&models.AIResult{}).Count(&results)
		db.Model(&models.AIUsage{}).Count(&usage)
		if results != 0 || usage != 0 || loadJob(t, db, job.ID).Result != nil {
			t.Fatalf("a canceled job stored %d results and %d usage rows", results, usage)
		}
		// Map after the cancel stops the workflow without a model call.
		_, err = a.Map(ctx, job.ID, 0)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeAIJobFinished || !appErr.NonRetryable() {
			t.Fatalf("map after cancel: %v", err)
		}

		again := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		if _, status := run(t, a, again.ID); status != models.AIJobSucceeded {
			t.Fatal(status)
		}
		before := usageOf(t, db, orgID)
		if status, err := a.Complete(ctx, again.ID, out); err != nil || status != models.AIJobSucceeded {
			t.Fatalf("second complete: %s %v", status, err)
		}
		if after := usageOf(t, db, orgID); after != before {
			t.Fatalf("a retried Complete charged again: %+v → %+v", before, after)
		}
	})
}

// A long document through the OpenAI-compatible provider (go-openai against
// the chat-completions test server): one call per chunk, then combining
// calls, and the usage the server reported.
func TestAIJobMapReducesALongDocumentThroughTheChatAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		srv := openaitest.New(t)
		p := openaicompat.New(openaicompat.Config{APIKey: openaitest.APIKey, BaseURL: srv.BaseURL(), Model: "gpt-test",
			Timeout: 5 * time.Second, ChunkTokens: 200})
		a := &activities.AIJobs{DB: db, Provider: p}
		var b strings.Builder
		for range 8 {
			b.WriteString(testdata(t, "meeting_transcript.txt"))
		}
		doc := newDoc(t, db, models.NewAIDocument{OrgID: orgID, Content: b.String()})
		job := newJob(t, db, models.NewAIJob{OrgID: orgID, Kind: models.AIKindSummarize, DocumentID: doc.ID, Options: models.AIJobOptions{Length: "short"}})
		plan, status := run(t, a, job.ID)
		if status != models.AIJobSucceeded || plan.Chunks < 10 {
			t.Fatalf("%+v %s", plan, status)
		}
		reqs := srv.Requests()
		maps, combines := 0, 0
		for _, r := range reqs {
			prompt := openaitest.Prompt(r)
			switch {
			case strings.Contains(prompt, "This is part "):
				maps++
				if ai.CountTokens(prompt) > 200+150 {
					t.Errorf("a part prompt of %d tokens", ai.CountTokens(prompt))
				}
			case strings.HasPrefix(prompt, "These are summaries"):
				combines++
			}
		}
		j := loadJob(t, db, job.ID)
		if maps != plan.Chunks || combines < 1 || j.ModelCalls != len(reqs) {
			t.Fatalf("%d part calls for %d chunks, %d combining calls, %d recorded of %d", maps, plan.Chunks, combines, j.ModelCalls, len(reqs))
		}
		var out models.AISummaryOutput
		_ = json.Unmarshal(j.Output(), &out)
		if !strings.HasPrefix(out.Summary, "Model summary of:") || out.Chunks != plan.Chunks || j.Provider != "openai" || j.Model != "gpt-test" {
			t.Fatalf("output %+v job %s/%s", out, j.Provider, j.Model)
		}
		var words int64
		for _, r := range reqs {
			for _, m := range r.Messages {
				words += int64(len(strings.Fields(m.Content)))
			}
		}
		if j.PromptTokens != words {
			t.Fatalf("prompt tokens %d, the server reported %d", j.PromptTokens, words)
		}
	})
}
