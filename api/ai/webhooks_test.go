package ai_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// A job that finishes tells it: ai.job.succeeded, for a cached result too,
// and ai.job.failed with the error; the job is the API's JSON of it.
func TestWebhooksTellFinishedAIJobs(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newAIOrg(t, e, "AI Co", models.PlanBusiness)
		rc := apitest.Subscribe(t, e, o.owner, o.id, "ai.job.*")
		doc := call(e, o.key, "POST", "/v1/ai/documents", map[string]any{"content": testdata(t, "ticket_thread.txt")}).Expect(201).Map()["id"].(string)
		sum := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, wait("25")).Expect(200))
		cached := readJob(call(e, o.key, "POST", "/v1/ai/summarize", map[string]any{"document_id": doc}, wait("25")).Expect(200))
		failed := readJob(call(e, o.key, "POST", "/v1/ai/analyze", map[string]any{"document_id": doc}, wait("25")).Expect(200))
		if sum.Status != models.AIJobSucceeded || !cached.Cached || failed.Status != models.AIJobFailed {
			t.Fatalf("jobs: %s, cached %v, %s", sum.Status, cached.Cached, failed.Status)
		}
		rc.Receive(e, 3)
		for _, c := range []struct{ id, want string }{{sum.ID, "ai.job.succeeded"}, {cached.ID, "ai.job.succeeded"}, {failed.ID, "ai.job.failed"}} {
			if got := rc.Types(c.id); fmt.Sprint(got) != "["+c.want+"]" {
				t.Errorf("job %s: received %v, want [%s]", c.id, got, c.want)
			}
		}
		for _, r := range rc.Received() {
			var body struct {
				Data struct {
					Object struct {
						WorkflowID string `json:"workflow_id"`
						Error      *struct{ Code string }
					}
				}
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			ob := body.Data.Object
			if ob.WorkflowID != "ai-job/"+r.Object.ID || (r.Object.ID == failed.ID) != (ob.Error != nil && ob.Error.Code == models.AIErrInvalidData) {
				t.Errorf("%s: %s", r.Type, r.Body)
			}
		}
	}, apitest.WithWebhookReceivers())
}
