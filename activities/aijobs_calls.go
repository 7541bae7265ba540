package activities

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
)

// The model calls: Map, one call per chunk of a running job, and Reduce,
// which combines the parts (summaries summarized again in groups).

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
