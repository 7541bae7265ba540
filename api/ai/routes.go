// Package ai serves the Generative AI interface under /v1/ai: documents
// (text, or a reference to a ticket, lead, customer or article whose text
// is assembled when a job runs), jobs that summarize, extract action items
// or analyze data, and the organization's token usage.
//
// Every job is an AIJob workflow (ai-job/<jobId>) recorded through the
// transactional outbox in the transaction that stores the job, so a job
// exists exactly when its workflow will run, even while Temporal is down.
// Handlers never call a model: they answer 202 with the job and a Location,
// or — with Prefer: wait=N — wait up to N seconds for the result.
//
// The interface speaks snake_case JSON; lists answer
// {data, next_cursor, has_more}.
package ai

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
)

// Deps are the AI interface's dependencies.
type Deps struct {
	DB      *gorm.DB
	Starter *outbox.Starter
	// Temporal cancels a job's workflow (best effort: the job's status in
	// the database is what stops it).
	Temporal client.Client
	Log      *slog.Logger
	// TemporalUI is the base address of the Temporal Web UI and Namespace
	// the namespace jobs run in; with both set, a job links to its
	// workflow there.
	TemporalUI string
	Namespace  string
}

type handlers struct {
	Deps
	// temporalUI links a job to its workflow in the Temporal Web UI.
	temporalUI web.TemporalUI
}

// Routes mounts the AI interface on r (the /v1/ai group, behind the ai_
// key check and the idempotency layer).
func Routes(r fiber.Router, d Deps) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	h := &handlers{Deps: d}
	h.temporalUI = web.NewTemporalUI(d.TemporalUI, d.Namespace)
	r.Get("/documents", h.listDocuments)
	r.Post("/documents", h.createDocument)
	r.Get("/documents/:id", h.getDocument)
	r.Delete("/documents/:id", h.deleteDocument)

	r.Post("/summarize", h.summarize)
	r.Post("/action-items", h.actionItems)
	r.Post("/analyze", h.analyze)

	r.Get("/jobs", h.listJobs)
	r.Get("/jobs/:id", h.getJob)
	r.Post("/jobs/:id/cancel", h.cancelJob)

	r.Get("/usage", h.usage)
}

// page is the envelope of AI lists (snake_case, unlike the CRM's).
type page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

func toPage[T, R any](p web.Page[T], f func(*T) R) page[R] {
	m := web.MapPage(p, f)
	return page[R]{Data: m.Data, NextCursor: m.NextCursor, HasMore: m.HasMore}
}

// param copies a path parameter: Fiber reuses its buffer after the handler.
func param(c *fiber.Ctx, name string) string { return string([]byte(c.Params(name))) }
