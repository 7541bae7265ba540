package ai

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

type createDocumentRequest struct {
	Title       string `json:"title"`
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
	Source      string `json:"source"`
	SourceID    string `json:"source_id" validate:"omitempty,uuid"`
}

// documentResponse is a document. Content is shown by GET
// /v1/ai/documents/:id only; lists and the create answer give its size.
type documentResponse struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	ContentType  *string   `json:"content_type"`
	ContentBytes int       `json:"content_bytes"`
	Content      *string   `json:"content,omitempty"`
	Source       *string   `json:"source"`
	SourceID     *string   `json:"source_id"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func toDocument(d *models.AIDocument) documentResponse {
	out := documentResponse{ID: d.ID, Title: d.Title, ContentBytes: len(d.Content), SourceID: d.SourceID,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
	if d.Source != "" {
		src := d.Source
		out.Source = &src
	} else {
		ct := d.ContentType
		out.ContentType = &ct
	}
	return out
}

func documentCursor(d *documentRow) web.Cursor {
	return web.Cursor{CreatedAt: d.CreatedAt, ID: d.ID}
}

// createDocument stores text, or a reference to a record of the
// organization (another organization's record is a 404).
func (h *handlers) createDocument(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createDocumentRequest
	var in models.NewAIDocument
	err := web.Decode(c, &req, func() error {
		in = models.NewAIDocument{OrgID: p.OrgID, Title: req.Title, Content: req.Content, ContentType: req.ContentType,
			Source: req.Source, SourceID: req.SourceID, CreatedBy: p.Actor()}
		return models.ValidateAIDocument(&in)
	})
	if err != nil {
		return err
	}
	doc, err := models.CreateAIDocument(c.UserContext(), web.Tx(c), in)
	if err != nil {
		return err
	}
	c.Location("/v1/ai/documents/" + doc.ID)
	return c.Status(fiber.StatusCreated).JSON(toDocument(doc))
}

func (h *handlers) listDocuments(c *fiber.Ctx) error {
	p := auth.From(c)
	pg, err := web.ParsePage(c)
	filter := struct {
		Source string `json:"source" validate:"omitempty,oneof=text ticket lead customer kb_article"`
	}{c.Query("source")}
	if err := web.MergeInvalid(err, web.Validate(&filter)); err != nil {
		return err
	}
	// Lists never read the content (up to 1 MiB a row), only its size.
	q := h.DB.WithContext(c.UserContext()).Model(&models.AIDocument{}).
		Select("id, org_id, title, content_type, source, source_id, created_by, created_at, updated_at, "+
			models.ContentBytesSQL(h.DB)+" AS content_bytes").
		Where("org_id = ?", p.OrgID)
	switch filter.Source {
	case "":
	case "text":
		q = q.Where("source = ''")
	default:
		q = q.Where("source = ?", filter.Source)
	}
	rows, err := web.Paginate(q, pg, documentCursor)
	if err != nil {
		return err
	}
	return web.SendJSON(c, toPage(rows, func(d *documentRow) documentResponse {
		out := toDocument(&d.AIDocument)
		out.ContentBytes = d.ContentBytes
		return out
	}))
}

// documentRow is a listed document: every column but the content, and the
// content's size in bytes.
type documentRow struct {
	models.AIDocument `gorm:"embedded"`
	ContentBytes      int
}

func (h *handlers) getDocument(c *fiber.Ctx) error {
	p := auth.From(c)
	doc, err := models.FindAIDocument(c.UserContext(), h.DB, p.OrgID, param(c, "id"))
	if err != nil {
		return err
	}
	out := toDocument(doc)
	if doc.Source == "" {
		out.Content = &doc.Content
	}
	return c.JSON(out)
}

// deleteDocument deletes a document; its jobs keep the text they
// processed, and a job not yet started fails with source_not_found.
func (h *handlers) deleteDocument(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := models.DeleteAIDocument(c.UserContext(), web.Tx(c), p.OrgID, param(c, "id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
