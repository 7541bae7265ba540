package activities_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// storedImport stores file as a queued import of contacts of orgID, the
// way the API stores an upload (its header read, the rest in parts).
func storedImport(t *testing.T, db *gorm.DB, orgID, file string, mode, key string) *models.Import {
	t.Helper()
	header, _, _ := strings.Cut(file, "\n")
	now := models.Now()
	imp := &models.Import{ID: models.NewID(), OrgID: orgID, Object: "contacts", Format: models.FormatCSV, Mode: mode, UpsertKey: key,
		Mapping: "{}", Columns: `["` + strings.ReplaceAll(header, ",", `","`) + `"]`, Encoding: "utf-8", Size: int64(len(file)),
		NextOffset: int64(len(header) + 1), NextLine: 2,
		Job: models.Job{State: models.ImportQueued, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(models.ImportRetention)}}
	err := db.Transaction(func(tx *gorm.DB) error {
		w := models.NewFileWriter(tx, orgID, imp.ID, 0)
		if _, err := w.Write([]byte(file)); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		return tx.Create(imp).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	return imp
}

// Every row of an import is written once, however its chunks' attempts
// overlap: here every chunk runs twice at once (a worker that lost its
// heartbeat and the one that took the chunk over), and each attempt that
// finds the chunk written by the other writes nothing. A re-run of the
// file as an upsert changes nothing.
func TestImportChunksWriteEachRowOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		const chunk = 500
		rows := 2*chunk + 123
		var file strings.Builder
		file.WriteString("name,email,notes\n")
		for i := range rows {
			fmt.Fprintf(&file, "Person %d,p%d@example.com,\"line one\nline two\"\n", i, i)
		}
		a := &activities.Transfers{DB: db, ChunkRows: chunk}
		ctx := context.Background()
		run := func(imp *models.Import) models.Import {
			t.Helper()
			in := models.ImportInput{OrgID: orgID, ImportID: imp.ID}
			if err := a.ValidateImport(ctx, in); err != nil {
				t.Fatal(err)
			}
			for range 20 {
				var wg sync.WaitGroup
				steps := make([]activities.ImportStep, 2)
				errs := make([]error, 2)
				for i := range 2 {
					wg.Go(func() { steps[i], errs[i] = a.ImportChunk(ctx, in) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil && !strings.Contains(err.Error(), "database is locked") {
						t.Fatal(err)
					}
				}
				if steps[0].Done || steps[1].Done {
					break
				}
			}
			if err := a.CloseImport(ctx, in, ""); err != nil {
				t.Fatal(err)
			}
			var got models.Import
			db.Take(&got, "id = ?", imp.ID)
			return got
		}
		got := run(storedImport(t, db, orgID, file.String(), models.ModeCreate, ""))
		var contacts, parts int64
		db.Model(&models.Contact{}).Where("org_id = ?", orgID).Count(&contacts)
		db.Model(&models.FilePart{}).Where("org_id = ?", orgID).Count(&parts)
		if got.State != models.ImportDone || *got.Total != int64(rows) || got.Processed != int64(rows) || got.Created != int64(rows) ||
			contacts != int64(rows) || got.NextLine != int64(2+2*rows) || parts != 0 {
			t.Fatalf("import %+v: %d contacts, %d parts left", got, contacts, parts)
		}
		again := run(storedImport(t, db, orgID, file.String(), models.ModeUpsert, "email"))
		db.Model(&models.Contact{}).Where("org_id = ?", orgID).Count(&contacts)
		if again.State != models.ImportDone || again.Skipped != int64(rows) || again.Created+again.Updated != 0 || contacts != int64(rows) {
			t.Fatalf("re-run %+v: %d contacts", again, contacts)
		}

		// An error file of more rows than a page reads, in line order.
		var errs []models.ImportError
		for i := range 2500 {
			errs = append(errs, models.ImportError{ImportID: got.ID, Line: int64(2500 - i), Column: "email", Reason: "bad"})
		}
		if err := db.CreateInBatches(errs, 500).Error; err != nil {
			t.Fatal(err)
		}
		var lines []int64
		if err := models.ImportErrorsOf(db, got.ID, func(e models.ImportError) error { lines = append(lines, e.Line); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2500 || lines[0] != 1 || lines[2499] != 2500 || !slices.IsSorted(lines) {
			t.Fatalf("the error file read %d lines", len(lines))
		}

		// Expired imports go, with their error files.
		db.Model(&models.Import{}).Where("id = ?", got.ID).Update("expires_at", models.Now().Add(-time.Minute))
		if err := models.PurgeTransfers(ctx, db, models.Now()); err != nil {
			t.Fatal(err)
		}
		var left, errorsLeft int64
		db.Model(&models.Import{}).Where("org_id = ?", orgID).Count(&left)
		db.Model(&models.ImportError{}).Where("import_id = ?", got.ID).Count(&errorsLeft)
		if left != 1 || errorsLeft != 0 {
			t.Fatalf("after the purge: %d imports, %d errors of the expired one", left, errorsLeft)
		}
	})
}

// A row over models.MaxRecordBytes (here an unclosed quote, which makes
// the rest of the file one record) fails the import with its line, rather
// than being read whole; a large file of ordinary rows is read in chunks
// that end early, well within it.
func TestImportRowsHaveALengthLimit(t *testing.T) {
	defer func(was int64) { models.MaxRecordBytes = was }(models.MaxRecordBytes)
	models.MaxRecordBytes = 4 << 10
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		a := &activities.Transfers{DB: db}
		ctx := context.Background()
		var file strings.Builder
		file.WriteString("name,notes\n")
		for i := range 2000 {
			fmt.Fprintf(&file, "Person %d,%s\n", i, strings.Repeat("n", 1000)) // 2 MB of rows of 1 KB
		}
		ok := storedImport(t, db, orgID, file.String(), models.ModeCreate, "")
		in := models.ImportInput{OrgID: orgID, ImportID: ok.ID}
		if err := a.ValidateImport(ctx, in); err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			step, err := a.ImportChunk(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			done = step.Done
		}
		var got models.Import
		db.Take(&got, "id = ?", ok.ID)
		if got.State != models.ImportDone || got.Created != 2000 {
			t.Fatalf("rows of 1 KB: %+v", got)
		}

		bad := storedImport(t, db, orgID, "name,notes\nAda,fine\nBob,\"never closed\n"+strings.Repeat("x\n", 5000), models.ModeCreate, "")
		err := a.ValidateImport(ctx, models.ImportInput{OrgID: orgID, ImportID: bad.ID})
		if err == nil || !strings.Contains(err.Error(), "unclosed quote") || !temporal.IsApplicationError(err) {
			t.Fatalf("validating a file with an unclosed quote: %v", err)
		}
		// A chunk that meets it (the file counted before a change of the
		// limit, say) fails the same way, with the row's line.
		db.Model(&models.Import{}).Where("id = ?", bad.ID).Update("state", models.ImportRunning)
		_, err = a.ImportChunk(ctx, models.ImportInput{OrgID: orgID, ImportID: bad.ID})
		if err == nil || !strings.Contains(err.Error(), "starts on line 3") || !temporal.IsApplicationError(err) {
			t.Fatalf("a chunk with an unclosed quote: %v", err)
		}
	})
}
