package models

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models/aidata"
)

// FindAIJob loads one of orgID's jobs.
func FindAIJob(ctx context.Context, db *gorm.DB, orgID, id string) (*AIJob, error) {
	return FindInOrg[AIJob](db.WithContext(ctx), orgID, id, "The job")
}

// NewAIJob is a requested job.
type NewAIJob struct {
	// ID, when set, is the job's id: one its caller derives to find the
	// job again (an automation's step retried); a new id otherwise.
	ID         string
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
	if in.ID == "" {
		in.ID = NewID()
	}
	job := &AIJob{ID: in.ID, OrgID: in.OrgID, Kind: in.Kind, InputData: in.Data, InputFormat: in.DataFormat,
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
