// Package transfers serves import and export (issue 48) for the CRM and
// the Helpdesk alike: POST …/imports takes a file (multipart, streamed
// into the database a part at a time), GET …/imports/{id} shows its
// Import workflow's progress and …/errors its failed rows; POST
// …/exports starts an Export workflow whose file …/exports/{id}/file
// serves until it expires. Each app mounts the routes with its own way of
// finding the organization (Deps.Org) and imports only its own objects.
package transfers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// Deps are what the routes need.
type Deps struct {
	// App is "crm" or "helpdesk": the objects it imports, and its paths.
	App     string
	DB      *gorm.DB
	Starter *outbox.Starter
	// Org resolves the organization a request acts in, and its caller:
	// bodyOrgID is the one a JSON body names ("" for none).
	Org func(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error)
}

type handlers struct{ Deps }

// Routes mounts the import and export routes on r (the app's group).
// Imports and exports are for ADMINs and OWNERs, and API keys: they read
// or write every row of the organization.
func Routes(r fiber.Router, d Deps) {
	h := &handlers{d}
	r.Post("/imports", h.createImport)
	r.Get("/imports", h.listImports)
	r.Get("/imports/:id", h.getImport)
	r.Get("/imports/:id/errors", h.importErrors)
	r.Post("/imports/:id/cancel", h.cancelImport)
	r.Post("/exports", h.createExport)
	r.Get("/exports", h.listExports)
	r.Get("/exports/:id", h.getExport)
	r.Get("/exports/:id/file", h.exportFile)
	if d.App == "crm" {
		r.Post("/organization/:id/privacy/export", h.privacyExport)
	}
}

// UploadPaths are the routes that take a body over the server's limit
// (api.BodyLimit), streamed: the apps' import routes.
var UploadPaths = []string{"POST /crm/imports", "POST /helpdesk/imports"}

// IsDownload tells whether path is an export's file.
func IsDownload(path string) bool {
	for _, app := range []string{"/crm/exports/", "/helpdesk/exports/"} {
		if id, ok := strings.CutPrefix(path, app); ok && strings.HasSuffix(id, "/file") {
			return true
		}
	}
	return false
}

// admin resolves the caller's organization and requires an ADMIN, OWNER
// or key.
func (h *handlers) admin(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error) {
	p, err := h.Org(c, bodyOrgID)
	if err != nil {
		return nil, err
	}
	return p, auth.RequireAdmin(p)
}

// base is the app's path prefix.
func (h *handlers) base() string { return "/" + h.App }

// importForm is the multipart form of an import, but its file.
type importForm struct {
	object, format, mode, key, mapping, filename string
	dryRun                                       bool
}

// createImport stores the uploaded file, checks its header against the
// object, the mapping and the mode (a 422 stores nothing), and records
// the import with its workflow's start: 202 with the import.
//
// A refusal before the body's end leaves the rest of it on the connection,
// which is closed after the answer (web.CloseUnreadBody) unless the form
// was read to its end (web.BodyRead).
func (h *handlers) createImport(c *fiber.Ctx) error {
	p, err := h.admin(c, "")
	if err != nil {
		return err
	}
	mediaType, params, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if mediaType != fiber.MIMEMultipartForm || params["boundary"] == "" {
		return web.NewProblem(fiber.StatusUnsupportedMediaType, "unsupported_media_type",
			"Send the import as multipart/form-data: the file in a part named file, the other fields as parts of their own.")
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	limit := models.ImportFileLimit(org.Plan)
	body := io.Reader(c.Context().RequestBodyStream())
	if !c.Request().IsBodyStream() {
		body = bytes.NewReader(c.Body())
	}
	// The file is spooled to a temporary file first (checked, converted)
	// and stored in the database once the form has been read: the
	// request's transaction (SQLite's one write lock) lasts as long as the
	// database's writes, not as long as the client's upload.
	spool, err := os.CreateTemp("", "suite-import-*")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	imp := &models.Import{ID: models.NewID(), OrgID: p.OrgID, Job: models.Job{CreatedBy: p.Actor()}}
	var form importForm
	var up *upload
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return badForm("The body is not a multipart form: " + err.Error() + ".")
		}
		name := part.FormName()
		if name == "file" {
			if up != nil {
				return badForm("Send one file.")
			}
			form.filename = path.Base(part.FileName())
			if form.format == "" {
				form.format = formatOf(form.filename)
			}
			up, err = spoolUpload(spool, form.format, part, limit)
			if errors.Is(err, errTooLarge) {
				return webLimit(limit)
			}
			if err != nil {
				return err
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, 64<<10))
		if err != nil {
			return badForm("The body is not a multipart form: " + err.Error() + ".")
		}
		if err := form.set(name, string(value), up != nil); err != nil {
			return err
		}
	}
	// What follows the form's last boundary (its epilogue, a CRLF) is
	// read, so the connection can serve the next request.
	if n, _ := io.Copy(io.Discard, io.LimitReader(body, 64<<10)); n < 64<<10 {
		web.BodyRead(c)
	}
	if err := form.fill(imp, up, h.App); err != nil {
		return err
	}
	o := models.ImportObjects[imp.Object]
	defs, err := models.FieldDefinitions(h.DB.WithContext(c.UserContext()), p.OrgID, o.FieldObject)
	if err != nil {
		return err
	}
	var columns []string
	if imp.Format == models.FormatCSV {
		columns = up.header
	}
	if err := o.CheckImportSetup(imp.Mode, imp.UpsertKey, imp.MappingOf(), columns, defs); err != nil {
		return err
	}
	tx := web.Tx(c)
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	stored := models.NewFileWriter(tx, imp.OrgID, imp.ID, 0)
	if _, err := io.Copy(stored, spool); err != nil {
		return err
	}
	if err := stored.Close(); err != nil {
		return err
	}
	if err := tx.Create(imp).Error; err != nil {
		return err
	}
	err = h.Starter.In(c, tx).Start(record.Start{WorkflowID: names.ImportID(imp.OrgID, imp.ID), Workflow: names.ImportWorkflow,
		Input: models.ImportInput{OrgID: imp.OrgID, ImportID: imp.ID}, OrgID: imp.OrgID, Kind: names.KindImport})
	if err != nil {
		return err
	}
	c.Location(h.base() + "/imports/" + imp.ID)
	return c.Status(fiber.StatusAccepted).JSON(h.toImport(imp))
}

func badForm(why string) error {
	return models.Invalid(models.FieldError{Field: "body", Code: "invalid", Message: why})
}

// formatOf is the format a file's name says: NDJSON for .ndjson and
// .jsonl, CSV otherwise.
func formatOf(filename string) string {
	switch strings.ToLower(path.Ext(filename)) {
	case ".ndjson", ".jsonl":
		return models.FormatNDJSON
	}
	return models.FormatCSV
}

// set takes one field of the form. The format must come before the file
// (it decides how the file is read); sent after it, it is refused.
func (f *importForm) set(name, value string, afterFile bool) error {
	value = strings.TrimSpace(value)
	switch name {
	case "object":
		f.object = value
	case "format":
		if afterFile {
			return models.Invalid(models.FieldError{Field: "format", Code: "invalid", Message: "Send format before the file (or leave it to the file's extension)."})
		}
		f.format = value
	case "mode":
		f.mode = value
	case "key":
		f.key = value
	case "mapping":
		f.mapping = value
	case "dryRun":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return models.Invalid(models.FieldError{Field: "dryRun", Code: "invalid", Message: "true or false."})
		}
		f.dryRun = b
	case "orgId":
	default:
		return models.Invalid(models.FieldError{Field: name, Code: "unknown_field", Message: "No field " + name + "; the fields are file, object, format, mode, key, mapping, dryRun."})
	}
	return nil
}

// fill checks the form (every bad field in one 422) and fills imp.
func (f *importForm) fill(imp *models.Import, up *upload, app string) error {
	var bad []models.FieldError
	objects := models.ImportObjectsOf(app)
	if !slices.Contains(objects, f.object) {
		bad = append(bad, models.FieldError{Field: "object", Code: "invalid", Message: "One of " + strings.Join(objects, ", ") + "."})
	}
	if f.format == "" {
		f.format = models.FormatCSV
	}
	if f.format != models.FormatCSV && f.format != models.FormatNDJSON {
		bad = append(bad, models.FieldError{Field: "format", Code: "invalid", Message: "csv or ndjson."})
	}
	if f.mode == "" {
		f.mode = models.ModeCreate
	}
	if f.mode != models.ModeCreate && f.mode != models.ModeUpsert {
		bad = append(bad, models.FieldError{Field: "mode", Code: "invalid", Message: "create or upsert."})
	}
	if f.mode == models.ModeCreate && f.key != "" {
		bad = append(bad, models.FieldError{Field: "key", Code: "invalid", Message: "A key finds the rows an upsert updates; a create takes none."})
	}
	mapping := map[string]string{}
	if f.mapping != "" {
		if err := json.Unmarshal([]byte(f.mapping), &mapping); err != nil {
			bad = append(bad, models.FieldError{Field: "mapping", Code: "invalid", Message: `A JSON object of the file's columns to fields: {"E-mail": "email", "Plan": "fields.plan", "Internal": ""}.`})
		}
	}
	if up == nil {
		bad = append(bad, models.FieldError{Field: "file", Code: "required", Message: "Send the file in a part named file."})
	}
	if len(bad) > 0 {
		return models.Invalid(bad...)
	}
	raw, _ := json.Marshal(mapping)
	columns, _ := json.Marshal(up.header)
	now := models.Now()
	*imp = models.Import{ID: imp.ID, OrgID: imp.OrgID, Object: f.object, Format: f.format, Mode: f.mode,
		UpsertKey: f.key, DryRun: f.dryRun, Mapping: string(raw), Columns: string(columns), Filename: f.filename,
		Encoding: up.encoding, Size: up.size, NextOffset: up.headerEnd, NextLine: up.lines,
		Job: models.Job{State: models.ImportQueued, CreatedBy: imp.CreatedBy, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(models.ImportRetention)}}
	if f.format == models.FormatNDJSON {
		imp.NextLine = 1
	}
	return nil
}

// importView is an import as the API shows it.
type importView struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Format    string            `json:"format"`
	Mode      string            `json:"mode"`
	Key       *string           `json:"key"`
	DryRun    bool              `json:"dryRun"`
	Mapping   map[string]string `json:"mapping"`
	Filename  string            `json:"filename"`
	Encoding  string            `json:"encoding"`
	Size      int64             `json:"size"`
	State     string            `json:"state"`
	Total     *int64            `json:"total"`
	Processed int64             `json:"processed"`
	Created   int64             `json:"created"`
	Updated   int64             `json:"updated"`
	Skipped   int64             `json:"skipped"`
	Failed    int64             `json:"failed"`
	Percent   float64           `json:"percent"`
	// ETA is when the import should end, at its pace so far (null until
	// it has a pace, and once it has ended).
	ETA        *time.Time `json:"eta"`
	ErrorsURL  *string    `json:"errorsUrl"`
	Error      *string    `json:"error"`
	WorkflowID string     `json:"workflowId"`
	CreatedBy  string     `json:"createdBy"`
	CreatedAt  time.Time  `json:"createdAt"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	ExpiresAt  time.Time  `json:"expiresAt"`
}

func (h *handlers) toImport(imp *models.Import) importView {
	v := importView{ID: imp.ID, Object: imp.Object, Format: imp.Format, Mode: imp.Mode, DryRun: imp.DryRun, Mapping: imp.MappingOf(),
		Filename: imp.Filename, Encoding: imp.Encoding, Size: imp.Size, State: imp.State, Total: imp.Total, Processed: imp.Processed,
		Created: imp.Created, Updated: imp.Updated, Skipped: imp.Skipped, Failed: imp.Failed, WorkflowID: names.ImportID(imp.OrgID, imp.ID),
		CreatedBy: string(imp.CreatedBy), CreatedAt: imp.CreatedAt, StartedAt: imp.StartedAt, FinishedAt: imp.FinishedAt, ExpiresAt: imp.ExpiresAt}
	if imp.UpsertKey != "" {
		v.Key = &imp.UpsertKey
	}
	if imp.Error != "" {
		v.Error = &imp.Error
	}
	v.Percent, v.ETA = progress(imp.State, imp.Total, imp.Processed, imp.StartedAt)
	if imp.Failed > 0 {
		u := h.base() + "/imports/" + imp.ID + "/errors"
		v.ErrorsURL = &u
	}
	return v
}

// progress is a job in state's percent done and, while it runs, when it
// should end at its pace so far.
func progress(state string, total *int64, processed int64, started *time.Time) (float64, *time.Time) {
	switch {
	case state == models.ImportDone:
		return 100, nil
	case total == nil || *total == 0:
		return 0, nil
	}
	percent := float64(int(float64(processed)*1000/float64(*total))) / 10
	if processed == 0 || started == nil || state != models.ImportRunning {
		return percent, nil
	}
	elapsed := models.Now().Sub(*started)
	eta := models.Now().Add(time.Duration(float64(elapsed) * float64(*total-processed) / float64(processed))).Truncate(time.Second)
	return percent, &eta
}

// mine is the app's imports (or exports) of p's organization: of the
// objects it imports, and — for its OWNER only, who alone may make them —
// in the CRM the exports of a person's data.
func (h *handlers) mine(c *fiber.Ctx, p *auth.Principal) *gorm.DB {
	objects := models.ImportObjectsOf(h.App)
	if h.App == "crm" && isOwner(p) {
		objects = append(objects, models.PersonExport)
	}
	return h.DB.WithContext(c.UserContext()).Where("org_id = ? AND object IN ?", p.OrgID, objects)
}

// isOwner tells whether p is a signed-in OWNER (no key).
func isOwner(p *auth.Principal) bool { return !p.IsKey() && p.Role == models.RoleOwner }

// one reads the path's import or export of the app in the caller's
// organization, for an ADMIN of it; another's, or none, is 404 what.
func one[T any](h *handlers, c *fiber.Ctx, what string) (*T, error) {
	p, err := h.admin(c, "")
	if err != nil {
		return nil, err
	}
	id := c.Params("id")
	if !models.ValidID(id) {
		return nil, models.NotFound(what)
	}
	var row T
	err = h.mine(c, p).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.NotFound(what)
	}
	return &row, err
}

// list answers a page of the app's imports or exports, newest first, for
// an ADMIN of the caller's organization.
func list[T any, R any](h *handlers, c *fiber.Ctx, cursor func(*T) web.Cursor, view func(*T) R) error {
	p, err := h.admin(c, "")
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(h.mine(c, p), page, cursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, view)
}

func (h *handlers) getImport(c *fiber.Ctx) error {
	imp, err := one[models.Import](h, c, "The import")
	if err != nil {
		return err
	}
	return c.JSON(h.toImport(imp))
}

func (h *handlers) listImports(c *fiber.Ctx) error {
	return list(h, c, func(i *models.Import) web.Cursor { return web.Cursor{CreatedAt: i.CreatedAt, ID: i.ID} }, h.toImport)
}

// importErrors answers the import's error file: a CSV of line, column and
// reason, a line per problem of each failed row, in line order.
func (h *handlers) importErrors(c *fiber.Ctx) error {
	imp, err := one[models.Import](h, c, "The import")
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="import-`+imp.ID+`-errors.csv"`)
	cw := csv.NewWriter(c.Response().BodyWriter())
	_ = cw.Write([]string{"line", "column", "reason"})
	err = models.ImportErrorsOf(h.DB.WithContext(c.UserContext()), imp.ID, func(e models.ImportError) error {
		return cw.Write([]string{strconv.FormatInt(e.Line, 10), models.NeutralizeCell(e.Column), models.NeutralizeCell(e.Reason)})
	})
	cw.Flush()
	return errors.Join(err, cw.Error())
}

// cancelImport stops an import at the end of the chunk it is in: the
// rows written stay, the rest are not read.
func (h *handlers) cancelImport(c *fiber.Ctx) error {
	imp, err := one[models.Import](h, c, "The import")
	if err != nil {
		return err
	}
	cancelled, err := models.CancelImport(web.Tx(c), imp.OrgID, imp.ID)
	if err != nil {
		return err
	}
	return c.JSON(h.toImport(cancelled))
}

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
	p, err := h.Org(c, string([]byte(c.Params("id"))))
	if err != nil {
		return err
	}
	if err := auth.RequireUser(p); err != nil {
		return err
	}
	if !isOwner(p) {
		return models.Err(models.ErrForbidden, "owner_required", "Only the organization's OWNER may export a person's data.")
	}
	filters, _ := json.Marshal(map[string]string{"email": models.NormalizeEmail(req.Email)})
	now := models.Now()
	exp := &models.Export{ID: models.NewID(), OrgID: p.OrgID, Object: models.PersonExport, Format: models.FormatJSON,
		Filters: string(filters), Columns: "[]",
		Job: models.Job{State: models.ExportQueued, CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(models.ImportRetention)}}
	return h.startExport(c, exp)
}
