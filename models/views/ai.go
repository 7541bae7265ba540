package views

import (
	"encoding/json"
	"time"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// AIJob is a Generative AI job as the API shows it and, once it
// succeeded, its result. WorkflowURL is set by the API alone (it knows
// where the Temporal Web UI is).
type AIJob struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	DocumentID *string         `json:"document_id"`
	Options    AIJobOptions    `json:"options"`
	Refresh    bool            `json:"refresh"`
	Cached     bool            `json:"cached"`
	Result     json.RawMessage `json:"result"`
	Error      *AIJobError     `json:"error"`
	Provider   *string         `json:"provider"`
	Model      *string         `json:"model"`
	Usage      AIJobUsage      `json:"usage"`
	Timings    AIJobTimings    `json:"timings"`
	WorkflowID string          `json:"workflow_id"`
	// WorkflowURL opens the job's workflow in the Temporal Web UI (when
	// the suite knows where that is).
	WorkflowURL *string    `json:"workflow_url,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

type AIJobOptions struct {
	Length   *string `json:"length,omitempty"`
	Question *string `json:"question,omitempty"`
	GroupBy  *string `json:"group_by,omitempty"`
}

type AIJobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type AIJobUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	ModelCalls       int   `json:"model_calls"`
}

type AIJobTimings struct {
	QueuedMS int64  `json:"queued_ms"`
	RunMS    *int64 `json:"run_ms"`
	ModelMS  int64  `json:"model_ms"`
}

// ToAIJob is j as the API shows it, without WorkflowURL.
func ToAIJob(j *models.AIJob) AIJob {
	o := j.ParsedOptions()
	t := j.Timings()
	out := AIJob{ID: j.ID, Kind: j.Kind, Status: j.Status, DocumentID: j.DocumentID, Refresh: j.Refresh, Cached: j.Cached,
		Options:  AIJobOptions{Length: optionalText(o.Length), Question: optionalText(o.Question), GroupBy: optionalText(o.GroupBy)},
		Result:   j.Output(),
		Provider: optionalText(j.Provider), Model: optionalText(j.Model),
		Usage: AIJobUsage{PromptTokens: j.PromptTokens, CompletionTokens: j.CompletionTokens,
			TotalTokens: j.PromptTokens + j.CompletionTokens, ModelCalls: j.ModelCalls},
		Timings:    AIJobTimings{QueuedMS: t.QueuedMS, RunMS: t.RunMS, ModelMS: t.ModelMS},
		WorkflowID: names.AIJobID(j.ID),
		CreatedAt:  j.CreatedAt.UTC(), StartedAt: utcTime(j.StartedAt), FinishedAt: utcTime(j.FinishedAt)}
	if out.Result == nil {
		out.Result = json.RawMessage("null")
	}
	if j.ErrorCode != "" {
		out.Error = &AIJobError{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	return out
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utcTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
