package transfers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// exportRequest is the body of POST …/exports.
type exportRequest struct {
	OrgID   string            `json:"orgId" validate:"omitempty,uuid"`
	Object  string            `json:"object" validate:"required"`
	Format  string            `json:"format" validate:"omitempty,oneof=csv ndjson"`
	Filters map[string]string `json:"filters"`
	Columns []string          `json:"columns" validate:"omitempty,max=200,dive,max=60"`
}

// createExport checks the object, its filters and its columns, and
// records the export with its workflow's start: 202 with the export.
func (h *handlers) createExport(c *fiber.Ctx) error {
	var req exportRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	p, err := h.admin(c, req.OrgID)
	if err != nil {
		return err
	}
	o := models.ImportObjects[req.Object]
	if o == nil || o.App != h.App {
		return models.Invalid(models.FieldError{Field: "object", Code: "invalid", Message: "One of " + strings.Join(models.ImportObjectsOf(h.App), ", ") + "."})
	}
	db := h.DB.WithContext(c.UserContext())
	defs, err := models.FieldDefinitions(db, p.OrgID, o.FieldObject)
	if err != nil {
		return err
	}
	var bad []models.FieldError
	for _, name := range slices.Sorted(maps.Keys(req.Filters)) {
		if !slices.Contains(o.Filters, name) && !strings.HasPrefix(name, "fields.") {
			bad = append(bad, models.FieldError{Field: "filters." + name, Code: "unknown_field",
				Message: fmt.Sprintf("No filter %s on %s; they are %s and fields.<key>.", name, o.Name, strings.Join(o.Filters, ", "))})
		}
	}
	for _, name := range []string{"assignedToId", "contactId", "agentId", "customerId"} {
		if v, ok := req.Filters[name]; ok && slices.Contains(o.Filters, name) && !models.ValidID(v) {
			bad = append(bad, models.FieldError{Field: "filters." + name, Code: "uuid", Message: "Must be an id."})
		}
	}
	if len(bad) > 0 {
		return models.Invalid(bad...)
	}
	if _, err := o.ExportQuery(db, p.OrgID, req.Filters); err != nil {
		return err
	}
	all := o.DefaultExportColumns(defs)
	if len(req.Columns) == 0 {
		req.Columns = all
	}
	for i, col := range req.Columns {
		if !slices.Contains(all, col) {
			bad = append(bad, models.FieldError{Field: "columns[" + strconv.Itoa(i) + "]", Code: "unknown_field",
				Message: fmt.Sprintf("No column %q; they are %s.", col, strings.Join(all, ", "))})
		}
	}
	if len(bad) > 0 {
		return models.Invalid(bad...)
	}
	if req.Filters == nil {
		req.Filters = map[string]string{}
	}
	filters, _ := json.Marshal(req.Filters)
	columns, _ := json.Marshal(req.Columns)
	now := models.Now()
	exp := &models.Export{ID: models.NewID(), OrgID: p.OrgID, Object: o.Name, Format: cmp.Or(req.Format, models.FormatCSV),
		Filters: string(filters), Columns: string(columns),
		Job: models.Job{State: models.ExportQueued, CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(models.ImportRetention)}}
	return h.startExport(c, exp)
}

// startExport records exp and its Export workflow's start, and answers
// 202 with it.
func (h *handlers) startExport(c *fiber.Ctx, exp *models.Export) error {
	tx := web.Tx(c)
	if err := tx.Create(exp).Error; err != nil {
		return err
	}
	err := h.Starter.In(c, tx).Start(record.Start{WorkflowID: names.ExportID(exp.OrgID, exp.ID), Workflow: names.ExportWorkflow,
		Input: models.ExportInput{OrgID: exp.OrgID, ExportID: exp.ID}, OrgID: exp.OrgID, Kind: names.KindExport})
	if err != nil {
		return err
	}
	c.Location(h.base() + "/exports/" + exp.ID)
	return c.Status(fiber.StatusAccepted).JSON(h.toExport(exp))
}

// exportView is an export as the API shows it.
type exportView struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Format      string            `json:"format"`
	Filters     map[string]string `json:"filters"`
	Columns     []string          `json:"columns"`
	State       string            `json:"state"`
	Total       *int64            `json:"total"`
	Processed   int64             `json:"processed"`
	Percent     float64           `json:"percent"`
	ETA         *time.Time        `json:"eta"`
	Size        int64             `json:"size"`
	DownloadURL *string           `json:"downloadUrl"`
	Error       *string           `json:"error"`
	WorkflowID  string            `json:"workflowId"`
	CreatedBy   string            `json:"createdBy"`
	CreatedAt   time.Time         `json:"createdAt"`
	StartedAt   *time.Time        `json:"startedAt"`
	FinishedAt  *time.Time        `json:"finishedAt"`
	// ExpiresAt is when a finished export's file is deleted.
	ExpiresAt time.Time `json:"expiresAt"`
}

func (h *handlers) toExport(exp *models.Export) exportView {
	v := exportView{ID: exp.ID, Object: exp.Object, Format: exp.Format, Filters: map[string]string{}, Columns: exp.ColumnList(),
		State: exp.State, Total: exp.Total, Processed: exp.Processed, Size: exp.Size, WorkflowID: names.ExportID(exp.OrgID, exp.ID),
		CreatedBy: string(exp.CreatedBy), CreatedAt: exp.CreatedAt, StartedAt: exp.StartedAt, FinishedAt: exp.FinishedAt, ExpiresAt: exp.ExpiresAt}
	_ = json.Unmarshal([]byte(exp.Filters), &v.Filters)
	if exp.Error != "" {
		v.Error = &exp.Error
	}
	v.Percent, v.ETA = progress(exp.State, exp.Total, exp.Processed, exp.StartedAt)
	if exp.State == models.ExportDone && models.Now().Before(exp.ExpiresAt) {
		u := h.base() + "/exports/" + exp.ID + "/file"
		v.DownloadURL = &u
	}
	return v
}

func (h *handlers) getExport(c *fiber.Ctx) error {
	exp, err := one[models.Export](h, c, "The export")
	if err != nil {
		return err
	}
	return c.JSON(h.toExport(exp))
}

func (h *handlers) listExports(c *fiber.Ctx) error {
	return list(h, c, func(e *models.Export) web.Cursor { return web.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} }, h.toExport)
}

// exportFile streams a finished export's file from the database, a part
// at a time: 409 while it is being written, 410 once it has expired.
func (h *handlers) exportFile(c *fiber.Ctx) error {
	exp, err := one[models.Export](h, c, "The export")
	if err != nil {
		return err
	}
	switch {
	case exp.State != models.ExportDone:
		return models.Err(models.ErrConflict, "export_not_ready", "The export is %s; its file is ready once it is done.", exp.State)
	case !models.Now().Before(exp.ExpiresAt):
		return models.Err(models.ErrGone, "export_expired", "The export's file expired at %s; export again.", exp.ExpiresAt.Format(time.RFC3339))
	}
	contentType, ext := "text/csv; charset=utf-8", ".csv"
	switch exp.Format {
	case models.FormatNDJSON:
		contentType, ext = "application/x-ndjson", ".ndjson"
	case models.FormatJSON:
		contentType, ext = fiber.MIMEApplicationJSON, ".json"
	}
	c.Set(fiber.HeaderContentType, contentType)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+exp.Object+`-`+exp.ID+ext+`"`)
	// The body is read after the handler returns, so not on its context.
	c.Context().SetBodyStream(models.OpenFile(context.WithoutCancel(c.UserContext()), h.DB, exp.ID, 0), int(exp.Size))
	return nil
}

// privacyRequest names the person whose data is exported.
type privacyRequest struct {
	Email string `json:"email" validate:"required,email,max=254"`
}

// privacyExport starts the export of everything the organization holds
// about the person of an e-mail address (GDPR article 15) as one JSON
// archive: an export (202, GET /crm/exports/{id}, its file once done)
// whose Export workflow gathers it (models.GatherPerson). For the
// organization's OWNER only: it reads every record about someone.
func (h *handlers) privacyExport(c *fiber.Ctx) error {
	var req privacyRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	p, err := h.owner(c)
	if err != nil {
		return err
	}
	filters, _ := json.Marshal(map[string]string{"email": models.NormalizeEmail(req.Email)})
	now := models.Now()
	exp := &models.Export{ID: models.NewID(), OrgID: p.OrgID, Object: models.PersonExport, Format: models.FormatJSON,
		Filters: string(filters), Columns: "[]",
		Job: models.Job{State: models.ExportQueued, CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(models.ImportRetention)}}
	return h.startExport(c, exp)
}
