package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/stdlib"
)

// importLoad is issue 48's import and export of a million contacts.
const importLoad = "import of 1M contacts (CSV), beside COPY of its first 250k rows; export"

// importContacts is how many rows the file has; copyRows how many of them
// the COPY baseline copies (importRow).
const (
	importContacts = 1_000_000
	copyRows       = importContacts / 4
)

// Issue 48's goals.
const (
	importGoalRows   = 20_000 // rows/s
	importGoalCopy   = 0.5    // of COPY's rows/s
	importGoalRSS    = 500    // MB over the suite's RSS before
	exportGoalRows   = 50_000 // rows/s
	progressGoalFrom = time.Second
	progressGoalGap  = 2 * time.Second
)

// importResult is the import, the COPY and the export of the same rows.
type importResult struct {
	size                        int64
	upload, imported, copied    time.Duration
	exported                    time.Duration
	created, failed             int64
	firstProgress, longestStill time.Duration
	rssBefore, rssPeak          float64
}

func (r importResult) String() string {
	rate := float64(importContacts) / r.imported.Seconds()
	copyRate := float64(copyRows) / r.copied.Seconds()
	exportRate := float64(importContacts) / r.exported.Seconds()
	return fmt.Sprintf("%-42s %d rows (%.0f MB, uploaded in %.1f s) imported in %.1f s: %.0f rows/s, %.2f× COPY's %.0f rows/s "+
		"(goal ≥ %d rows/s and ≥ %.1f×: %s); created %d, failed %d; progress first shown %.2f s after the 202, longest unchanged %.1f s "+
		"(goal ≤ %.0f s and ≤ %.0f s: %s); suite RSS %.0f MB, peak %.0f MB (+%.0f; goal ≤ +%d: %s); "+
		"export of the rows %.1f s: %.0f rows/s (goal ≥ %d: %s)",
		importLoad, importContacts, float64(r.size)/1e6, r.upload.Seconds(), r.imported.Seconds(), rate, rate/copyRate, copyRate,
		importGoalRows, importGoalCopy, metIf(rate >= importGoalRows && rate/copyRate >= importGoalCopy), r.created, r.failed,
		r.firstProgress.Seconds(), r.longestStill.Seconds(), progressGoalFrom.Seconds(), progressGoalGap.Seconds(),
		metIf(r.firstProgress <= progressGoalFrom && r.longestStill <= progressGoalGap),
		r.rssBefore, r.rssPeak, r.rssPeak-r.rssBefore, importGoalRSS, metIf(r.rssPeak-r.rssBefore <= importGoalRSS),
		r.exported.Seconds(), exportRate, exportGoalRows, metIf(exportRate >= exportGoalRows))
}

func metIf(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// importRow imports a file of a million contacts into a workspace of its
// own through the API (POST /crm/imports, its progress polled every
// 100 ms with the suite's resident memory), copies the file's first
// copyRows rows into a second workspace with COPY (the database's own
// bulk path: the rows are the file's, with the columns the suite fills —
// id, organization, type, times — added, since COPY fills none; a quarter
// of the file, since its rate per row is what the import is compared
// with, and COPY of the whole million took a minute of the bench's 15),
// and exports the imported rows.
// The contacts stay: the bench's database is dropped at the end, and
// deleting two million contacts took longer than a row's measurement.
func (r *benchRun) importRow() error {
	ws, err := r.workspace()
	if err != nil {
		return err
	}
	copyWS, err := r.workspace()
	if err != nil {
		return err
	}
	if err := ws.toBusinessPlan(); err != nil {
		return err
	}
	file := filepath.Join(ws.dir, "contacts.csv")
	if err := writeContactsCSV(file); err != nil {
		return err
	}
	defer os.Remove(file)
	var res importResult
	if info, err := os.Stat(file); err == nil {
		res.size = info.Size()
	}
	rss, err := ws.procs.residentMiB()
	if err != nil {
		return err
	}
	res.rssBefore, res.rssPeak = float64(rss), float64(rss)

	began := time.Now()
	id, err := ws.uploadImport(file)
	if err != nil {
		return err
	}
	res.upload = time.Since(began)
	accepted := time.Now()
	var last transferState
	lastChange := time.Now()
	err = ws.pollTransfer(r.ctx, "/crm/imports/"+id, func(s transferState) {
		now := time.Now()
		if s.Processed != last.Processed || s.State != last.State {
			if res.firstProgress == 0 && s.Processed > 0 {
				res.firstProgress = now.Sub(accepted)
			}
			if s.State == "running" && last.State == "running" {
				res.longestStill = max(res.longestStill, now.Sub(lastChange))
			}
			lastChange = now
		}
		last = s
		if mib, err := ws.procs.residentMiB(); err == nil {
			res.rssPeak = max(res.rssPeak, float64(mib))
		}
	})
	if err != nil {
		return err
	}
	res.imported = time.Since(began)
	res.created, res.failed = last.Created, last.Failed
	if last.State != "done" {
		return fmt.Errorf("the import ended %s: %+v", last.State, last)
	}

	if res.copied, err = copyContacts(r.ctx, ws.db, copyWS.org); err != nil {
		return err
	}

	began = time.Now()
	var exp struct{ ID string }
	if err := call(ws.base+"/crm/exports", ws.key, map[string]any{"object": "contacts"}, &exp); err != nil {
		return fmt.Errorf("the export: %w", err)
	}
	if err := ws.pollTransfer(r.ctx, "/crm/exports/"+exp.ID, func(s transferState) { last = s }); err != nil {
		return err
	}
	res.exported = time.Since(began)
	if last.State != "done" || last.Processed != importContacts {
		return fmt.Errorf("the export ended %s: %+v", last.State, last)
	}
	r.note(res)
	return nil
}

// writeContactsCSV writes the row's file: name, email and company.
func writeContactsCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "name,email,company")
	for i := range importContacts {
		fmt.Fprintf(w, "Contact %d,c%d@import.example,Company %d\n", i, i, i%1000)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// uploadImport streams file to POST /crm/imports and answers its id.
func (b *bencher) uploadImport(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("object", "contacts")
		part, err := mw.CreateFormFile("file", "contacts.csv")
		if err == nil {
			_, err = io.Copy(part, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", b.base+"/crm/imports", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+b.key)
	var imp struct{ ID string }
	if err := do(req, &imp); err != nil {
		return "", fmt.Errorf("the upload: %w", err)
	}
	return imp.ID, nil
}

// transferState is an import's or an export's progress.
type transferState struct {
	State                      string
	Processed, Created, Failed int64
}

// pollTransfer polls path every 100 ms, handing each answer to seen,
// until the import or export there has ended.
func (b *bencher) pollTransfer(ctx context.Context, path string, seen func(transferState)) error {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, "GET", b.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+b.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var s transferState
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			return err
		}
		seen(s)
		switch s.State {
		case "done", "failed", "cancelled":
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not end in 15 minutes", path)
}

// copyContacts COPYs the file's rows, with the columns the suite fills,
// into org's contacts, and answers how long the COPY took.
func copyContacts(ctx context.Context, db *sql.DB, org string) (time.Duration, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		for i := range copyRows {
			fmt.Fprintf(w, "%s,%s,Contact %d,c%d@import.example,Company %d,person,bench,{},%s,%s\n", uuid.NewString(), org, i, i, i%1000, now, now)
		}
		pw.CloseWithError(w.Flush())
	}()
	began := time.Now()
	err = conn.Raw(func(dc any) error {
		_, err := dc.(*stdlib.Conn).Conn().PgConn().CopyFrom(ctx, pr,
			`COPY contacts (id, org_id, name, email, company, type, created_by, fields, created_at, updated_at) FROM STDIN WITH (FORMAT csv)`)
		return err
	})
	return time.Since(began), err
}
