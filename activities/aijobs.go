package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/aidata"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// AIJobs are the activities of the AIJob workflow: Begin loads the input
// and answers from the cache when it can; Map makes one model call per
// chunk; Reduce combines the parts; Complete stores the result, the cache
// entry and the organization's token usage. Every write is guarded by the
// job's status, so a retried activity never records twice, and a job
// canceled meanwhile keeps its status.
type AIJobs struct {
	DB       *gorm.DB
	Provider ai.Provider
	// Now is the clock (nil: models.Now).
	Now func() time.Time
}

// Job statuses the AIJob workflow reports (the models' values, named here
// so that workflow code needs no data-layer import).
const (
	AIJobSucceeded = models.AIJobSucceeded
	AIJobFailed    = models.AIJobFailed
	AIJobCanceled  = models.AIJobCanceled
)

// AIJobNonRetryableErrorTypes lists every error type the AIJob workflow
// must not retry.
var AIJobNonRetryableErrorTypes = append([]string{ErrTypeAIJobFinished, ErrTypeAIJobMissing, ErrTypeAIInvalidData}, ai.NonRetryableErrorTypes...)

// AIJobPlan is what Begin decided.
type AIJobPlan struct {
	Kind string `json:"kind"`
	// Done: nothing left to run. Status says why: succeeded (from the
	// cache), failed (ErrorCode/ErrorMessage), or canceled.
	Done         bool   `json:"done"`
	Status       string `json:"status"`
	Cached       bool   `json:"cached"`
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Chunks is how many model calls the map step makes.
	Chunks int `json:"chunks"`
	// CallTimeout bounds one model call; activity timeouts derive from it.
	CallTimeout time.Duration `json:"callTimeout"`
}

// AIPartial is the output of one map call.
type AIPartial struct {
	Summary   string                `json:"summary,omitempty"`
	Items     []models.AIActionItem `json:"items,omitempty"`
	Narrative string                `json:"narrative,omitempty"`
	Usage     ai.Usage              `json:"usage"`
	ModelMS   int64                 `json:"modelMs"`
}

// AIOutcome is a job's result, ready to store.
type AIOutcome struct {
	Output  json.RawMessage `json:"output"`
	Usage   ai.Usage        `json:"usage"`
	ModelMS int64           `json:"modelMs"`
}

func (a *AIJobs) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC().Truncate(time.Microsecond)
	}
	return models.Now()
}

func (a *AIJobs) job(tx *gorm.DB, id string, lock bool) (*models.AIJob, error) {
	var j models.AIJob
	q := tx
	if lock {
		q = models.LockForUpdate(tx)
	}
	if err := q.Take(&j, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, temporal.NewNonRetryableApplicationError("AI job "+id+" does not exist", ErrTypeAIJobMissing, err)
		}
		return nil, err
	}
	return &j, nil
}

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

// running loads a job that must still be running; a canceled one stops
// the workflow (ErrTypeAIJobFinished).
func (a *AIJobs) running(ctx context.Context, jobID string) (*models.AIJob, *models.Organization, error) {
	job, err := a.job(a.DB.WithContext(ctx), jobID, false)
	if err != nil {
		return nil, nil, err
	}
	if job.Status != models.AIJobRunning {
		return nil, nil, temporal.NewNonRetryableApplicationError("AI job "+jobID+" is "+job.Status, ErrTypeAIJobFinished, nil)
	}
	org, err := models.FindOrg(ctx, a.DB, job.OrgID)
	return job, org, err
}

// Map makes the model call for one chunk (part, 0-based) of the job's text:
// a summary of it, its action items, or — for an analysis, one part — the
// narrative of the computed numbers.
func (a *AIJobs) Map(ctx context.Context, jobID string, part int) (AIPartial, error) {
	job, org, err := a.running(ctx, jobID)
	if err != nil {
		return AIPartial{}, err
	}
	info := a.Provider.Info()
	opts := job.ParsedOptions()
	start := time.Now()
	var out AIPartial
	switch job.Kind {
	case models.AIKindAnalyze:
		analysis, err := analysisOf(job.InputText, job.InputFormat, opts)
		if err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeAIInvalidData, nil)
		}
		c, err := a.Provider.Narrate(ctx, ai.NarrateRequest{Question: opts.Question, Analysis: analysis})
		if err != nil {
			return out, ai.TemporalError(err)
		}
		out.Narrative, out.Usage = c.Text, c.Usage
	default:
		chunks := ai.SplitChunks(job.InputText, info.ChunkTokens, info.ChunkOverlap)
		if part < 0 || part >= len(chunks) {
			return out, temporal.NewNonRetryableApplicationError("no such part", ErrTypeAIJobFinished, nil)
		}
		text := chunks[part].Text
		if job.Kind == models.AIKindSummarize {
			c, err := a.Provider.Summarize(ctx, ai.SummarizeRequest{Text: text, Length: opts.Length, Part: part + 1, Parts: len(chunks)})
			if err != nil {
				return out, ai.TemporalError(err)
			}
			out.Summary, out.Usage = c.Text, c.Usage
		} else {
			r, err := a.Provider.ActionItems(ctx, ai.ActionItemsRequest{Text: text, Reference: a.reference(job, org, job.InputText)})
			if err != nil {
				return out, ai.TemporalError(err)
			}
			out.Items, out.Usage = r.Items, r.Usage
		}
	}
	out.ModelMS = time.Since(start).Milliseconds()
	return out, nil
}

// Reduce combines the parts into the job's output. Part summaries are
// summarized once more (in groups first, when together they exceed a
// chunk; a heartbeat per call); action items are merged in order without
// duplicates (chunks overlap); an analysis gets its numbers and the
// narrative.
func (a *AIJobs) Reduce(ctx context.Context, jobID string, parts []AIPartial) (AIOutcome, error) {
	job, org, err := a.running(ctx, jobID)
	if err != nil {
		return AIOutcome{}, err
	}
	var out AIOutcome
	for _, p := range parts {
		out.Usage = out.Usage.Add(p.Usage)
		out.ModelMS += p.ModelMS
	}
	opts := job.ParsedOptions()
	var output any
	switch job.Kind {
	case models.AIKindSummarize:
		summary, err := a.combine(ctx, parts, opts.Length, &out)
		if err != nil {
			return out, err
		}
		output = models.AISummaryOutput{Summary: summary, Length: opts.Length, Chunks: len(parts)}
	case models.AIKindActionItems:
		items := []models.AIActionItem{}
		seen := map[string]bool{}
		for _, p := range parts {
			for _, it := range p.Items {
				k := strings.Join(strings.Fields(strings.ToLower(it.Text)), " ")
				if !seen[k] {
					seen[k] = true
					items = append(items, it)
				}
			}
		}
		output = models.AIActionItemsOutput{Items: items, Chunks: len(parts),
			ReferenceDate: a.reference(job, org, job.InputText).Format(time.DateOnly)}
	case models.AIKindAnalyze:
		analysis, err := analysisOf(job.InputText, job.InputFormat, opts)
		if err != nil {
			return out, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeAIInvalidData, nil)
		}
		narrative := ""
		if len(parts) > 0 {
			narrative = parts[0].Narrative
		}
		output = models.AIAnalysisOutput{Question: opts.Question, Analysis: analysis, Narrative: narrative}
	}
	out.Output, err = json.Marshal(output)
	return out, err
}

// combine turns part summaries into one summary.
func (a *AIJobs) combine(ctx context.Context, parts []AIPartial, length string, out *AIOutcome) (string, error) {
	if len(parts) == 1 {
		return parts[0].Summary, nil
	}
	info := a.Provider.Info()
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.Summary
	}
	call := func(text string, final bool) (string, error) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, len(texts))
		}
		l := length
		if !final {
			l = models.AILengthLong
		}
		start := time.Now()
		c, err := a.Provider.Summarize(ctx, ai.SummarizeRequest{Text: text, Length: l, Combine: true})
		out.ModelMS += time.Since(start).Milliseconds()
		out.Usage = out.Usage.Add(c.Usage)
		return c.Text, ai.TemporalError(err)
	}
	// Too much to combine in one call: combine groups that fit, until one
	// call can take them all.
	for ai.CountTokens(strings.Join(texts, "\n\n")) > info.ChunkTokens && len(texts) > 1 {
		var next []string
		group, size := []string{}, 0
		flush := func() error {
			if len(group) == 0 {
				return nil
			}
			s, err := call(strings.Join(group, "\n\n"), false)
			next = append(next, s)
			group, size = nil, 0
			return err
		}
		for _, t := range texts {
			n := ai.CountTokens(t)
			if size+n > info.ChunkTokens && len(group) > 0 {
				if err := flush(); err != nil {
					return "", err
				}
			}
			group, size = append(group, t), size+n
		}
		if err := flush(); err != nil {
			return "", err
		}
		if len(next) >= len(texts) {
			break // the model is not shortening anything; stop here
		}
		texts = next
	}
	return call(strings.Join(texts, "\n\n"), true)
}

// Complete stores the outcome: the job succeeds with its output and usage,
// the output is cached under the job's key, and the tokens are added to
// the organization's month — all in one transaction, and only if the job
// is still running (a job canceled meanwhile stays canceled, and nothing
// is recorded). It returns the job's final status.
func (a *AIJobs) Complete(ctx context.Context, jobID string, out AIOutcome) (string, error) {
	var status string
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		job, err := a.job(tx.DB, jobID, true)
		if err != nil {
			return err
		}
		status = job.Status
		moved, err := finishJob(tx, job.ID, models.AIJobSucceeded, map[string]any{
			"result": string(out.Output), "prompt_tokens": out.Usage.PromptTokens, "completion_tokens": out.Usage.CompletionTokens,
			"model_calls": out.Usage.Calls, "model_ms": out.ModelMS, "cached": false,
		})
		if err != nil || !moved {
			return err
		}
		status = models.AIJobSucceeded
		org, err := models.FindOrg(ctx, tx.DB, job.OrgID)
		if err != nil {
			return err
		}
		now := a.now()
		if err := models.StoreAIResult(tx.DB, &models.AIResult{OrgID: job.OrgID, CacheKey: job.CacheKey, JobID: job.ID, Kind: job.Kind,
			Provider: job.Provider, Model: job.Model, Result: string(out.Output), PromptTokens: out.Usage.PromptTokens,
			CompletionTokens: out.Usage.CompletionTokens, CreatedAt: now}); err != nil {
			return err
		}
		return models.RecordAIUsage(tx.DB, job.OrgID, models.AIMonth(org, now), out.Usage.PromptTokens, out.Usage.CompletionTokens)
	})
	return status, err
}

// Fail records why a job failed (unless it already finished).
func (a *AIJobs) Fail(ctx context.Context, jobID, code, message string) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		_, err := finishJob(tx, jobID, models.AIJobFailed, map[string]any{"error_code": code, "error_message": message})
		return err
	})
}

// finishJob moves job id to succeeded or failed in tx (models.MoveAIJob)
// and, when it moved, records ai.job.succeeded or ai.job.failed for the
// organization's webhooks with it.
func finishJob(tx *record.Tx, id, to string, set map[string]any) (bool, error) {
	moved, err := models.MoveAIJob(tx.DB, id, to, set)
	if err != nil || !moved {
		return moved, err
	}
	var job models.AIJob
	if err := tx.Take(&job, "id = ?", id).Error; err != nil {
		return false, err
	}
	return true, tx.Emit(models.Event{OrgID: job.OrgID, Type: models.AIJobEventType(to), Object: views.ToAIJob(&job)})
}

// Cancel marks a job canceled (unless it already finished): the workflow
// calls it when Temporal cancels the workflow.
func (a *AIJobs) Cancel(ctx context.Context, jobID string) error {
	_, err := models.MoveAIJob(a.DB.WithContext(ctx), jobID, models.AIJobCanceled, nil)
	return err
}

// AIJobFailure names the error code and message a failed job records for
// the error its workflow got from an activity: the provider's refusals as
// they are, anything retryable that kept failing as provider_unavailable.
// It is pure (workflow code calls it).
func AIJobFailure(err error) (code, message string) {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		msg := appErr.Message()
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "AIProvider") {
			msg = msg[i+2:]
		}
		switch appErr.Type() {
		case ai.ErrTypeRejected:
			return models.AIErrProviderRejected, capitalize(msg) + "."
		case ai.ErrTypeUnauthorized:
			return models.AIErrProviderUnauthorized, capitalize(msg) + "."
		case ErrTypeAIInvalidData:
			return models.AIErrInvalidData, msg
		case ai.ErrTypeRateLimited, ai.ErrTypeUnavailable, ai.ErrTypeTimeout, ai.ErrTypeBadOutput:
			return models.AIErrProviderUnavailable, "The AI provider kept failing (" + msg + "); the job gave up after its retries."
		}
	case errors.As(err, &timeoutErr):
		return models.AIErrProviderUnavailable, "The AI provider did not answer in time, even after retries."
	}
	return models.AIErrInternal, "The job failed unexpectedly."
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
