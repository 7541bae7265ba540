package models

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Import and export (issue 48): a team moves its contacts, customers…
// in and out as CSV or NDJSON. An Import is the record of one file read
// into an organization by its Import workflow, a chunk at a time
// (ImportChunk), each chunk's rows written with the import's progress in
// one transaction, so that a chunk retried after a crash writes nothing
// twice; an Export is one written out by its Export workflow. The files
// are stored in the database (FileWriter, OpenFile). The objects that
// import, and how each row becomes one, are import_objects.go.

// An import's state.
const (
	ImportQueued     = "queued"
	ImportValidating = "validating"
	ImportRunning    = "running"
	ImportDone       = "done"
	ImportFailed     = "failed"
	ImportCancelled  = "cancelled"
)

// Import formats and modes.
const (
	FormatCSV    = "csv"
	FormatNDJSON = "ndjson"
	// FormatJSON is one JSON document: a person's data (PersonExport).
	FormatJSON = "json"
	ModeCreate = "create"
	ModeUpsert = "upsert"
)

// ImportRetention is how long an import's record and error file are
// kept: long enough to answer "what did last quarter's migration do?",
// short enough that the failed rows' personal data does not linger.
const ImportRetention = 90 * 24 * time.Hour

// ExportRetention is how long an export's file may be downloaded: a
// file of personal data is not kept around once it has been fetched.
const ExportRetention = 7 * 24 * time.Hour

// ImportInput names an import: its Import workflow's input.
type ImportInput struct {
	OrgID    string `json:"orgId"`
	ImportID string `json:"importId"`
}

// Import is the record of one import.
type Import struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	Object    string
	Format    string
	Mode      string
	UpsertKey string
	DryRun    bool
	// Mapping is the file's columns (CSV) or keys (NDJSON) to fields, a
	// JSON object; Columns the CSV's header row, a JSON array.
	Mapping  string
	Columns  string
	Filename string
	Encoding string
	Size     int64
	// Job's Total is how many rows the file has (nil until validated).
	Job
	Created int64
	Updated int64
	Skipped int64
	Failed  int64
	// NextOffset is the byte offset of the first row not yet written, and
	// NextLine its line: a chunk starts there.
	NextOffset int64
	NextLine   int64
}

// Job is what an import and an export record alike: a state, the rows
// done of a total, why it failed, who started it and when it started,
// ended and expires.
type Job struct {
	State      string
	Total      *int64
	Processed  int64
	Error      string
	CreatedBy  Actor
	CreatedAt  time.Time
	UpdatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	ExpiresAt  time.Time
}

// Finished tells whether the job has ended, one way or another.
func (j *Job) Finished() bool {
	return j.State == ImportDone || j.State == ImportFailed || j.State == ImportCancelled
}

// MappingOf is the import's mapping.
func (i *Import) MappingOf() map[string]string {
	out := map[string]string{}
	_ = json.Unmarshal([]byte(i.Mapping), &out)
	return out
}

// ColumnList is the CSV's header.
func (i *Import) ColumnList() []string {
	var out []string
	_ = json.Unmarshal([]byte(i.Columns), &out)
	return out
}

// ImportError is one problem of one row of an import: a line of its
// error file.
type ImportError struct {
	ImportID string `gorm:"primaryKey"`
	Line     int64  `gorm:"primaryKey"`
	Column   string `gorm:"primaryKey;column:column"`
	Reason   string
}

// ImportErrorsOf hands the errors of import id, in line order, to each,
// reading a thousand at a time (keyset on line and column: the table has
// no single key to page by).
func ImportErrorsOf(db *gorm.DB, id string, each func(ImportError) error) error {
	var last *ImportError
	for {
		var batch []ImportError
		q := db.Where("import_id = ?", id)
		if last != nil {
			q = q.Where(`(line, "column") > (?, ?)`, last.Line, last.Column)
		}
		if err := q.Order(`line, "column"`).Limit(1000).Find(&batch).Error; err != nil {
			return err
		}
		for _, e := range batch {
			if err := each(e); err != nil {
				return err
			}
		}
		if len(batch) < 1000 {
			return nil
		}
		last = &batch[len(batch)-1]
	}
}

// ImportFileLimits are the largest import file a plan takes.
var importFileLimits = map[string]int64{PlanFree: 5 << 20, PlanStarter: 50 << 20, PlanBusiness: 250 << 20, PlanEnterprise: 1 << 30}

// ImportFileLimit is the largest import file an organization on plan may
// send, in bytes.
func ImportFileLimit(plan string) int64 {
	if n, ok := importFileLimits[plan]; ok {
		return n
	}
	return importFileLimits[PlanFree]
}

// ImportProgress is what a chunk did, added to the import's counters in
// the chunk's transaction.
type ImportProgress struct {
	Processed, Created, Updated, Skipped, Failed int64
	// NextOffset and NextLine are where the next chunk starts.
	NextOffset, NextLine int64
}

// RecordImportChunk adds p to import id's counters and moves its next
// offset, if the import is still at offset from — the chunk's start — and
// running: it reports false when it is not, and then the chunk's writes
// must roll back (another run of the chunk committed them, or the import
// was cancelled).
func RecordImportChunk(tx *gorm.DB, id string, from int64, p ImportProgress) (bool, error) {
	res := tx.Model(&Import{}).Where("id = ? AND next_offset = ? AND state = ?", id, from, ImportRunning).Updates(map[string]any{
		"processed":   gorm.Expr("processed + ?", p.Processed),
		"created":     gorm.Expr("created + ?", p.Created),
		"updated":     gorm.Expr("updated + ?", p.Updated),
		"skipped":     gorm.Expr("skipped + ?", p.Skipped),
		"failed":      gorm.Expr("failed + ?", p.Failed),
		"next_offset": p.NextOffset, "next_line": p.NextLine, "updated_at": Now(),
	})
	return res.RowsAffected == 1, res.Error
}

// SetImportState moves import id to state, from one of from; finishing
// states stamp finished_at, and running stamps started_at. It reports
// whether the import was in one of from.
func SetImportState(tx *gorm.DB, id, state, why string, from ...string) (bool, error) {
	now := Now()
	set := map[string]any{"state": state, "updated_at": now}
	switch state {
	case ImportDone, ImportFailed, ImportCancelled:
		set["finished_at"] = now
	case ImportValidating:
		set["started_at"] = now
	}
	if why != "" {
		set["error"] = why
	}
	res := tx.Model(&Import{}).Where("id = ? AND state IN ?", id, from).Updates(set)
	return res.RowsAffected == 1, res.Error
}

// CancelImport cancels orgID's import id unless it has finished: its
// workflow stops at the end of the chunk it is in.
func CancelImport(tx *gorm.DB, orgID, id string) (*Import, error) {
	var imp Import
	err := tx.Where("id = ? AND org_id = ?", id, orgID).Take(&imp).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, NotFound("The import")
	}
	if err != nil {
		return nil, err
	}
	if imp.Finished() {
		return nil, Err(ErrConflict, "import_finished", "The import has already ended (%s).", imp.State)
	}
	if _, err := SetImportState(tx, id, ImportCancelled, "", ImportQueued, ImportValidating, ImportRunning); err != nil {
		return nil, err
	}
	return &imp, tx.Where("id = ?", id).Take(&imp).Error
}

// An export's state: an import's, but for validating.
const (
	ExportQueued    = ImportQueued
	ExportRunning   = ImportRunning
	ExportDone      = ImportDone
	ExportFailed    = ImportFailed
	ExportCancelled = ImportCancelled
)

// ExportInput names an export: its Export workflow's input.
type ExportInput struct {
	OrgID    string `json:"orgId"`
	ExportID string `json:"exportId"`
}

// Export is the record of one export, and its file's progress.
type Export struct {
	ID     string `gorm:"primaryKey"`
	OrgID  string
	Object string
	Format string
	// Filters are the list filters the rows match (ExportFilters, JSON);
	// Columns the fields written, in order (JSON array).
	Filters string
	Columns string
	// Job's Total is how many rows match (nil until counted).
	Job
	Size int64
	// Parts is how many parts of the file are written; AfterAt and AfterID
	// the creation time and id of the last row written (the next chunk
	// starts after it).
	Parts   int
	AfterAt *time.Time
	AfterID string
}

// ColumnList is the fields the export writes.
func (e *Export) ColumnList() []string {
	var out []string
	_ = json.Unmarshal([]byte(e.Columns), &out)
	return out
}

// PurgeTransfers deletes what has expired: imports (their records and
// error files) kept ImportRetention, export files kept ExportRetention
// after they were written, and exports' records kept ImportRetention.
func PurgeTransfers(ctx context.Context, db *gorm.DB, now time.Time) error {
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		expiredFiles := tx.Model(&Export{}).Select("id").Where("expires_at < ?", now)
		if err := tx.Where("file_id IN (?)", expiredFiles).Delete(&FilePart{}).Error; err != nil {
			return err
		}
		if err := tx.Where("created_at < ?", now.Add(-ImportRetention)).Delete(&Export{}).Error; err != nil {
			return err
		}
		oldImports := tx.Model(&Import{}).Select("id").Where("expires_at < ?", now)
		if err := tx.Where("file_id IN (?)", oldImports).Delete(&FilePart{}).Error; err != nil {
			return err
		}
		return tx.Where("expires_at < ?", now).Delete(&Import{}).Error
	})
}
