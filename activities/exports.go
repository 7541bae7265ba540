package activities

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// ExportChunkRows is how many rows one chunk of an export writes, in one
// transaction with the export's progress.
const ExportChunkRows = 10_000

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
