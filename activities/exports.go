package activities

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// ExportChunkRows is how many rows one chunk of an export writes, in one
// transaction with the export's progress.
const ExportChunkRows = 10_000

// exportRow is a row as an export writes it: its position (the next
// chunk starts after it), the API's view (NDJSON) and its cell of a
// column (CSV).
type exportRow struct {
	at   time.Time
	id   string
	view func() any
	cell func(column string) string
}

// exporters read the next n rows of an object's export query as
// exportRows.
var exporters = map[string]func(q *gorm.DB, n int) ([]exportRow, error){
	"contacts": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Contact
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			ct := &rows[i]
			out[i] = exportRow{at: ct.CreatedAt, id: ct.ID, view: func() any { return views.ToContact(ct) }, cell: func(col string) string {
				switch col {
				case "id":
					return ct.ID
				case "name":
					return ct.Name
				case "email":
					return ct.Email
				case "phone":
					return ct.Phone
				case "company":
					return ct.Company
				case "designation":
					return ct.Designation
				case "type":
					return ct.Type
				case "notes":
					return ct.Notes
				case "customerId":
					return deref(ct.CustomerID)
				}
				return commonCell(col, ct.Fields, ct.CreatedAt, ct.UpdatedAt)
			}}
		}
		return out, err
	},
	"deals": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Deal
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			d := &rows[i]
			out[i] = exportRow{at: d.CreatedAt, id: d.ID, view: func() any { return views.ToDeal(d) }, cell: func(col string) string {
				switch col {
				case "id":
					return d.ID
				case "title":
					return d.Title
				case "amount":
					return strconv.FormatFloat(d.Amount, 'f', -1, 64)
				case "currency":
					return d.Currency
				case "stage":
					return d.Stage
				case "closeDate":
					return d.CloseDate
				case "companyName":
					return d.CompanyName
				case "contactEmail":
					return d.ContactEmail
				case "contactId":
					return deref(d.ContactID)
				case "assignedToId":
					return deref(d.AssignedToID)
				case "lostReason":
					return d.LostReason
				}
				return commonCell(col, d.Fields, d.CreatedAt, d.UpdatedAt)
			}}
		}
		return out, err
	},
	"leads": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Lead
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			l := &rows[i]
			out[i] = exportRow{at: l.CreatedAt, id: l.ID, view: func() any { return views.ToLead(l) }, cell: func(col string) string {
				switch col {
				case "id":
					return l.ID
				case "name":
					return l.Name
				case "email":
					return l.Email
				case "phone":
					return l.Phone
				case "company":
					return l.Company
				case "value":
					return strconv.FormatFloat(l.Value, 'f', -1, 64)
				case "source":
					return l.Source
				case "status":
					return l.Status
				case "score":
					return strconv.Itoa(l.Score)
				case "assignedToId":
					return deref(l.AssignedToID)
				case "contactId":
					return deref(l.ContactID)
				case "dealId":
					return deref(l.DealID)
				}
				return commonCell(col, l.Fields, l.CreatedAt, l.UpdatedAt)
			}}
		}
		return out, err
	},
	"tasks": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Task
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			t := &rows[i]
			out[i] = exportRow{at: t.CreatedAt, id: t.ID, view: func() any { return views.ToTask(t) }, cell: func(col string) string {
				switch col {
				case "id":
					return t.ID
				case "title":
					return t.Title
				case "description":
					return t.Description
				case "dueDate":
					return t.DueDate
				case "priority":
					return t.Priority
				case "status":
					return t.Status
				case "assignedToId":
					return deref(t.AssignedToID)
				case "leadId":
					return deref(t.LeadID)
				case "dealId":
					return deref(t.DealID)
				case "contactId":
					return deref(t.ContactID)
				case "completedAt":
					if t.CompletedAt == nil {
						return ""
					}
					return stamp(*t.CompletedAt)
				}
				return commonCell(col, nil, t.CreatedAt, t.UpdatedAt)
			}}
		}
		return out, err
	},
	"tickets": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Ticket
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			t := &rows[i]
			out[i] = exportRow{at: t.CreatedAt, id: t.ID, view: func() any { return views.ToTicket(t) }, cell: func(col string) string {
				switch col {
				case "id":
					return t.ID
				case "number":
					return strconv.Itoa(t.Number)
				case "subject":
					return t.Subject
				case "description":
					return t.Description
				case "status":
					return t.Status
				case "priority":
					return t.Priority
				case "channel":
					return t.Channel
				case "requesterEmail":
					return t.RequesterEmail
				case "customerId":
					return deref(t.CustomerID)
				case "agentId":
					return deref(t.AgentID)
				case "tags":
					var tags []string
					_ = json.Unmarshal([]byte(t.Tags), &tags)
					return strings.Join(tags, ";")
				}
				return commonCell(col, t.Fields, t.CreatedAt, t.UpdatedAt)
			}}
		}
		return out, err
	},
	"articles": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.KBArticle
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			a := &rows[i]
			out[i] = exportRow{at: a.CreatedAt, id: a.ID, view: func() any { return views.ToArticle(a) }, cell: func(col string) string {
				switch col {
				case "id":
					return a.ID
				case "title":
					return a.Title
				case "slug":
					return a.Slug
				case "body":
					return a.Body
				case "status":
					return a.Status
				case "categoryId":
					return deref(a.CategoryID)
				case "views":
					return strconv.FormatInt(a.Views, 10)
				case "publishedAt":
					if a.PublishedAt == nil {
						return ""
					}
					return stamp(*a.PublishedAt)
				}
				return commonCell(col, nil, a.CreatedAt, a.UpdatedAt)
			}}
		}
		return out, err
	},
	"customers": func(q *gorm.DB, n int) ([]exportRow, error) {
		var rows []models.Customer
		err := q.Limit(n).Find(&rows).Error
		out := make([]exportRow, len(rows))
		for i := range rows {
			c := &rows[i]
			out[i] = exportRow{at: c.CreatedAt, id: c.ID, view: func() any { return views.ToCustomer(c) }, cell: func(col string) string {
				switch col {
				case "id":
					return c.ID
				case "name":
					return c.Name
				case "email":
					return c.Email
				case "phone":
					return c.Phone
				case "company":
					return c.Company
				case "notes":
					return c.Notes
				case "contactId":
					return deref(c.ContactID)
				}
				return commonCell(col, c.Fields, c.CreatedAt, c.UpdatedAt)
			}}
		}
		return out, err
	},
}

// commonCell is a column every object has: its times and its custom
// fields.
func commonCell(col string, fields models.FieldValues, created, updated time.Time) string {
	switch col {
	case "createdAt":
		return stamp(created)
	case "updatedAt":
		return stamp(updated)
	}
	if key, ok := strings.CutPrefix(col, "fields."); ok {
		return models.ExportCell(fields[key])
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// exportOf reads export in.ExportID on db.
func (a *Transfers) exportOf(db *gorm.DB, in models.ExportInput) (*models.Export, error) {
	var exp models.Export
	err := db.Take(&exp, "id = ? AND org_id = ?", in.ExportID, in.OrgID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("no export "+in.ExportID, ErrTypeNotFound, err)
	}
	return &exp, err
}

// ExportChunk writes the next chunk of an export: up to ExportChunkRows
// rows after the last one written, appended to its file as new parts in
// one transaction with its progress. The last row written and the parts
// are the chunk's guard: an attempt that finds them moved writes nothing.
// A queued export is counted (its total) and set running first; the
// chunk that finds fewer rows than it asked for finishes it.
func (a *Transfers) ExportChunk(ctx context.Context, in models.ExportInput) (ImportStep, error) {
	db := a.DB.WithContext(ctx)
	exp, err := a.exportOf(db, in)
	if err != nil || exp.Finished() {
		return ImportStep{Done: true}, err
	}
	if exp.Object == models.PersonExport {
		return a.personArchive(ctx, exp)
	}
	o, read := models.ImportObjects[exp.Object], exporters[exp.Object]
	if o == nil || read == nil {
		return ImportStep{}, temporal.NewNonRetryableApplicationError("no export of "+exp.Object, ErrTypeBadPayload, nil)
	}
	var filters map[string]string
	_ = json.Unmarshal([]byte(exp.Filters), &filters)
	query := func() (*gorm.DB, error) { return o.ExportQuery(db, exp.OrgID, filters) }
	if exp.State == models.ExportQueued {
		q, err := query()
		if err != nil {
			return ImportStep{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadPayload, err)
		}
		var total int64
		if err := q.Session(&gorm.Session{}).Order("").Count(&total).Error; err != nil {
			return ImportStep{}, refused(err)
		}
		now := models.Now()
		if err := db.Model(exp).Where("state = ?", models.ExportQueued).Updates(map[string]any{
			"state": models.ExportRunning, "total": total, "started_at": now, "updated_at": now}).Error; err != nil {
			return ImportStep{}, err
		}
		return ImportStep{}, nil
	}
	q, err := query()
	if err != nil {
		return ImportStep{}, err
	}
	if exp.AfterID != "" {
		q = q.Where("(created_at, id) > (?, ?)", exp.AfterAt, exp.AfterID)
	}
	rows, err := read(q, ExportChunkRows)
	if err != nil {
		return ImportStep{}, refused(err)
	}
	done := len(rows) < ExportChunkRows
	err = db.Transaction(func(tx *gorm.DB) error {
		w := models.NewFileWriter(tx, exp.OrgID, exp.ID, exp.Parts)
		if err := writeExportRows(w, exp, rows); err != nil {
			return err
		}
		now := models.Now()
		set := map[string]any{"parts": w.Seq, "size": gorm.Expr("size + ?", w.Size), "processed": gorm.Expr("processed + ?", len(rows)),
			"updated_at": now}
		if len(rows) > 0 {
			set["after_at"], set["after_id"] = rows[len(rows)-1].at, rows[len(rows)-1].id
		}
		if done {
			set["state"], set["finished_at"], set["expires_at"] = models.ExportDone, now, now.Add(models.ExportRetention)
		}
		res := tx.Model(&models.Export{}).Where("id = ? AND parts = ? AND after_id = ? AND state = ?", exp.ID, exp.Parts, exp.AfterID, models.ExportRunning).
			Updates(set)
		if res.Error == nil && res.RowsAffected != 1 {
			return errChunkTaken
		}
		return res.Error
	})
	if errors.Is(err, errChunkTaken) {
		return ImportStep{}, nil
	}
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, exp.Processed+int64(len(rows)))
	}
	return ImportStep{Done: done}, refused(err)
}

// writeExportRows writes rows to w as exp's format says: CSV (its header
// first, when the file is empty; cells a spreadsheet would run
// neutralized) or NDJSON (each row the API's JSON).
func writeExportRows(w *models.FileWriter, exp *models.Export, rows []exportRow) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	columns := exp.ColumnList()
	if exp.Format == models.FormatNDJSON {
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for _, r := range rows {
			if err := enc.Encode(r.view()); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return w.Close()
	}
	cw := csv.NewWriter(bw)
	if exp.Parts == 0 && exp.AfterID == "" {
		if err := cw.Write(columns); err != nil {
			return err
		}
	}
	record := make([]string, len(columns))
	for _, r := range rows {
		for i, col := range columns {
			record[i] = models.NeutralizeCell(r.cell(col))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return w.Close()
}

// FailExport fails an export that has not ended, with why, and deletes
// what it had written.
func (a *Transfers) FailExport(ctx context.Context, in models.ExportInput, why string) error {
	return a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := models.Now()
		err := tx.Model(&models.Export{}).Where("id = ? AND state IN ?", in.ExportID, []string{models.ExportQueued, models.ExportRunning}).
			Updates(map[string]any{"state": models.ExportFailed, "error": why, "finished_at": now, "updated_at": now}).Error
		if err != nil {
			return err
		}
		return models.DeleteFile(tx, in.ExportID)
	})
}
