package models

import (
	"encoding/json"
	"time"

	"github.com/business-suite/suite/models/aidata"
)

// AI job kinds (the operation a job performs).
const (
	AIKindSummarize   = "summarize"
	AIKindActionItems = "action_items"
	AIKindAnalyze     = "analyze"
)

// AI job statuses: queued → running → succeeded | failed | canceled.
const (
	AIJobQueued    = "queued"
	AIJobRunning   = "running"
	AIJobSucceeded = "succeeded"
	AIJobFailed    = "failed"
	AIJobCanceled  = "canceled"
)

// Summary lengths (what each means is defined by the providers in
// activities/ai and documented in docs/decisions.md).
const (
	AILengthShort  = "short"
	AILengthMedium = "medium"
	AILengthLong   = "long"
)

// AILengths lists the summary lengths; medium is the default.
var AILengths = []string{AILengthShort, AILengthMedium, AILengthLong}

// Sources a document may reference.
const (
	AISourceTicket    = "ticket"
	AISourceLead      = "lead"
	AISourceCustomer  = "customer"
	AISourceKBArticle = "kb_article"
)

// AISources lists the record types a document may reference.
var AISources = []string{AISourceTicket, AISourceLead, AISourceCustomer, AISourceKBArticle}

// AIContentTypes lists the content types of a text document.
var AIContentTypes = []string{"text/plain", "text/markdown"}

// Limits of AI inputs.
const (
	AIMaxContentBytes = 1 << 20 // a document's content, and inline analysis data
	AIMaxTitleChars   = 200
	AIMaxQuestionLen  = 1000
)

// Problem codes of AI refusals.
const (
	CodeAIQuotaExceeded     = "ai_quota_exceeded"
	CodePlanUpgradeRequired = "plan_upgrade_required"
	CodeAIJobFinished       = "ai_job_finished"
)

// Error codes a failed job records (error_code).
const (
	AIErrProviderRejected     = "provider_rejected"     // the provider refused the request (400)
	AIErrProviderUnauthorized = "provider_unauthorized" // the provider refused the suite's credentials (401/403)
	AIErrProviderUnavailable  = "provider_unavailable"  // 429, 5xx, timeouts: still failing after every retry
	AIErrQuotaExceeded        = CodeAIQuotaExceeded     // the organization's monthly tokens were spent before it ran
	AIErrSourceNotFound       = "source_not_found"      // the document or its referenced record is gone
	AIErrInvalidData          = "invalid_data"          // nothing to analyse: not CSV, JSON rows or a table
	AIErrInternal             = "internal_error"
)

// AIJob is one requested AI operation and, when it has run, its result.
// InputText is the exact text (or data) the job processed.
type AIJob struct {
	ID               string `gorm:"primaryKey"`
	OrgID            string
	Kind             string
	DocumentID       *string
	InputData        string
	InputFormat      string
	Options          string
	Refresh          bool
	Status           string
	ErrorCode        string
	ErrorMessage     string
	InputText        string
	ContentHash      string
	CacheKey         string
	Cached           bool
	Result           *string
	Provider         string
	Model            string
	PromptTokens     int64
	CompletionTokens int64
	ModelCalls       int
	ModelMS          int64 `gorm:"column:model_ms"`
	CreatedBy        Actor
	CreatedAt        time.Time
	StartedAt        *time.Time
	FinishedAt       *time.Time
	UpdatedAt        time.Time
}

// TableName is ai_jobs.
func (AIJob) TableName() string { return "ai_jobs" }

// AIJobOptions are a job's parameters; they are part of its cache key.
type AIJobOptions struct {
	Length   string `json:"length,omitempty"`
	Question string `json:"question,omitempty"`
	GroupBy  string `json:"group_by,omitempty"`
}

// ParsedOptions decodes the job's options.
func (j *AIJob) ParsedOptions() AIJobOptions {
	var o AIJobOptions
	_ = json.Unmarshal([]byte(j.Options), &o)
	return o
}

// Output is the job's stored output (nil until it succeeds): an
// AISummaryOutput, AIActionItemsOutput or AIAnalysisOutput as JSON.
func (j *AIJob) Output() json.RawMessage {
	if j.Result == nil {
		return nil
	}
	return json.RawMessage(*j.Result)
}

// Finished tells whether the job reached a final status.
func (j *AIJob) Finished() bool {
	return j.Status == AIJobSucceeded || j.Status == AIJobFailed || j.Status == AIJobCanceled
}

// AITimings are how long a job waited, ran, and spent in model calls.
type AITimings struct {
	QueuedMS int64
	RunMS    *int64
	ModelMS  int64
}

// Timings of the job so far (RunMS is nil until it finishes).
func (j *AIJob) Timings() AITimings {
	t := AITimings{ModelMS: j.ModelMS}
	if j.StartedAt != nil {
		t.QueuedMS = j.StartedAt.Sub(j.CreatedAt).Milliseconds()
	}
	if j.StartedAt != nil && j.FinishedAt != nil {
		run := j.FinishedAt.Sub(*j.StartedAt).Milliseconds()
		t.RunMS = &run
	}
	return t
}

// AISummaryOutput is the output of a summarize job.
type AISummaryOutput struct {
	Summary string `json:"summary"`
	Length  string `json:"length"`
	// Chunks is how many parts the document was split into (map-reduce).
	Chunks int `json:"chunks"`
}

// AIActionItem is one thing someone has to do.
type AIActionItem struct {
	Text    string  `json:"text"`
	Owner   *string `json:"owner"`
	DueDate *string `json:"due_date"` // YYYY-MM-DD
}

// AIActionItemsOutput is the output of an action_items job.
type AIActionItemsOutput struct {
	Items []AIActionItem `json:"items"`
	// ReferenceDate is the date relative due dates ("tomorrow") were
	// resolved against when the text states none of its own.
	ReferenceDate string `json:"reference_date"`
	Chunks        int    `json:"chunks"`
}

// AIAnalysisOutput is the output of an analyze job: every number computed
// in code, and a narrative written from them.
type AIAnalysisOutput struct {
	Question string `json:"question,omitempty"`
	*aidata.Analysis
	Narrative string `json:"narrative"`
}
