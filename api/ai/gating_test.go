package ai_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// Who may use the AI interface (spec §5, §7): ai_ keys of Business and
// Enterprise organizations only; another organization's documents, jobs
// and records are not found; a spent quota is a 402; bad input is one 422
// that lists every bad field.
func TestAIGatingQuotaAndValidation(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		a := newAIOrg(t, e, "Business A", models.PlanBusiness)
		doc := call(e, a.key, "POST", "/v1/ai/documents", map[string]any{"content": "Please send the report by Friday."}).Expect(201).Map()["id"].(string)
		jobID := readJob(call(e, a.key, "POST", "/v1/ai/action-items", map[string]any{"document_id": doc}, wait("25")).Expect(200)).ID
		hdA := apitest.HelpdeskKey(e.CreateKey(a.owner, a.id, "helpdesk"), a.id)
		var ticket struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: hdA, Body: map[string]any{
			"subject": "Printer", "email": "bob@a.example"}}).Expect(201).JSON(&ticket)

		// Plans without AI: their ai_ keys get an upgrade prompt on every route.
		for _, plan := range []string{models.PlanFree, models.PlanStarter} {
			o := newAIOrg(t, e, "No AI "+plan, plan)
			for _, r := range []struct{ method, path string }{{"GET", "/v1/ai/documents"}, {"POST", "/v1/ai/summarize"}, {"GET", "/v1/ai/usage"}} {
				var body any
				if r.method == "POST" {
					body = map[string]any{"document_id": doc}
				}
				p := call(e, o.key, r.method, r.path, body).ExpectProblem(402, "plan_upgrade_required")
				if !strings.Contains(p["detail"].(string), plan) {
					t.Errorf("%s: %v", plan, p["detail"])
				}
			}
		}
		// Keys of other services are 403; a user token and no credential 401.
		call(e, e.CreateKey(a.owner, a.id, "crm"), "GET", "/v1/ai/jobs", nil).ExpectProblem(403, "wrong_service_key")
		call(e, e.CreateKey(a.owner, a.id, "helpdesk"), "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}).ExpectProblem(403, "wrong_service_key")
		e.Do(apitest.Request{Method: "GET", Path: "/v1/ai/usage", Headers: a.owner.Auth()}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: "/v1/ai/usage"}).ExpectProblem(401, "unauthorized")
		call(e, "ai_notarealkey0123456789abcdefghijkl", "GET", "/v1/ai/usage", nil).Expect(401)

		// Another organization: A's document, job and ticket are not found.
		b := newAIOrg(t, e, "Enterprise B", models.PlanEnterprise)
		call(e, b.key, "GET", "/v1/ai/documents/"+doc, nil).ExpectProblem(404, "not_found")
		call(e, b.key, "DELETE", "/v1/ai/documents/"+doc, nil).ExpectProblem(404, "not_found")
		call(e, b.key, "GET", "/v1/ai/jobs/"+jobID, nil).ExpectProblem(404, "not_found")
		call(e, b.key, "POST", "/v1/ai/jobs/"+jobID+"/cancel", nil).ExpectProblem(404, "not_found")
		call(e, b.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}).ExpectProblem(404, "document_not_found")
		call(e, b.key, "POST", "/v1/ai/analyze", map[string]any{"document_id": doc}).ExpectProblem(404, "document_not_found")
		call(e, b.key, "POST", "/v1/ai/documents", map[string]any{"source": "ticket", "source_id": ticket.ID}).ExpectProblem(404, "source_not_found")
		// Every kind of record: A may reference its own, B none of A's.
		var lead, article, fullTicket struct{ ID, CustomerID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: apitest.Bearer(e.CreateKey(a.owner, a.id, "crm")),
			Body: map[string]any{"name": "Grace", "email": "grace@a.example"}}).Expect(201).JSON(&lead)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/knowledge-base/articles", Headers: hdA,
			Body: map[string]any{"title": "Reset the printer", "body": "Hold the power button for 10 seconds."}}).Expect(201).JSON(&article)
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + ticket.ID, Headers: hdA}).Expect(200).JSON(&fullTicket)
		for source, id := range map[string]string{"lead": lead.ID, "kb_article": article.ID, "customer": fullTicket.CustomerID, "ticket": ticket.ID} {
			call(e, b.key, "POST", "/v1/ai/documents", map[string]any{"source": source, "source_id": id}).ExpectProblem(404, "source_not_found")
			own := call(e, a.key, "POST", "/v1/ai/documents", map[string]any{"source": source, "source_id": id}).Expect(201).Map()
			if own["source"] != source || own["source_id"] != id || own["title"] == "" {
				t.Errorf("A's reference to its %s: %v", source, own)
			}
		}
		for _, path := range []string{"/v1/ai/documents", "/v1/ai/jobs"} {
			if r := call(e, b.key, "GET", path, nil).Expect(200); strings.Contains(string(r.Body), doc) || strings.Contains(string(r.Body), jobID) {
				t.Errorf("B's %s shows A's: %s", path, r.Body)
			}
		}
		// Enterprise is unlimited.
		u := call(e, b.key, "GET", "/v1/ai/usage", nil).Expect(200).Map()
		if u["quota"] != nil || u["remaining"] != nil || u["plan"] != "enterprise" {
			t.Errorf("enterprise usage: %v", u)
		}

		// Validation: every bad field at once.
		bad := []struct {
			path string
			body map[string]any
			want map[string]string
		}{
			{"/v1/ai/summarize", map[string]any{"bogus": 1, "length": "huge", "refresh": "yes"},
				map[string]string{"bogus": "unknown_field", "length": "oneof", "refresh": "invalid_type", "document_id": "required"}},
			{"/v1/ai/summarize", map[string]any{"document_id": "nope"}, map[string]string{"document_id": "uuid"}},
			{"/v1/ai/action-items", map[string]any{"length": "short"}, map[string]string{"length": "unknown_field", "document_id": "required"}},
			{"/v1/ai/analyze", map[string]any{"question": strings.Repeat("?", 1001)}, map[string]string{"question": "max", "data": "required"}},
			{"/v1/ai/analyze", map[string]any{"data": 5, "format": "xml"}, map[string]string{"data": "invalid_type", "format": "oneof"}},
			{"/v1/ai/analyze", map[string]any{"data": "a,b\n1,2\n", "group_by": "c"}, map[string]string{"group_by": "column"}},
			{"/v1/ai/analyze", map[string]any{"data": "just words", "document_id": doc}, map[string]string{"data": "excluded_with"}},
			{"/v1/ai/documents", map[string]any{"bogus": 1, "title": strings.Repeat("t", 201), "content_type": "text/html", "content": "hi"},
				map[string]string{"bogus": "unknown_field", "title": "max", "content_type": "oneof"}},
			{"/v1/ai/documents", map[string]any{"source": "invoice", "source_id": "x"}, map[string]string{"source": "oneof", "source_id": "uuid"}},
			{"/v1/ai/documents", map[string]any{}, map[string]string{"content": "required"}},
			{"/v1/ai/documents", map[string]any{"content": "x", "source": "ticket", "source_id": ticket.ID}, map[string]string{"content": "excluded_with"}},
			{"/v1/ai/documents", map[string]any{"content": "   "}, map[string]string{"content": "required"}},
		}
		for _, tc := range bad {
			r := call(e, a.key, "POST", tc.path, tc.body)
			p := r.ExpectProblem(422, "validation_failed")
			got := map[string]string{}
			for _, f := range p["errors"].([]any) {
				f := f.(map[string]any)
				got[f["field"].(string)] = f["code"].(string)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("POST %s %v: fields %v, want %v", tc.path, tc.body, got, tc.want)
			}
		}
		for _, q := range []string{"/v1/ai/jobs?status=done", "/v1/ai/jobs?limit=500", "/v1/ai/jobs?document_id=x", "/v1/ai/documents?source=fax", "/v1/ai/documents?cursor=zz"} {
			call(e, a.key, "GET", q, nil).ExpectProblem(422, "validation_failed")
		}
		call(e, a.key, "POST", "/v1/ai/summarize", "{").ExpectProblem(400, "malformed_json")
		// Content over 1 MiB: the server refuses the body from its headers,
		// after its first 8 KiB (over a real socket: the client announces
		// the size and sends 16 KiB; web.LimitBody).
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.BaseURL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/ai/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n{\"content\":\"%s", a.key, models.AIMaxContentBytes+100, strings.Repeat("a", 16<<10))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		var tooLarge map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&tooLarge)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 413 || tooLarge["code"] != "payload_too_large" || !strings.Contains(fmt.Sprint(tooLarge["detail"]), "1 MiB") {
			t.Errorf("content over 1 MiB: %d %v", resp.StatusCode, tooLarge)
		}
		// A finished job cannot be canceled.
		call(e, a.key, "POST", "/v1/ai/jobs/"+jobID+"/cancel", nil).ExpectProblem(409, "ai_job_finished")

		// Idempotency-Key: a retry replays the first job, no second job.
		idem := map[string]string{"Idempotency-Key": "sum-" + doc}
		first := readJob(call(e, a.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, idem).Expect(202))
		replay := call(e, a.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, idem).Expect(202)
		if readJob(replay).ID != first.ID || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the retry made job %s (first %s)", readJob(replay).ID, first.ID)
		}
		call(e, a.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc, "length": "long"}, idem).ExpectProblem(422, "idempotency_key_reused")
		awaitJob(e, a.key, first.ID)

		// The quota: once the month's tokens are spent, new jobs are a 402.
		org, err := models.FindOrg(t.Context(), e.DB, a.id)
		if err != nil {
			t.Fatal(err)
		}
		var used models.AIUsage
		e.DB.Take(&used, "org_id = ? AND month = ?", a.id, models.AIMonth(org, models.Now()))
		if err := models.RecordAIUsage(e.DB, a.id, models.AIMonth(org, models.Now()), 1_000_000-used.PromptTokens-used.CompletionTokens, 0); err != nil {
			t.Fatal(err)
		}
		p := call(e, a.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}).ExpectProblem(402, "ai_quota_exceeded")
		if !strings.Contains(p["detail"].(string), "1000000") {
			t.Errorf("quota detail: %v", p["detail"])
		}
		call(e, a.key, "POST", "/v1/ai/analyze", map[string]any{"data": "a,b\n1,2\n"}).ExpectProblem(402, "ai_quota_exceeded")
		u = call(e, a.key, "GET", "/v1/ai/usage", nil).Expect(200).Map()
		if u["remaining"] != float64(0) || u["total_tokens"] != float64(1_000_000) {
			t.Errorf("usage after the quota: %v", u)
		}
		// Reading stays allowed.
		call(e, a.key, "GET", "/v1/ai/jobs/"+jobID, nil).Expect(200)
	})
}
