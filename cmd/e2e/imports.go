package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"time"
)

// importRows is the size of the import under way when both workers are
// killed (issue 48): it rides along faultSLAWorkersDown.
const importRows = 100_000

// runningImport is an import of importRows contacts of one domain.
type runningImport struct {
	id, domain string
	began      time.Time
}

// startImport uploads importRows contacts (each of its own e-mail at a
// domain of the run's) and returns once the import is writing them.
func (t *e2e) startImport(ctx context.Context) (*runningImport, error) {
	run := &runningImport{domain: fmt.Sprintf("import-%d.example", time.Now().UnixNano())}
	var file bytes.Buffer
	file.WriteString("name,email,company\n")
	for i := range importRows {
		fmt.Fprintf(&file, "Imported %d,p%d@%s,Import Co\n", i, i, run.domain)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("object", "contacts")
	part, _ := mw.CreateFormFile("file", "contacts.csv")
	_, _ = part.Write(file.Bytes())
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", t.base(t.next())+"/crm/imports", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+t.crmKey)
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upload the import: %w", err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var imp struct{ ID string }
	r := &response{status: resp.StatusCode, body: data}
	if r.status != http.StatusAccepted {
		return nil, fmt.Errorf("upload the import: %d %s", r.status, r.body)
	}
	if err := r.decode(&imp); err != nil {
		return nil, err
	}
	run.id, run.began = imp.ID, time.Now()
	for {
		s, err := run.state(ctx, t)
		if err != nil {
			return nil, err
		}
		if s.Processed > 0 {
			return run, nil
		}
		if time.Since(run.began) > 30*time.Second {
			return nil, fmt.Errorf("the import is %s with no row written 30 s after its upload", s.State)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// importState is an import's progress.
type importState struct {
	State                               string
	Processed, Created, Skipped, Failed int64
}

func (run *runningImport) state(ctx context.Context, t *e2e) (importState, error) {
	var s importState
	err := expect(ctx, t.http, http.StatusOK, &s, "GET", t.base(t.next())+"/crm/imports/"+run.id, nil, "Authorization", "Bearer "+t.crmKey)
	return s, err
}

// checkCut fails unless the kill cut the import: it is still running,
// some of its rows written and some not.
func (run *runningImport) checkCut(ctx context.Context, t *e2e) error {
	s, err := run.state(ctx, t)
	if err != nil {
		return err
	}
	t.step("the workers were killed with the import %s, %d of %d rows written", s.State, s.Processed, importRows)
	if s.State != "running" || s.Processed >= importRows {
		return fmt.Errorf("the import was %s with %d of %d rows written when the workers were killed: the kill did not cut it", s.State, s.Processed, importRows)
	}
	return nil
}

// check waits for the import to end and checks that each row was
// written once: importRows contacts of its domain, each e-mail once.
func (run *runningImport) check(ctx context.Context, t *e2e, killedAt time.Time) error {
	var s importState
	for {
		var err error
		if s, err = run.state(ctx, t); err != nil {
			return err
		}
		if s.State != "queued" && s.State != "validating" && s.State != "running" {
			break
		}
		if time.Since(run.began) > 3*time.Minute {
			return fmt.Errorf("the import is %s, %d of %d rows, 3 minutes after its upload", s.State, s.Processed, importRows)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	var contacts, emails int
	err := t.db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT email) FROM contacts WHERE org_id = $1 AND email LIKE $2`,
		t.orgID, "%@"+run.domain).Scan(&contacts, &emails)
	if err != nil {
		return err
	}
	t.figure("import of %d contacts with both workers killed %s into it: %s in %s; created %d, failed %d; contacts %d, distinct e-mails %d",
		importRows, killedAt.Sub(run.began).Round(100*time.Millisecond), s.State, time.Since(run.began).Round(100*time.Millisecond),
		s.Created, s.Failed, contacts, emails)
	if s.State != "done" || s.Created != importRows || s.Processed != importRows || contacts != importRows || emails != importRows {
		return fmt.Errorf("the import across the kill: %+v, %d contacts (%d e-mails), want %d each, once", s, contacts, emails, importRows)
	}
	return nil
}
