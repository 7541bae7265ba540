package models

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
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

// AIDocument is text to work on, or a reference (Source, SourceID) to a
// record of the suite whose text is assembled when a job runs.
type AIDocument struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	Title       string
	Content     string
	ContentType string
	Source      string
	SourceID    *string
	CreatedBy   Actor
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ContentBytesSQL is the SQL expression for the byte size of a document's
// content in db's dialect: octet_length in PostgreSQL; SQLite's length
// counts bytes only of a blob.
func ContentBytesSQL(db *gorm.DB) string {
	if database.DialectFor(db) == database.SQLite {
		return "length(CAST(content AS BLOB))"
	}
	return "octet_length(content)"
}

// TableName is ai_documents.
func (AIDocument) TableName() string { return "ai_documents" }

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

// AIResult is a cached output: the same content, operation, options,
// provider and model reuse it instead of calling the model again.
type AIResult struct {
	OrgID            string `gorm:"primaryKey"`
	CacheKey         string `gorm:"primaryKey"`
	JobID            string
	Kind             string
	Provider         string
	Model            string
	Result           string
	PromptTokens     int64
	CompletionTokens int64
	CreatedAt        time.Time
}

// TableName is ai_results.
func (AIResult) TableName() string { return "ai_results" }

// AIUsage is the tokens an organization spent in one calendar month
// (YYYY-MM in its time zone).
type AIUsage struct {
	OrgID            string `gorm:"primaryKey"`
	Month            string `gorm:"primaryKey"`
	PromptTokens     int64
	CompletionTokens int64
	Jobs             int
	UpdatedAt        time.Time
}

// TableName is ai_usage.
func (AIUsage) TableName() string { return "ai_usage" }

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

// NewAIDocument is what a caller sends to create a document.
type NewAIDocument struct {
	OrgID       string
	Title       string
	Content     string
	ContentType string
	Source      string
	SourceID    string
	CreatedBy   Actor
}

// CreateAIDocument validates and stores a document. A referenced record
// must exist in the same organization (another organization's record is
// not found); its title becomes the document's title unless one is given.
func CreateAIDocument(ctx context.Context, db *gorm.DB, in NewAIDocument) (*AIDocument, error) {
	if err := ValidateAIDocument(&in); err != nil {
		return nil, err
	}
	now := Now()
	doc := &AIDocument{ID: NewID(), OrgID: in.OrgID, Title: strings.TrimSpace(in.Title), Content: in.Content,
		ContentType: in.ContentType, Source: in.Source, CreatedBy: in.CreatedBy, CreatedAt: now, UpdatedAt: now}
	if in.Source != "" {
		src, err := LoadAISource(ctx, db, in.OrgID, in.Source, in.SourceID, time.UTC)
		if err != nil {
			return nil, err
		}
		id := in.SourceID
		doc.SourceID = &id
		if doc.Title == "" {
			doc.Title = src.Title
		}
	} else if doc.Title == "" {
		doc.Title = titleFromText(in.Content)
	}
	return doc, db.WithContext(ctx).Create(doc).Error
}

// ValidateAIDocument checks a document request without touching the
// database (a referenced record is looked up by CreateAIDocument) and
// defaults its content type; every bad field is reported at once.
func ValidateAIDocument(in *NewAIDocument) error {
	var bad []FieldError
	if utf8.RuneCountInString(in.Title) > AIMaxTitleChars {
		bad = append(bad, FieldError{Field: "title", Code: "max", Message: "At most 200 characters."})
	}
	switch {
	case in.Source == "" && in.Content == "":
		bad = append(bad, FieldError{Field: "content", Code: "required", Message: "Send content, or a source and source_id."})
	case in.Source != "" && in.Content != "":
		bad = append(bad, FieldError{Field: "content", Code: "excluded_with", Message: "Send either content or a source, not both."})
	case in.Content != "":
		if len(in.Content) > AIMaxContentBytes {
			bad = append(bad, FieldError{Field: "content", Code: "max", Message: "At most 1 MiB (1,048,576 bytes)."})
		}
		if strings.TrimSpace(in.Content) == "" {
			bad = append(bad, FieldError{Field: "content", Code: "required", Message: "Must contain text."})
		}
		if !utf8.ValidString(in.Content) {
			bad = append(bad, FieldError{Field: "content", Code: "utf8", Message: "Must be UTF-8 text."})
		}
		if in.ContentType == "" {
			in.ContentType = "text/plain"
		}
		if !slices.Contains(AIContentTypes, in.ContentType) {
			bad = append(bad, FieldError{Field: "content_type", Code: "oneof", Message: "Must be one of: text/plain, text/markdown."})
		}
		if in.SourceID != "" {
			bad = append(bad, FieldError{Field: "source_id", Code: "excluded_with", Message: "Only a document with a source has a source_id."})
		}
	default: // a reference
		if !slices.Contains(AISources, in.Source) {
			bad = append(bad, FieldError{Field: "source", Code: "oneof", Message: "Must be one of: ticket, lead, customer, kb_article."})
		}
		if in.SourceID == "" {
			bad = append(bad, FieldError{Field: "source_id", Code: "required", Message: "Name the record to reference."})
		}
		if in.ContentType != "" {
			bad = append(bad, FieldError{Field: "content_type", Code: "excluded_with", Message: "A referenced record has no content_type."})
		}
	}
	if len(bad) > 0 {
		return Invalid(bad...)
	}
	return nil
}

// titleFromText is the first non-blank line, without Markdown heading
// marks, cut at 80 characters.
func titleFromText(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > 80 {
			return strings.TrimSpace(string(r[:79])) + "…"
		}
		return line
	}
	return ""
}

// FindAIDocument loads one of orgID's documents.
func FindAIDocument(ctx context.Context, db *gorm.DB, orgID, id string) (*AIDocument, error) {
	return FindInOrg[AIDocument](db.WithContext(ctx), orgID, id, "The document")
}

// DeleteAIDocument deletes one of orgID's documents. Its jobs keep the text
// they processed; a job still queued for it fails with source_not_found.
func DeleteAIDocument(ctx context.Context, db *gorm.DB, orgID, id string) error {
	if !ValidID(id) {
		return NotFound("The document")
	}
	res := db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Delete(&AIDocument{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return NotFound("The document")
	}
	return nil
}

// FindAIJob loads one of orgID's jobs.
func FindAIJob(ctx context.Context, db *gorm.DB, orgID, id string) (*AIJob, error) {
	return FindInOrg[AIJob](db.WithContext(ctx), orgID, id, "The job")
}

// NewAIJob is a requested job.
type NewAIJob struct {
	OrgID      string
	Kind       string
	DocumentID string
	// Data is inline analysis data (analyze only), CSV or JSON rows;
	// DataFormat is "csv", "json" or "" (detect).
	Data       string
	DataFormat string
	Options    AIJobOptions
	// Refresh skips the result cache.
	Refresh   bool
	CreatedBy Actor
}

// CreateAIJob validates a request and stores the job as queued. Call it in
// the transaction that records the job's AIJob workflow start (outbox), so
// that a job exists exactly when its workflow will run. It refuses with
// plan_upgrade_required (plan without AI) or ai_quota_exceeded (the month's
// tokens are spent) as ErrLimit, and with ErrNotFound when the document is
// not one of the organization's.
func CreateAIJob(tx *gorm.DB, in NewAIJob) (*AIJob, error) {
	if err := ValidateAIJob(&in); err != nil {
		return nil, err
	}
	ctx := tx.Statement.Context
	org, err := FindOrg(ctx, tx, in.OrgID)
	if err != nil {
		return nil, err
	}
	if err := CheckAIQuota(tx, org, Now()); err != nil {
		return nil, err
	}
	if in.DocumentID != "" {
		if _, err := FindAIDocument(ctx, tx, in.OrgID, in.DocumentID); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, Err(ErrNotFound, "document_not_found", "No document with that id.")
			}
			return nil, err
		}
	}
	opts, err := json.Marshal(in.Options)
	if err != nil {
		return nil, err
	}
	now := Now()
	job := &AIJob{ID: NewID(), OrgID: in.OrgID, Kind: in.Kind, InputData: in.Data, InputFormat: in.DataFormat,
		Options: string(opts), Refresh: in.Refresh, Status: AIJobQueued, CreatedBy: in.CreatedBy, CreatedAt: now, UpdatedAt: now}
	if in.DocumentID != "" {
		id := in.DocumentID
		job.DocumentID = &id
	}
	return job, tx.Create(job).Error
}

// ValidateAIJob checks a job request without touching the database (the
// document and the quota are checked by CreateAIJob) and fills in its
// defaults; every bad field is reported at once. Handlers call it while
// decoding, to report its errors with the body's; CreateAIJob calls it
// again for callers that did not (it is idempotent).
func ValidateAIJob(in *NewAIJob) error {
	var bad []FieldError
	in.Options.Question = strings.TrimSpace(in.Options.Question)
	in.Options.GroupBy = strings.TrimSpace(in.Options.GroupBy)
	switch in.Kind {
	case AIKindSummarize:
		if in.Options.Length == "" {
			in.Options.Length = AILengthMedium
		}
		if !slices.Contains(AILengths, in.Options.Length) {
			bad = append(bad, FieldError{Field: "length", Code: "oneof", Message: "Must be one of: short, medium, long."})
		}
	case AIKindActionItems:
	case AIKindAnalyze:
		if utf8.RuneCountInString(in.Options.Question) > AIMaxQuestionLen {
			bad = append(bad, FieldError{Field: "question", Code: "max", Message: "At most 1000 characters."})
		}
	default:
		return Invalid(FieldError{Field: "kind", Code: "oneof", Message: "Must be one of: summarize, action_items, analyze."})
	}
	if in.Kind != AIKindAnalyze && in.DocumentID == "" {
		bad = append(bad, FieldError{Field: "document_id", Code: "required", Message: "Name the document to work on."})
	}
	if in.Kind == AIKindAnalyze {
		bad = append(bad, validateAnalysisInput(in)...)
	}
	if in.DocumentID != "" && !ValidID(in.DocumentID) {
		bad = append(bad, FieldError{Field: "document_id", Code: "uuid", Message: "Must be a document id."})
	}
	if len(bad) > 0 {
		return Invalid(bad...)
	}
	return nil
}

// validateAnalysisInput checks inline data at once (its table must parse
// and group_by must name one of its columns); a document's table is read
// when the job runs.
func validateAnalysisInput(in *NewAIJob) []FieldError {
	switch {
	case in.DocumentID == "" && in.Data == "":
		return []FieldError{{Field: "data", Code: "required", Message: "Send document_id or data (CSV or JSON rows)."}}
	case in.DocumentID != "" && in.Data != "":
		return []FieldError{{Field: "data", Code: "excluded_with", Message: "Send either document_id or data, not both."}}
	case in.Data == "":
		return nil
	}
	if len(in.Data) > AIMaxContentBytes {
		return []FieldError{{Field: "data", Code: "max", Message: "At most 1 MiB (1,048,576 bytes)."}}
	}
	if in.DataFormat != "" && in.DataFormat != aidata.FormatCSV && in.DataFormat != aidata.FormatJSON {
		return []FieldError{{Field: "data", Code: "format", Message: "Data must be CSV text or JSON rows."}}
	}
	table, err := aidata.Parse(in.Data, in.DataFormat)
	if err != nil {
		return []FieldError{{Field: "data", Code: "table", Message: "Not a table: " + err.Error() + "."}}
	}
	if in.Options.GroupBy != "" {
		if _, err := aidata.Analyze(table, aidata.Options{GroupBy: in.Options.GroupBy}); err != nil {
			return []FieldError{{Field: "group_by", Code: "column", Message: err.Error() + "."}}
		}
	}
	return nil
}

// aiJobMoves lists where each status may move. Final statuses move nowhere.
var aiJobMoves = map[string][]string{
	AIJobQueued:  {AIJobRunning, AIJobFailed, AIJobCanceled},
	AIJobRunning: {AIJobSucceeded, AIJobFailed, AIJobCanceled},
}

// AIJobWorkflowID is the ID of job jobID's workflow (workflows.AIJobID),
// named here for the job's view (models/views), which activities build.
func AIJobWorkflowID(jobID string) string { return "ai-job/" + jobID }

// MoveAIJob moves job id to status `to` (setting the columns in set as
// well) when its current status allows that move, and reports whether it
// moved. A job already canceled, say, does not move to succeeded: a result
// that arrives after a cancel is dropped.
func MoveAIJob(tx *gorm.DB, id, to string, set map[string]any) (bool, error) {
	var from []string
	for f, tos := range aiJobMoves {
		if slices.Contains(tos, to) {
			from = append(from, f)
		}
	}
	now := Now()
	updates := map[string]any{"status": to, "updated_at": now}
	for k, v := range set {
		updates[k] = v
	}
	if to == AIJobSucceeded || to == AIJobFailed || to == AIJobCanceled {
		updates["finished_at"] = now
	}
	res := tx.Model(&AIJob{}).Where("id = ? AND status IN ?", id, from).Updates(updates)
	return res.RowsAffected == 1, res.Error
}

// CancelAIJob cancels one of orgID's jobs that has not finished, at once in
// the database (the API then asks Temporal to cancel its workflow, which
// stops before storing anything). Canceling a canceled job changes nothing;
// a succeeded or failed job is a 409 ai_job_finished.
func CancelAIJob(ctx context.Context, db *gorm.DB, orgID, id string) (*AIJob, error) {
	job, err := FindAIJob(ctx, db, orgID, id)
	if err != nil {
		return nil, err
	}
	if job.Status == AIJobCanceled {
		return job, nil
	}
	moved, err := MoveAIJob(db.WithContext(ctx), id, AIJobCanceled, nil)
	if err != nil {
		return nil, err
	}
	if job, err = FindAIJob(ctx, db, orgID, id); err != nil {
		return nil, err
	}
	if !moved && job.Status != AIJobCanceled {
		return job, Err(ErrConflict, CodeAIJobFinished, "The job already %s; only queued or running jobs can be canceled.", job.Status)
	}
	return job, nil
}

// AIMonth is the usage month (YYYY-MM) of t for org: calendar months in the
// organization's time zone, as for the ticket limit.
func AIMonth(org *Organization, t time.Time) string { return t.In(org.Location()).Format("2006-01") }

// AIUsageReport is an organization's token use in one month against its
// plan's quota (nil: unlimited).
type AIUsageReport struct {
	// Plan is the organization's plan, whose quota this is.
	Plan             string
	Month            string
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	Jobs             int
	Quota            *int64
	Remaining        *int64
	// ResetsAt is the start of the next month in the organization's time zone.
	ResetsAt time.Time
}

// AIUsageFor reports orgID's usage in the month of now.
func AIUsageFor(ctx context.Context, db *gorm.DB, orgID string, now time.Time) (*AIUsageReport, error) {
	org, err := FindOrg(ctx, db, orgID)
	if err != nil {
		return nil, err
	}
	return aiUsageReport(db.WithContext(ctx), org, now)
}

func aiUsageReport(tx *gorm.DB, org *Organization, now time.Time) (*AIUsageReport, error) {
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return nil, err
	}
	local := now.In(org.Location())
	r := &AIUsageReport{Plan: org.Plan, Month: AIMonth(org, now),
		ResetsAt: time.Date(local.Year(), local.Month()+1, 1, 0, 0, 0, 0, local.Location()).UTC()}
	var u AIUsage
	err = tx.Take(&u, "org_id = ? AND month = ?", org.ID, r.Month).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	r.PromptTokens, r.CompletionTokens, r.Jobs = u.PromptTokens, u.CompletionTokens, u.Jobs
	r.TotalTokens = u.PromptTokens + u.CompletionTokens
	if !plan.AI {
		zero := int64(0)
		r.Quota = &zero
	} else if plan.AITokensPerMonth != nil {
		q := *plan.AITokensPerMonth
		r.Quota = &q
	}
	if r.Quota != nil {
		rem := max(*r.Quota-r.TotalTokens, 0)
		r.Remaining = &rem
	}
	return r, nil
}

// CheckAIQuota refuses AI work for a plan without AI
// (plan_upgrade_required) and once the month's tokens are spent
// (ai_quota_exceeded). The quota is checked before work starts, so jobs
// already running when it is reached finish (they may exceed it by their
// own size).
func CheckAIQuota(tx *gorm.DB, org *Organization, now time.Time) error {
	r, err := aiUsageReport(tx, org, now)
	if err != nil {
		return err
	}
	if r.Quota == nil {
		return nil
	}
	if *r.Quota == 0 {
		return Err(ErrLimit, CodePlanUpgradeRequired, "The %s plan does not include AI; upgrade to business or enterprise.", org.Plan)
	}
	if r.TotalTokens >= *r.Quota {
		return Err(ErrLimit, CodeAIQuotaExceeded, "This organization has used %d of the %d AI tokens of its %s plan for %s; the quota renews on %s.",
			r.TotalTokens, *r.Quota, org.Plan, r.Month, r.ResetsAt.In(org.Location()).Format(time.DateOnly))
	}
	return nil
}

// RecordAIUsage adds one job's tokens to its organization's month, in tx.
func RecordAIUsage(tx *gorm.DB, orgID, month string, prompt, completion int64) error {
	now := Now()
	return tx.Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "org_id"}, {Name: "month"}},
		DoUpdates: clause.Assignments(map[string]any{
			"prompt_tokens":     gorm.Expr("ai_usage.prompt_tokens + ?", prompt),
			"completion_tokens": gorm.Expr("ai_usage.completion_tokens + ?", completion),
			"jobs":              gorm.Expr("ai_usage.jobs + 1"),
			"updated_at":        now,
		}),
	}).Create(&AIUsage{OrgID: orgID, Month: month, PromptTokens: prompt, CompletionTokens: completion, Jobs: 1, UpdatedAt: now}).Error
}

// FindAIResult returns the cached output for key in orgID, or nil.
func FindAIResult(tx *gorm.DB, orgID, key string) (*AIResult, error) {
	var r AIResult
	err := tx.Take(&r, "org_id = ? AND cache_key = ?", orgID, key).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &r, err
}

// StoreAIResult caches an output; a newer result for the same key (a
// refresh) replaces the older.
func StoreAIResult(tx *gorm.DB, r *AIResult) error {
	return tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "org_id"}, {Name: "cache_key"}},
		DoUpdates: clause.AssignmentColumns([]string{"job_id", "kind", "provider", "model", "result", "prompt_tokens", "completion_tokens", "created_at"}),
	}).Create(r).Error
}
