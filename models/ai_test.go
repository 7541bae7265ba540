package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

func newOrg(t *testing.T, db *gorm.DB, plan, tz string) *models.Organization {
	t.Helper()
	now := models.Now()
	org := &models.Organization{ID: models.NewID(), Name: "Org " + plan, Status: models.OrgActive, Plan: plan,
		Timezone: tz, Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(org).Error; err != nil {
		t.Fatal(err)
	}
	return org
}

func domainCode(err error) string {
	var de *models.DomainError
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func fieldsOf(err error) []string {
	var de *models.DomainError
	if !errors.As(err, &de) {
		return nil
	}
	var out []string
	for _, f := range de.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestPlansCarryAITokenQuotas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		want := map[string]*int64{models.PlanFree: ptr[int64](0), models.PlanStarter: ptr[int64](0), models.PlanBusiness: ptr[int64](1_000_000), models.PlanEnterprise: nil}
		for name, quota := range want {
			p, err := models.FindPlan(context.Background(), db, name)
			if err != nil {
				t.Fatal(err)
			}
			if (quota == nil) != (p.AITokensPerMonth == nil) || (quota != nil && *quota != *p.AITokensPerMonth) {
				t.Errorf("%s quota %v, want %v", name, p.AITokensPerMonth, quota)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestCreateAIDocumentValidates(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := newOrg(t, db, models.PlanBusiness, "UTC")
		cases := []struct {
			name   string
			in     models.NewAIDocument
			fields []string
		}{
			{"nothing", models.NewAIDocument{}, []string{"content"}},
			{"both", models.NewAIDocument{Content: "x", Source: "ticket", SourceID: models.NewID()}, []string{"content"}},
			{"too large", models.NewAIDocument{Content: strings.Repeat("a", models.AIMaxContentBytes+1)}, []string{"content"}},
			{"blank", models.NewAIDocument{Content: "  \n"}, []string{"content"}},
			{"bad type", models.NewAIDocument{Content: "x", ContentType: "text/html"}, []string{"content_type"}},
			{"source id without source", models.NewAIDocument{Content: "x", SourceID: models.NewID()}, []string{"source_id"}},
			{"unknown source", models.NewAIDocument{Source: "deal", SourceID: models.NewID()}, []string{"source"}},
			{"no source id", models.NewAIDocument{Source: "lead"}, []string{"source_id"}},
			{"long title", models.NewAIDocument{Content: "x", Title: strings.Repeat("t", 201)}, []string{"title"}},
		}
		for _, c := range cases {
			c.in.OrgID = org.ID
			_, err := models.CreateAIDocument(ctx, db, c.in)
			if !errors.Is(err, models.ErrInvalid) || strings.Join(fieldsOf(err), ",") != strings.Join(c.fields, ",") {
				t.Errorf("%s: %v (fields %v), want invalid %v", c.name, err, fieldsOf(err), c.fields)
			}
		}
		var n int64
		db.Model(&models.AIDocument{}).Count(&n)
		if n != 0 {
			t.Fatalf("%d documents stored by refused requests", n)
		}
		// Exactly 1 MiB is allowed; the title defaults to the first line.
		doc, err := models.CreateAIDocument(ctx, db, models.NewAIDocument{OrgID: org.ID,
			Content: "# Weekly sync\n" + strings.Repeat("a", models.AIMaxContentBytes-14), ContentType: "text/markdown"})
		if err != nil || doc.Title != "Weekly sync" || doc.ContentType != "text/markdown" {
			t.Fatalf("1 MiB document: %v %+v", err, doc)
		}
		plain, err := models.CreateAIDocument(ctx, db, models.NewAIDocument{OrgID: org.ID, Content: "Hello."})
		if err != nil || plain.ContentType != "text/plain" {
			t.Fatalf("default content type: %v %+v", err, plain)
		}
	})
}

func TestAIDocumentsAndSourcesAreScopedToTheirOrganization(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		mine := newOrg(t, db, models.PlanBusiness, "Europe/Berlin")
		other := newOrg(t, db, models.PlanBusiness, "UTC")
		ticket := seedTicket(t, db, other.ID)

		_, err := models.CreateAIDocument(ctx, db, models.NewAIDocument{OrgID: mine.ID, Source: models.AISourceTicket, SourceID: ticket})
		if !errors.Is(err, models.ErrNotFound) || domainCode(err) != "source_not_found" {
			t.Fatalf("another organization's ticket: %v", err)
		}
		if _, err := models.LoadAISource(ctx, db, mine.ID, models.AISourceTicket, ticket, time.UTC); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("assembling another organization's ticket: %v", err)
		}
		doc, err := models.CreateAIDocument(ctx, db, models.NewAIDocument{OrgID: other.ID, Source: models.AISourceTicket, SourceID: ticket})
		if err != nil || doc.Title != "Ticket #1001: Printer on fire" || *doc.SourceID != ticket {
			t.Fatalf("own ticket: %v %+v", err, doc)
		}
		if _, err := models.FindAIDocument(ctx, db, mine.ID, doc.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another organization's document: %v", err)
		}
		if err := models.DeleteAIDocument(ctx, db, mine.ID, doc.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("deleting another organization's document: %v", err)
		}
		if _, err := models.CreateAIJob(db, models.NewAIJob{OrgID: mine.ID, Kind: models.AIKindSummarize, DocumentID: doc.ID}); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("a job on another organization's document: %v", err)
		}
		if err := models.DeleteAIDocument(ctx, db, other.ID, doc.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := models.FindAIDocument(ctx, db, other.ID, doc.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("deleted document: %v", err)
		}
	})
}

// seedTicket stores ticket #1001 with a customer, an agent and a thread of
// a public reply, an internal note and a customer answer.
func seedTicket(t *testing.T, db *gorm.DB, orgID string) string {
	t.Helper()
	base := time.Date(2026, 3, 2, 9, 14, 0, 0, time.UTC)
	cust := models.Customer{ID: models.NewID(), OrgID: orgID, Name: "Maria Lopez", Email: "maria@acme.io", CreatedAt: base, UpdatedAt: base}
	uid := "user-1"
	agent := models.Member{ID: models.NewID(), OrgID: orgID, UserID: &uid, Email: "dana@suite.io", Name: "Dana Smith",
		Role: models.RoleAgent, Status: models.MemberActive, CreatedAt: base, UpdatedAt: base}
	ticket := models.Ticket{ID: models.NewID(), OrgID: orgID, Number: 1001, Subject: "Printer on fire",
		Description: "Our office printer smells of smoke.", Status: models.TicketOpen, Priority: "high", Channel: "email",
		CustomerID: &cust.ID, RequesterEmail: cust.Email, AgentID: &agent.ID, CreatedAt: base, UpdatedAt: base}
	comments := []models.TicketComment{
		{ID: models.NewID(), OrgID: orgID, TicketID: ticket.ID, AuthorType: models.AuthorAgent, AuthorMemberID: &agent.ID,
			Body: "Please unplug it. We will send a technician by Friday.", Public: true, CreatedAt: base.Add(time.Hour)},
		{ID: models.NewID(), OrgID: orgID, TicketID: ticket.ID, AuthorType: models.AuthorAgent, AuthorMemberID: &agent.ID,
			Body: "Fuser unit recall applies.", Public: false, CreatedAt: base.Add(2 * time.Hour)},
		{ID: models.NewID(), OrgID: orgID, TicketID: ticket.ID, AuthorType: models.AuthorCustomer, AuthorCustomerID: &cust.ID,
			Body: "Unplugged, thanks.", Public: true, CreatedAt: base.Add(3 * time.Hour)},
	}
	for _, v := range []any{&cust, &agent, &ticket, &comments} {
		if err := db.Create(v).Error; err != nil {
			t.Fatal(err)
		}
	}
	return ticket.ID
}

func TestLoadAISourceAssemblesEachRecordType(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := newOrg(t, db, models.PlanBusiness, "Europe/Berlin")
		berlin, _ := time.LoadLocation("Europe/Berlin")
		ticket := seedTicket(t, db, org.ID)
		src, err := models.LoadAISource(ctx, db, org.ID, models.AISourceTicket, ticket, berlin)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"Ticket #1001: Printer on fire", "Priority: high", "Assignee: Dana Smith",
			"[2026-03-02 10:14] Maria Lopez (customer):\nOur office printer smells of smoke.",
			"[2026-03-02 11:14] Dana Smith (agent):\nPlease unplug it. We will send a technician by Friday.",
			"[2026-03-02 12:14] Dana Smith (agent, internal note):\nFuser unit recall applies.",
			"[2026-03-02 13:14] Maria Lopez (customer):\nUnplugged, thanks.",
		} {
			if !strings.Contains(src.Text, want) {
				t.Errorf("ticket text lacks %q:\n%s", want, src.Text)
			}
		}

		now := models.Now()
		lead := models.Lead{ID: models.NewID(), OrgID: org.ID, Name: "Ada Byron", Email: "ada@engines.io", Company: "Engines",
			Value: 12000, Source: "referral", Status: models.LeadContacted, Score: 55, CreatedAt: now, UpdatedAt: now}
		act := models.LeadActivity{ID: models.NewID(), OrgID: org.ID, LeadID: lead.ID, Type: "call", Body: "Wants a demo next week.",
			OccurredAt: now, CreatedAt: now}
		article := models.KBArticle{ID: models.NewID(), OrgID: org.ID, Title: "Reset a password", Slug: "reset", Body: "Click **Forgot**.",
			Status: models.ArticlePublished, CreatedAt: now, UpdatedAt: now}
		for _, v := range []any{&lead, &act, &article} {
			if err := db.Create(v).Error; err != nil {
				t.Fatal(err)
			}
		}
		var cust models.Customer
		db.Take(&cust, "org_id = ?", org.ID)
		if err := models.RecordCustomerEvent(db, org.ID, cust.ID, &ticket, "ticket_created", "Opened ticket #1001 Printer on fire", "customer"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ source, id, title, body string }{
			{models.AISourceLead, lead.ID, "Lead: Ada Byron (Engines)", "call:\nWants a demo next week."},
			{models.AISourceCustomer, cust.ID, "Customer: Maria Lopez", "- #1001 Printer on fire (open, high priority"},
			{models.AISourceCustomer, cust.ID, "Customer: Maria Lopez", "Opened ticket #1001 Printer on fire"},
			{models.AISourceKBArticle, article.ID, "Reset a password", "# Reset a password\n\nClick **Forgot**."},
		} {
			src, err := models.LoadAISource(ctx, db, org.ID, c.source, c.id, time.UTC)
			if err != nil || src.Title != c.title || !strings.Contains(src.Text, c.body) {
				t.Errorf("%s: %v %q\n%s", c.source, err, src.Title, src.Text)
			}
		}
		if _, err := models.LoadAISource(ctx, db, org.ID, models.AISourceLead, "not-an-id", time.UTC); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("malformed id: %v", err)
		}
	})
}

func TestCreateAIJobValidatesAndChecksPlanAndQuota(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := newOrg(t, db, models.PlanBusiness, "UTC")
		doc, err := models.CreateAIDocument(ctx, db, models.NewAIDocument{OrgID: org.ID, Content: "Text."})
		if err != nil {
			t.Fatal(err)
		}
		bad := []struct {
			name   string
			in     models.NewAIJob
			fields []string
		}{
			{"no document", models.NewAIJob{Kind: models.AIKindSummarize}, []string{"document_id"}},
			{"bad length", models.NewAIJob{Kind: models.AIKindSummarize, DocumentID: doc.ID, Options: models.AIJobOptions{Length: "huge"}}, []string{"length"}},
			{"malformed document id", models.NewAIJob{Kind: models.AIKindActionItems, DocumentID: "x"}, []string{"document_id"}},
			{"analyze nothing", models.NewAIJob{Kind: models.AIKindAnalyze}, []string{"data"}},
			{"analyze both", models.NewAIJob{Kind: models.AIKindAnalyze, DocumentID: doc.ID, Data: "a,b\n1,2"}, []string{"data"}},
			{"analyze prose", models.NewAIJob{Kind: models.AIKindAnalyze, Data: "We did well."}, []string{"data"}},
			{"analyze unknown group", models.NewAIJob{Kind: models.AIKindAnalyze, Data: "a,b\n1,2", Options: models.AIJobOptions{GroupBy: "c"}}, []string{"group_by"}},
			{"long question", models.NewAIJob{Kind: models.AIKindAnalyze, Data: "a,b\n1,2", Options: models.AIJobOptions{Question: strings.Repeat("?", 1001)}}, []string{"question"}},
			{"unknown kind", models.NewAIJob{Kind: "translate", DocumentID: doc.ID}, []string{"kind"}},
		}
		for _, c := range bad {
			c.in.OrgID = org.ID
			if _, err := models.CreateAIJob(db, c.in); !errors.Is(err, models.ErrInvalid) || strings.Join(fieldsOf(err), ",") != strings.Join(c.fields, ",") {
				t.Errorf("%s: %v %v", c.name, err, fieldsOf(err))
			}
		}
		job, err := models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindSummarize, DocumentID: doc.ID, CreatedBy: "key-1"})
		if err != nil || job.Status != models.AIJobQueued || job.ParsedOptions().Length != models.AILengthMedium || *job.DocumentID != doc.ID {
			t.Fatalf("summarize job: %v %+v", err, job)
		}
		inline, err := models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindAnalyze, Data: "region,amount\nN,1\nS,2",
			Options: models.AIJobOptions{Question: " Which region sells most? ", GroupBy: "region"}})
		if err != nil || inline.ParsedOptions().Question != "Which region sells most?" || inline.DocumentID != nil {
			t.Fatalf("inline analysis: %v %+v", err, inline)
		}

		// The month's tokens spent: 402 ai_quota_exceeded, nothing stored.
		month := models.AIMonth(org, models.Now())
		if err := models.RecordAIUsage(db, org.ID, month, 600_000, 400_000); err != nil {
			t.Fatal(err)
		}
		var before int64
		db.Model(&models.AIJob{}).Count(&before)
		_, err = models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		if !errors.Is(err, models.ErrLimit) || domainCode(err) != models.CodeAIQuotaExceeded {
			t.Fatalf("quota spent: %v", err)
		}
		var after int64
		db.Model(&models.AIJob{}).Count(&after)
		if after != before {
			t.Fatal("a refused job was stored")
		}
		// Enterprise is unlimited; free has no AI at all.
		if err := models.SetOrgPlan(ctx, db, org.ID, models.PlanEnterprise); err != nil {
			t.Fatal(err)
		}
		if _, err := models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindSummarize, DocumentID: doc.ID}); err != nil {
			t.Fatalf("enterprise: %v", err)
		}
		if err := models.SetOrgPlan(ctx, db, org.ID, models.PlanFree); err != nil {
			t.Fatal(err)
		}
		_, err = models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindSummarize, DocumentID: doc.ID})
		if !errors.Is(err, models.ErrLimit) || domainCode(err) != models.CodePlanUpgradeRequired {
			t.Fatalf("free plan: %v", err)
		}
	})
}

func TestAIUsageIsCountedPerOrganizationAndLocalMonth(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := newOrg(t, db, models.PlanBusiness, "America/New_York")
		other := newOrg(t, db, models.PlanBusiness, "UTC")
		// 03:00 UTC on April 1st is still March 31st in New York.
		at := time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC)
		if m := models.AIMonth(org, at); m != "2026-03" {
			t.Fatalf("month %s, want 2026-03", m)
		}
		for range 2 {
			if err := models.RecordAIUsage(db, org.ID, "2026-03", 100, 50); err != nil {
				t.Fatal(err)
			}
		}
		if err := models.RecordAIUsage(db, other.ID, "2026-03", 7, 7); err != nil {
			t.Fatal(err)
		}
		r, err := models.AIUsageFor(ctx, db, org.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		if r.Month != "2026-03" || r.PromptTokens != 200 || r.CompletionTokens != 100 || r.TotalTokens != 300 || r.Jobs != 2 ||
			*r.Quota != 1_000_000 || *r.Remaining != 999_700 || !r.ResetsAt.Equal(time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC)) {
			t.Fatalf("report %+v", r)
		}
		// The next local month starts empty.
		r, _ = models.AIUsageFor(ctx, db, org.ID, at.Add(2*time.Hour))
		if r.Month != "2026-04" || r.TotalTokens != 0 {
			t.Fatalf("next month %+v", r)
		}
		if err := models.SetOrgPlan(ctx, db, org.ID, models.PlanEnterprise); err != nil {
			t.Fatal(err)
		}
		r, _ = models.AIUsageFor(ctx, db, org.ID, at)
		if r.Quota != nil || r.Remaining != nil {
			t.Fatalf("enterprise is unlimited: %+v", r)
		}
	})
}

func TestAIJobTransitionsAndCancel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := newOrg(t, db, models.PlanBusiness, "UTC")
		other := newOrg(t, db, models.PlanBusiness, "UTC")
		newJob := func() *models.AIJob {
			j, err := models.CreateAIJob(db, models.NewAIJob{OrgID: org.ID, Kind: models.AIKindAnalyze, Data: "a,b\n1,2"})
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		j := newJob()
		if moved, err := models.MoveAIJob(db, j.ID, models.AIJobSucceeded, nil); err != nil || moved {
			t.Fatalf("queued → succeeded moved: %v %v", moved, err)
		}
		if moved, _ := models.MoveAIJob(db, j.ID, models.AIJobRunning, nil); !moved {
			t.Fatal("queued → running did not move")
		}
		if _, err := models.CancelAIJob(ctx, db, other.ID, j.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("cancel from another organization: %v", err)
		}
		c, err := models.CancelAIJob(ctx, db, org.ID, j.ID)
		if err != nil || c.Status != models.AIJobCanceled || c.FinishedAt == nil {
			t.Fatalf("cancel running: %v %+v", err, c)
		}
		// A result arriving after the cancel is dropped.
		if moved, _ := models.MoveAIJob(db, j.ID, models.AIJobSucceeded, map[string]any{"result": `{}`}); moved {
			t.Fatal("canceled → succeeded moved")
		}
		if again, err := models.CancelAIJob(ctx, db, org.ID, j.ID); err != nil || again.Status != models.AIJobCanceled {
			t.Fatalf("cancel twice: %v", err)
		}

		done := newJob()
		models.MoveAIJob(db, done.ID, models.AIJobRunning, nil)
		models.MoveAIJob(db, done.ID, models.AIJobSucceeded, nil)
		_, err = models.CancelAIJob(ctx, db, org.ID, done.ID)
		if !errors.Is(err, models.ErrConflict) || domainCode(err) != models.CodeAIJobFinished {
			t.Fatalf("cancel succeeded job: %v", err)
		}
		queued := newJob()
		if c, err := models.CancelAIJob(ctx, db, org.ID, queued.ID); err != nil || c.Status != models.AIJobCanceled {
			t.Fatalf("cancel queued: %v", err)
		}
	})
}

func TestAIResultCacheIsPerOrganizationAndRefreshReplaces(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := newOrg(t, db, models.PlanBusiness, "UTC")
		other := newOrg(t, db, models.PlanBusiness, "UTC")
		r := &models.AIResult{OrgID: org.ID, CacheKey: "k", JobID: models.NewID(), Kind: models.AIKindSummarize,
			Provider: "local", Model: "m", Result: `{"summary":"one"}`, CreatedAt: models.Now()}
		if err := models.StoreAIResult(db, r); err != nil {
			t.Fatal(err)
		}
		if got, err := models.FindAIResult(db, other.ID, "k"); err != nil || got != nil {
			t.Fatalf("another organization sees the cache: %+v %v", got, err)
		}
		newer := *r
		newer.JobID, newer.Result = models.NewID(), `{"summary":"two"}`
		if err := models.StoreAIResult(db, &newer); err != nil {
			t.Fatal(err)
		}
		got, err := models.FindAIResult(db, org.ID, "k")
		if err != nil || got.Result != `{"summary":"two"}` || got.JobID != newer.JobID {
			t.Fatalf("refreshed cache: %+v %v", got, err)
		}
	})
}
