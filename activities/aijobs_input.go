package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/aidata"
	"github.com/business-suite/suite/models/record"
)

// Begin: a job's input (the document, the record it refers to, or the
// inline data), the cache key of its result, and the reasons it cannot run.

// input is what a job works on.
type input struct {
	text   string
	format string // analysis data format ("" detect)
}

// jobFailure is a reason a job cannot run, recorded as its error.
type jobFailure struct{ code, message string }

func (f *jobFailure) Error() string { return f.message }

// Begin marks the job running and loads its input — the document's text,
// the referenced record's text assembled now, or the inline data — and
// keeps that text on the job. It then looks the result up in the cache
// (content hash + operation + options + provider + model) unless the job
// asked for a refresh, and checks the organization's quota. A job already
// canceled, served from the cache or unable to run is Done.
func (a *AIJobs) Begin(ctx context.Context, jobID string) (AIJobPlan, error) {
	info := a.Provider.Info()
	var plan AIJobPlan
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		job, err := a.job(tx.DB, jobID, true)
		if err != nil {
			return err
		}
		plan = AIJobPlan{Kind: job.Kind, Status: job.Status, CallTimeout: info.CallTimeout}
		if job.Finished() {
			plan.Done, plan.Cached, plan.ErrorCode, plan.ErrorMessage = true, job.Cached, job.ErrorCode, job.ErrorMessage
			return nil
		}
		now := a.now()
		if job.Status == models.AIJobQueued {
			if _, err := models.MoveAIJob(tx.DB, job.ID, models.AIJobRunning, map[string]any{"started_at": now}); err != nil {
				return err
			}
		}
		org, err := models.FindOrg(ctx, tx.DB, job.OrgID)
		if err != nil {
			return err
		}
		in, err := a.loadInput(ctx, tx.DB, job, org)
		var failure *jobFailure
		if errors.As(err, &failure) {
			return a.failIn(tx, job.ID, failure, &plan)
		}
		if err != nil {
			return err
		}
		key, hash := cacheKey(job, in, info, a.reference(job, org, in.text))
		set := map[string]any{"input_text": in.text, "content_hash": hash, "cache_key": key,
			"provider": info.Name, "model": info.Model, "updated_at": now}
		if err := tx.Model(&models.AIJob{}).Where("id = ?", job.ID).Updates(set).Error; err != nil {
			return err
		}
		if !job.Refresh {
			hit, err := models.FindAIResult(tx.DB, job.OrgID, key)
			if err != nil {
				return err
			}
			if hit != nil {
				if _, err := finishJob(tx, job.ID, models.AIJobSucceeded, map[string]any{"result": hit.Result, "cached": true}); err != nil {
					return err
				}
				plan.Done, plan.Status, plan.Cached = true, models.AIJobSucceeded, true
				return nil
			}
		}
		if err := models.CheckAIQuota(tx.DB, org, now); err != nil {
			var de *models.DomainError
			if errors.As(err, &de) && errors.Is(err, models.ErrLimit) {
				return a.failIn(tx, job.ID, &jobFailure{models.AIErrQuotaExceeded, de.Message}, &plan)
			}
			return err
		}
		plan.Status = models.AIJobRunning
		plan.Chunks = 1
		if job.Kind != models.AIKindAnalyze {
			plan.Chunks = len(ai.SplitChunks(in.text, info.ChunkTokens, info.ChunkOverlap))
		}
		return nil
	})
	return plan, err
}

func (a *AIJobs) failIn(tx *record.Tx, jobID string, f *jobFailure, plan *AIJobPlan) error {
	if _, err := finishJob(tx, jobID, models.AIJobFailed, map[string]any{"error_code": f.code, "error_message": f.message}); err != nil {
		return err
	}
	plan.Done, plan.Status, plan.ErrorCode, plan.ErrorMessage = true, models.AIJobFailed, f.code, f.message
	return nil
}

func (a *AIJobs) loadInput(ctx context.Context, tx *gorm.DB, job *models.AIJob, org *models.Organization) (input, error) {
	in := input{text: job.InputData, format: job.InputFormat}
	if job.DocumentID != nil {
		doc, err := models.FindAIDocument(ctx, tx, job.OrgID, *job.DocumentID)
		if errors.Is(err, models.ErrNotFound) {
			return in, &jobFailure{models.AIErrSourceNotFound, "The document was deleted before the job ran."}
		}
		if err != nil {
			return in, err
		}
		in.text = doc.Content
		if doc.Source != "" {
			src, err := models.LoadAISource(ctx, tx, job.OrgID, doc.Source, *doc.SourceID, org.Location())
			if errors.Is(err, models.ErrNotFound) {
				return in, &jobFailure{models.AIErrSourceNotFound, "The " + strings.ReplaceAll(doc.Source, "_", " ") + " the document refers to no longer exists."}
			}
			if err != nil {
				return in, err
			}
			in.text = src.Text
		}
	}
	if job.Kind == models.AIKindAnalyze {
		if _, err := analysisOf(in.text, in.format, job.ParsedOptions()); err != nil {
			return in, err
		}
	}
	return in, nil
}

// analysisOf computes the numbers of an analysis; a table it cannot read
// is an invalid_data failure.
func analysisOf(text, format string, opts models.AIJobOptions) (*aidata.Analysis, error) {
	table, err := aidata.Parse(text, format)
	if errors.Is(err, aidata.ErrNoTable) {
		return nil, &jobFailure{models.AIErrInvalidData, "The input holds no table: send CSV (header first), JSON rows, or a document with a Markdown table."}
	}
	if err != nil {
		return nil, &jobFailure{models.AIErrInvalidData, "The data cannot be read: " + err.Error() + "."}
	}
	a, err := aidata.Analyze(table, aidata.Options{GroupBy: opts.GroupBy})
	if err != nil {
		return nil, &jobFailure{models.AIErrInvalidData, err.Error() + "."}
	}
	return a, nil
}

// reference is the date relative due dates count from when the text gives
// none: the job's creation day in the organization's time zone; a text
// with a date of its own uses that.
func (a *AIJobs) reference(job *models.AIJob, org *models.Organization, text string) time.Time {
	if job.Kind != models.AIKindActionItems {
		return time.Time{}
	}
	if own, _ := ai.TextDates(text); !own.IsZero() {
		return own
	}
	local := job.CreatedAt.In(org.Location())
	return time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
}

// cacheKey hashes what determines a result: the content, the operation,
// its options, the provider and model, and — for action items of a text
// without dates of its own — the day relative dates count from.
func cacheKey(job *models.AIJob, in input, info ai.Info, ref time.Time) (key, contentHash string) {
	sum := sha256.Sum256([]byte(in.text))
	contentHash = hex.EncodeToString(sum[:])
	opts, _ := json.Marshal(job.ParsedOptions())
	refDay := ""
	if _, dated := ai.TextDates(in.text); job.Kind == models.AIKindActionItems && !dated {
		refDay = ref.Format(time.DateOnly)
	}
	k := sha256.Sum256([]byte(strings.Join([]string{"v1", job.Kind, contentHash, string(opts), in.format, info.Name, info.Model, refDay}, "\x00")))
	return hex.EncodeToString(k[:]), contentHash
}
