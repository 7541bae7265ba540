package ai_test

import (
	"strings"
	"testing"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// Every job kind end to end through the real Temporal server and the local
// provider: documents (text and a ticket's thread), summaries, action
// items, an analysis, the cache, refresh, lists and usage.
func TestAIJobsEndToEnd(t *testing.T) {
	provider := newCounting(ai.NewLocal())
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newAIOrg(t, e, "AI Co", models.PlanBusiness)

		// A text document: the ticket thread of activities/ai/testdata.
		r := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"content": testdata(t, "ticket_thread.txt")}).Expect(201)
		var doc struct {
			ID           string  `json:"id"`
			Title        string  `json:"title"`
			ContentType  *string `json:"content_type"`
			ContentBytes int     `json:"content_bytes"`
			Content      *string `json:"content"`
		}
		r.JSON(&doc)
		if r.Header.Get("Location") != "/v1/ai/documents/"+doc.ID || doc.ContentType == nil || *doc.ContentType != "text/plain" ||
			!strings.HasPrefix(doc.Title, "Ticket #1042") || doc.ContentBytes != len(testdata(t, "ticket_thread.txt")) || doc.Content != nil {
			t.Fatalf("created document: %s (Location %q)", r.Body, r.Header.Get("Location"))
		}
		call(e, o.key, "GET", "/v1/ai/documents/"+doc.ID, nil).Expect(200).JSON(&doc)
		if doc.Content == nil || *doc.Content != testdata(t, "ticket_thread.txt") {
			t.Fatalf("GET shows no content")
		}

		// Summary, waited for: 200 with the result.
		before := provider.calls.Load()
		r = call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc.ID}, wait("25")).Expect(200)
		sum := readJob(r)
		if r.Header.Get("Location") != "/v1/ai/jobs/"+sum.ID || r.Header.Get("Preference-Applied") != "wait=25" {
			t.Errorf("headers: %v", r.Header)
		}
		if sum.Status != "succeeded" || sum.Kind != "summarize" || sum.Result.Length != "medium" || sum.Cached ||
			sum.Provider == nil || *sum.Provider != "local" || sum.Model == nil || *sum.Model != ai.LocalModel ||
			sum.Usage.PromptTokens == 0 || sum.Usage.CompletionTokens == 0 || sum.WorkflowID != "ai-job/"+sum.ID || sum.Timings.RunMS == nil {
			t.Fatalf("summary job: %s", r.Body)
		}
		for _, want := range []string{"none of our invoices sync to QuickBooks anymore", "the 2.3 migration dropped the refresh token",
			"338 of 340 invoices synced"} {
			if !strings.Contains(sum.Result.Summary, want) {
				t.Errorf("the summary lacks %q:\n%s", want, sum.Result.Summary)
			}
		}
		if strings.Contains(sum.Result.Summary, "Best regards") {
			t.Errorf("the summary holds a sign-off:\n%s", sum.Result.Summary)
		}
		if provider.calls.Load() == before {
			t.Error("the provider was not called")
		}

		// The same request again: served from the cache, no provider call.
		before = provider.calls.Load()
		again := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc.ID, "length": "medium"}, wait("25")).Expect(200))
		if !again.Cached || again.ID == sum.ID || again.Result.Summary != sum.Result.Summary || again.Usage.TotalTokens != 0 {
			t.Errorf("second summary: cached %v, tokens %d", again.Cached, again.Usage.TotalTokens)
		}
		if n := provider.calls.Load() - before; n != 0 {
			t.Errorf("a cached result made %d provider calls", n)
		}
		// refresh: true calls the provider again.
		fresh := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc.ID, "refresh": true}, wait("25")).Expect(200))
		if fresh.Cached || !fresh.Refresh || fresh.Status != "succeeded" || provider.calls.Load() == before {
			t.Errorf("refresh: cached %v, calls %d", fresh.Cached, provider.calls.Load()-before)
		}
		// Another length is another result.
		short := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc.ID, "length": "short"}, wait("25")).Expect(200))
		if short.Cached || short.Result.Length != "short" || len(short.Result.Summary) >= len(sum.Result.Summary) {
			t.Errorf("short summary: %+v", short.Result)
		}

		// Action items of a meeting, without waiting: 202, then poll.
		meeting := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"title": "Weekly sync",
			"content": testdata(t, "meeting_transcript.txt"), "content_type": "text/markdown"}).Expect(201).Map()["id"].(string)
		r = call(e, o.key, "POST", "/v1/ai/action-items", map[string]any{"document_id": meeting}).Expect(202)
		queued := readJob(r)
		if queued.Status != "queued" && queued.Status != "running" {
			t.Errorf("202 with status %s", queued.Status)
		}
		items := awaitJob(e, o.key, queued.ID)
		if items.Status != "succeeded" || items.Kind != "action_items" {
			t.Fatalf("action items job: %+v", items)
		}
		found := map[string]bool{}
		for _, it := range items.Result.Items {
			switch {
			case strings.Contains(it.Text, "update the newsletter") && it.Owner != nil && *it.Owner == "Omar Haddad" && it.DueDate != nil && *it.DueDate == "2026-03-06":
				found["omar"] = true
			case strings.Contains(it.Text, "prepare the customer email") && it.Owner != nil && *it.Owner == "Lena Fischer" && it.DueDate != nil && *it.DueDate == "2026-03-09":
				found["lena"] = true
			case strings.Contains(it.Text, "book the launch retro") && it.Owner != nil && *it.Owner == "Priya Patel" && it.DueDate != nil && *it.DueDate == "2026-03-18":
				found["priya"] = true
			}
		}
		if len(found) != 3 {
			t.Errorf("action items lack owners or due dates (found %v): %+v", found, items.Result.Items)
		}

		// A document that references a ticket: its thread is read when the job runs.
		hd := apitest.HelpdeskKey(e.CreateKey(o.owner, o.id, "helpdesk"), o.id)
		var ticket struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: hd, Body: map[string]any{
			"subject": "Exports time out", "email": "maria@customer.example", "name": "Maria Lopez",
			"description": "Since the upgrade every invoice export times out after 30 seconds."}}).Expect(201).JSON(&ticket)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + ticket.ID + "/comments", Headers: hd, Body: map[string]any{
			"body": "We traced the timeout to the new PDF renderer. @raj please ship the renderer fix by Friday."}}).Expect(201)
		ref := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"source": "ticket", "source_id": ticket.ID}).Expect(201).Map()
		if ref["source"] != "ticket" || ref["source_id"] != ticket.ID || ref["content_type"] != nil || !strings.Contains(ref["title"].(string), "Exports time out") {
			t.Fatalf("reference document: %v", ref)
		}
		refItems := readJob(call(e, o.key, "POST", "/v1/ai/action-items", map[string]any{"document_id": ref["id"]}, wait("25")).Expect(200))
		if len(refItems.Result.Items) != 1 || !strings.Contains(refItems.Result.Items[0].Text, "ship the renderer fix") ||
			refItems.Result.Items[0].Owner == nil || !strings.EqualFold(*refItems.Result.Items[0].Owner, "raj") || refItems.Result.Items[0].DueDate == nil {
			t.Errorf("action items of the ticket: %+v", refItems.Result.Items)
		}

		// Analysis of inline CSV: numbers computed in code, a narrative.
		csv := "month,region,revenue\n2026-01,EU,100\n2026-02,EU,200\n2026-03,US,300\n2026-04,US,500\n"
		an := readJob(call(e, o.key, "POST", "/v1/ai/analyze", map[string]any{"data": csv, "question": "Which region earns more?",
			"group_by": "region"}, wait("25")).Expect(200))
		if an.Status != "succeeded" || an.Result.Rows != 4 || len(an.Result.Groups) != 2 || an.Result.Narrative == "" {
			t.Fatalf("analysis: %+v", an)
		}
		for _, c := range an.Result.Columns {
			if c.Name == "revenue" && (c.Sum == nil || *c.Sum != 1100 || c.Mean == nil || *c.Mean != 275) {
				t.Errorf("revenue: sum %v mean %v", c.Sum, c.Mean)
			}
		}
		if !strings.Contains(an.Result.Narrative, "US") {
			t.Errorf("the narrative does not answer the question: %s", an.Result.Narrative)
		}
		rows := readJob(call(e, o.key, "POST", "/v1/ai/analyze", map[string]any{"data": []map[string]any{{"n": 1}, {"n": 2}}}, wait("25")).Expect(200))
		if rows.Status != "succeeded" || rows.Result.Rows != 2 {
			t.Errorf("analysis of JSON rows: %+v", rows)
		}

		// Lists: newest first, paged with next_cursor, filtered.
		var page struct {
			Data       []job   `json:"data"`
			NextCursor *string `json:"next_cursor"`
			HasMore    bool    `json:"has_more"`
		}
		call(e, o.key, "GET", "/v1/ai/jobs?limit=3", nil).Expect(200).JSON(&page)
		if len(page.Data) != 3 || !page.HasMore || page.NextCursor == nil || page.Data[0].ID != rows.ID {
			t.Fatalf("first page of jobs: %+v", page)
		}
		seen := map[string]bool{}
		total := 0
		for {
			for _, j := range page.Data {
				if seen[j.ID] {
					t.Fatalf("job %s on two pages", j.ID)
				}
				seen[j.ID] = true
				total++
			}
			if !page.HasMore {
				break
			}
			call(e, o.key, "GET", "/v1/ai/jobs?limit=3&cursor="+*page.NextCursor, nil).Expect(200).JSON(&page)
		}
		if total != 8 {
			t.Errorf("%d jobs listed, want 8", total)
		}
		call(e, o.key, "GET", "/v1/ai/jobs?kind=action_items&status=succeeded", nil).Expect(200).JSON(&page)
		if len(page.Data) != 2 || page.HasMore || page.NextCursor != nil {
			t.Errorf("action_items filter: %d jobs", len(page.Data))
		}
		call(e, o.key, "GET", "/v1/ai/jobs?document_id="+meeting, nil).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].ID != queued.ID {
			t.Errorf("document filter: %+v", page.Data)
		}
		var docs struct {
			Data []struct {
				ID           string `json:"id"`
				ContentBytes int    `json:"content_bytes"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		call(e, o.key, "GET", "/v1/ai/documents?limit=2", nil).Expect(200).JSON(&docs)
		if len(docs.Data) != 2 || !docs.HasMore || docs.Data[0].ID != ref["id"] || docs.Data[1].ID != meeting || docs.Data[1].ContentBytes != len(testdata(t, "meeting_transcript.txt")) {
			t.Errorf("documents page: %+v", docs)
		}
		call(e, o.key, "GET", "/v1/ai/documents?source=ticket", nil).Expect(200).JSON(&docs)
		if len(docs.Data) != 1 || docs.Data[0].ID != ref["id"] {
			t.Errorf("source filter: %+v", docs)
		}

		// Usage adds up every job's tokens (cached ones count nothing).
		var usage struct {
			Plan        string `json:"plan"`
			TotalTokens int64  `json:"total_tokens"`
			Jobs        int    `json:"jobs"`
			Quota       *int64 `json:"quota"`
			Remaining   *int64 `json:"remaining"`
		}
		call(e, o.key, "GET", "/v1/ai/usage", nil).Expect(200).JSON(&usage)
		var want int64
		for _, j := range []job{sum, again, fresh, short, items, refItems, an, rows} {
			want += j.Usage.TotalTokens
		}
		if usage.Plan != "business" || usage.TotalTokens != want || usage.Jobs != 7 || usage.Quota == nil || *usage.Quota != 1_000_000 ||
			*usage.Remaining != 1_000_000-want {
			t.Errorf("usage %+v, want %d tokens in 7 jobs", usage, want)
		}

		// Deleting a document keeps its jobs' results.
		call(e, o.key, "DELETE", "/v1/ai/documents/"+doc.ID, nil).Expect(204)
		call(e, o.key, "GET", "/v1/ai/documents/"+doc.ID, nil).ExpectProblem(404, "not_found")
		call(e, o.key, "DELETE", "/v1/ai/documents/"+doc.ID, nil).ExpectProblem(404, "not_found")
		if kept := readJob(call(e, o.key, "GET", "/v1/ai/jobs/"+sum.ID, nil).Expect(200)); kept.Result.Summary != sum.Result.Summary {
			t.Error("the job lost its result with its document")
		}
		call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc.ID}).ExpectProblem(404, "document_not_found")
	}, apitest.WithAIProvider(provider))
}
