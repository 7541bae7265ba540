package transfers

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"path"
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
