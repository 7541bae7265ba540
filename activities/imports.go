package activities

import (
	"cmp"
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// Transfers are the activities of the Import and Export workflows.
type Transfers struct {
	DB *gorm.DB
	// ChunkRows is how many rows an import's chunk reads (0:
	// ImportChunkRows): a test sets fewer, to cross chunk boundaries with
	// a small file (the pure-Go SQLite under the race detector wrote
	// 20,000 rows in 85 s).
	ChunkRows int
}

// ImportChunkRows is how many rows of a file one chunk reads and writes,
// in one transaction: a second or so of work, so a worker killed mid-chunk
// redoes little, and a few hundred chunks for a million rows.
const ImportChunkRows = 5000

// ImportStep is what one chunk did: whether the import has no more to do
// (every row read, or it was cancelled).
type ImportStep struct {
	Done bool `json:"done"`
}

// errChunkTaken rolls back a chunk whose progress another run of it
// recorded first, or that the import's cancellation overtook.
var errChunkTaken = errors.New("the chunk was written by another attempt, or the import was cancelled")

// errDryRun rolls back a dry run's writes (and keeps its counts).
var errDryRun = errors.New("dry run")

// importOf reads import in.ImportID on db.
func (a *Transfers) importOf(db *gorm.DB, in models.ImportInput) (*models.Import, error) {
	var imp models.Import
	err := db.Take(&imp, "id = ? AND org_id = ?", in.ImportID, in.OrgID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("no import "+in.ImportID, ErrTypeNotFound, err)
	}
	return &imp, err
}

// ValidateImport counts the rows of a queued import's file (its total,
// shown with its progress), heartbeating the offset it reached, and sets
// it running. An import already past it is left as it is.
func (a *Transfers) ValidateImport(ctx context.Context, in models.ImportInput) error {
	db := a.DB.WithContext(ctx)
	imp, err := a.importOf(db, in)
	if err != nil || (imp.State != models.ImportQueued && imp.State != models.ImportValidating) {
		return err
	}
	if _, err := models.SetImportState(db, imp.ID, models.ImportValidating, "", models.ImportQueued); err != nil {
		return err
	}
	total, err := models.CountImportRows(models.OpenFile(ctx, db, imp.ID, imp.NextOffset), imp.Format, func(offset int64) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, offset)
		}
	})
	if err != nil {
		return refused(err)
	}
	return db.Model(&models.Import{}).Where("id = ? AND state = ?", imp.ID, models.ImportValidating).
		Updates(map[string]any{"total": total, "state": models.ImportRunning, "updated_at": models.Now()}).Error
}

// ImportChunk reads and writes the next chunk of a running import: up to
// ImportChunkRows rows from where the last chunk ended, written with the
// import's new counters and offset and the rows' errors in one
// transaction. The offset is the chunk's guard: an attempt that finds it
// moved (an earlier attempt committed and the worker died before the
// workflow heard) writes nothing, so every row is written once. A dry run
// writes its rows in a savepoint it rolls back. The chunk that reaches
// the end of the file finishes the import.
func (a *Transfers) ImportChunk(ctx context.Context, in models.ImportInput) (ImportStep, error) {
	db := a.DB.WithContext(ctx)
	imp, err := a.importOf(db, in)
	if err != nil || imp.State != models.ImportRunning {
		return ImportStep{Done: true}, err
	}
	o := models.ImportObjects[imp.Object]
	if o == nil {
		return ImportStep{}, temporal.NewNonRetryableApplicationError("no import of "+imp.Object, ErrTypeBadPayload, nil)
	}
	defs, err := models.FieldDefinitions(db, imp.OrgID, o.FieldObject)
	if err != nil {
		return ImportStep{}, err
	}
	chunk, err := models.ReadImportChunk(models.OpenFile(ctx, db, imp.ID, imp.NextOffset), imp, defs, imp.NextOffset, imp.NextLine, cmp.Or(a.ChunkRows, ImportChunkRows))
	if err != nil {
		return ImportStep{}, refused(err)
	}
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, chunk.Next)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		batch := models.ImportBatch{Errors: chunk.Failed}
		batch.Progress.Failed = chunk.FailedRows
		batch.Progress.Processed = chunk.FailedRows
		err := tx.Transaction(func(sp *gorm.DB) error {
			if err := models.WriteImportRows(sp, imp, chunk.Rows, &batch); err != nil {
				return err
			}
			if imp.DryRun {
				return errDryRun
			}
			return nil
		})
		if err != nil && !errors.Is(err, errDryRun) {
			return err
		}
		batch.Progress.NextOffset, batch.Progress.NextLine = chunk.Next, chunk.NextLine
		ok, err := models.RecordImportChunk(tx, imp.ID, imp.NextOffset, batch.Progress)
		if err != nil {
			return err
		}
		if !ok {
			return errChunkTaken
		}
		if len(batch.Errors) > 0 {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(batch.Errors, 500).Error; err != nil {
				return err
			}
		}
		if chunk.EOF {
			_, err = models.SetImportState(tx, imp.ID, models.ImportDone, "", models.ImportRunning)
		}
		return err
	})
	if errors.Is(err, errChunkTaken) {
		return ImportStep{}, nil // the workflow asks again, and reads the import as it now is
	}
	return ImportStep{Done: chunk.EOF}, refused(err)
}

// refused is err, made non-retryable when every retry would meet it
// again — the database refused a value (database.IsDataError), or a row of
// the file is too long to read (models.ErrRecordTooLong) — so that the
// import or export fails, visibly, instead of retrying for ever.
func refused(err error) error {
	switch {
	case errors.Is(err, models.ErrRecordTooLong):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadPayload, err)
	case database.IsDataError(err):
		return temporal.NewNonRetryableApplicationError("the database refused a value: "+err.Error(), ErrTypeBadPayload, err)
	}
	return err
}

// CloseImport ends an import: failed with why (a failure no retry could
// cure), or — why empty — as its chunks left it; either way its uploaded
// file is deleted, the rows it had being in the database or in its
// error file.
func (a *Transfers) CloseImport(ctx context.Context, in models.ImportInput, why string) error {
	return a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if why != "" {
			if _, err := models.SetImportState(tx, in.ImportID, models.ImportFailed, why,
				models.ImportQueued, models.ImportValidating, models.ImportRunning); err != nil {
				return err
			}
		}
		return models.DeleteFile(tx, in.ImportID)
	})
}
