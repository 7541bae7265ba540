package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/api/serviceerror"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/aidata"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

type summarizeRequest struct {
	DocumentID string `json:"document_id"`
	// Length: short (about 3 sentences), medium (about 6), long (about 12).
	Length  string `json:"length"`
	Refresh bool   `json:"refresh"`
}

type actionItemsRequest struct {
	DocumentID string `json:"document_id"`
	Refresh    bool   `json:"refresh"`
}

type analyzeRequest struct {
	DocumentID string `json:"document_id"`
	// Data is CSV or JSON rows as a string, or the rows themselves (a JSON
	// array of objects).
	Data     json.RawMessage `json:"data"`
	Format   string          `json:"format" validate:"omitempty,oneof=csv json"`
	Question string          `json:"question"`
	GroupBy  string          `json:"group_by"`
	Refresh  bool            `json:"refresh"`
}

// dataText turns the data field into text: a JSON string is the text
// itself (CSV or JSON), an array is JSON rows.
func (r *analyzeRequest) dataText() (text, format string, bad *models.FieldError) {
	raw := bytes.TrimSpace(r.Data)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", r.Format, nil
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", "", &models.FieldError{Field: "data", Code: "invalid_type", Message: "Must be a string (CSV or JSON text) or an array of rows."}
		}
		return text, r.Format, nil
	case raw[0] == '[':
		if r.Format == aidata.FormatCSV {
			return "", "", &models.FieldError{Field: "format", Code: "mismatch", Message: "Rows sent as a JSON array are JSON, not CSV."}
		}
		return string(raw), aidata.FormatJSON, nil
	}
	return "", "", &models.FieldError{Field: "data", Code: "invalid_type", Message: "Must be a string (CSV or JSON text) or an array of rows."}
}

func (h *handlers) summarize(c *fiber.Ctx) error {
	var req summarizeRequest
	in := models.NewAIJob{Kind: models.AIKindSummarize}
	err := web.Decode(c, &req, func() error {
		in.DocumentID, in.Options.Length, in.Refresh = req.DocumentID, req.Length, req.Refresh
		return models.ValidateAIJob(&in)
	})
	if err != nil {
		return err
	}
	return h.startJob(c, in)
}

func (h *handlers) actionItems(c *fiber.Ctx) error {
	var req actionItemsRequest
	in := models.NewAIJob{Kind: models.AIKindActionItems}
	err := web.Decode(c, &req, func() error {
		in.DocumentID, in.Refresh = req.DocumentID, req.Refresh
		return models.ValidateAIJob(&in)
	})
	if err != nil {
		return err
	}
	return h.startJob(c, in)
}

func (h *handlers) analyze(c *fiber.Ctx) error {
	var req analyzeRequest
	in := models.NewAIJob{Kind: models.AIKindAnalyze}
	err := web.Decode(c, &req, func() error {
		text, format, bad := req.dataText()
		var dataErr error
		if bad != nil {
			dataErr = models.Invalid(*bad)
		}
		in.DocumentID, in.Data, in.DataFormat, in.Refresh = req.DocumentID, text, format, req.Refresh
		in.Options = models.AIJobOptions{Question: req.Question, GroupBy: req.GroupBy}
		return web.MergeInvalid(dataErr, models.ValidateAIJob(&in))
	})
	if err != nil {
		return err
	}
	return h.startJob(c, in)
}

// startJob stores the job and records its workflow start in one
// transaction, then answers 202 with the job — or waits as the client
// prefers and answers 200 with the finished job.
func (h *handlers) startJob(c *fiber.Ctx, in models.NewAIJob) error {
	p := auth.From(c)
	in.OrgID, in.CreatedBy = p.OrgID, p.Actor()
	tx := h.Starter.In(c, web.Tx(c))
	job, err := models.CreateAIJob(tx.DB, in)
	if err != nil {
		return err
	}
	err = tx.Start(record.Start{WorkflowID: names.AIJobID(job.ID), Workflow: names.AIJobWorkflow,
		Input: workflows.AIJobInput{JobID: job.ID, OrgID: job.OrgID}, OrgID: job.OrgID, Kind: names.KindAIJob})
	if err != nil {
		return err
	}
	c.Location("/v1/ai/jobs/" + job.ID)
	if wait, ok := web.PreferWait(c); ok {
		// The worker must see the job before the wait can end; a retry
		// after a crash during the wait gets the job as created.
		if err := web.CommitAccepted(c, h.toJob(job)); err != nil {
			return err
		}
		// The job exists whatever the wait ends in: a failed wait (the
		// request's context ended, the database hiccupped) still answers
		// 202 with the job as created, never an error that invites a retry.
		defer web.Waiting(c)()
		if waited, err := h.awaitJob(c.UserContext(), p.OrgID, job.ID, wait); err == nil {
			job = waited
		}
		if job.Finished() {
			return c.Status(fiber.StatusOK).JSON(h.toJob(job))
		}
	}
	return c.Status(fiber.StatusAccepted).JSON(h.toJob(job))
}

// awaitJob polls the job until it finishes, d passes or the client goes.
// The database, not Temporal, is the source of truth.
func (h *handlers) awaitJob(ctx context.Context, orgID, id string, d time.Duration) (*models.AIJob, error) {
	return web.Await(ctx, d, func(ctx context.Context) (*models.AIJob, error) { return models.FindAIJob(ctx, h.DB, orgID, id) },
		(*models.AIJob).Finished)
}

func (h *handlers) getJob(c *fiber.Ctx) error {
	p := auth.From(c)
	job, err := models.FindAIJob(c.UserContext(), h.DB, p.OrgID, param(c, "id"))
	if err != nil {
		return err
	}
	return c.JSON(h.toJob(job))
}

// jobListColumns leaves out the input text and data a list never shows.
const jobListColumns = "id, org_id, kind, document_id, options, refresh, status, error_code, error_message, cached, result, provider, model, " +
	"prompt_tokens, completion_tokens, model_calls, model_ms, created_by, created_at, started_at, finished_at, updated_at"

func jobCursor(j *models.AIJob) web.Cursor { return web.Cursor{CreatedAt: j.CreatedAt, ID: j.ID} }

func (h *handlers) listJobs(c *fiber.Ctx) error {
	p := auth.From(c)
	pg, err := web.ParsePage(c)
	filter := struct {
		Status     string `json:"status" validate:"omitempty,oneof=queued running succeeded failed canceled"`
		Kind       string `json:"kind" validate:"omitempty,oneof=summarize action_items analyze"`
		DocumentID string `json:"document_id" validate:"omitempty,uuid"`
	}{c.Query("status"), c.Query("kind"), c.Query("document_id")}
	if err := web.MergeInvalid(err, web.Validate(&filter)); err != nil {
		return err
	}
	q := h.DB.WithContext(c.UserContext()).Model(&models.AIJob{}).Select(jobListColumns).Where("org_id = ?", p.OrgID)
	for _, f := range [...]struct{ col, v string }{{"status", filter.Status}, {"kind", filter.Kind}, {"document_id", filter.DocumentID}} {
		if f.v != "" {
			q = q.Where(f.col+" = ?", f.v)
		}
	}
	rows, err := web.Paginate(q, pg, jobCursor)
	if err != nil {
		return err
	}
	return web.SendJSON(c, toPage(rows, h.toJob))
}

// cancelJob cancels a queued or running job: at once in the database (a
// result that arrives later is dropped), then its workflow in Temporal.
// Canceling a canceled job again changes nothing; a finished one is a 409.
func (h *handlers) cancelJob(c *fiber.Ctx) error {
	p := auth.From(c)
	job, err := models.CancelAIJob(c.UserContext(), web.Tx(c), p.OrgID, param(c, "id"))
	if err != nil {
		return err
	}
	if h.Temporal != nil {
		// Best effort, once the cancellation is committed (no Temporal call
		// while the transaction holds its locks): the workflow checks the
		// job's status before every step, so it stops even if this call
		// fails (Temporal down) or comes before the outbox has started it.
		ctx := c.UserContext()
		web.AfterCommit(c, func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			err := h.Temporal.CancelWorkflow(ctx, names.AIJobID(job.ID), "")
			var gone *serviceerror.NotFound
			if err != nil && !errors.As(err, &gone) {
				h.Log.WarnContext(ctx, "cancel AI job workflow", "job_id", job.ID, "error", err.Error())
			}
		})
	}
	return c.JSON(h.toJob(job))
}

func (h *handlers) toJob(j *models.AIJob) views.AIJob {
	out := views.ToAIJob(j)
	if u := h.temporalUI.Workflow(out.WorkflowID); u != "" {
		out.WorkflowURL = &u
	}
	return out
}
