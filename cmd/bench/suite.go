package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/business-suite/suite/worker/ports"
)

// suite is the running `suite dev` process.
type suite struct {
	cmd   *exec.Cmd
	base  string
	pprof string
	smtp  string
	log   *os.File
}

// accessLog is the access-log policy the suite runs with: `suite api`'s
// default (every error and slow request, one in ten of the others), not
// `suite dev`'s line for every request, which is a developer's view at a
// terminal. The loads measure the request path as production serves it:
// a line for every GET was 0.019 ms of the suite's CPU, a seventh of a
// list page's (docs/decisions.md, "A list page's empty custom fields, the
// bench's access log, and a floor for the GET").
const accessLog = "sample:10"

// freePort is a port for the suite under test (see ports.Addr for
// why not port 0).
func freePort() (int, error) { return ports.Port("127.0.0.1") }

func startSuite(cfg config, dbURL, dataDir string) (*suite, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	temporalPort, err := freePort()
	if err != nil {
		return nil, err
	}
	smtpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dataDir, "suite.log"))
	if err != nil {
		return nil, err
	}
	var pprofAddr string
	if cfg.profileDir != "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	cmd := exec.Command(cfg.binary, "dev")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"SUITE_DATA_DIR="+dataDir,
		fmt.Sprintf("SUITE_HTTP_ADDR=127.0.0.1:%d", httpPort),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		"SUITE_TEMPORAL_UI_ADDR=",
		"SUITE_DEMO=false",
		// The load runs send the intake with one crm_ key far above its
		// default per-key limit (6,000 a minute): the bench measures the
		// pipeline, not the limiter, as an integration configured for its
		// volume would see it.
		"SUITE_WEBHOOK_KEY_RATE=100000000",
		// The same for the SMTP listener's per-client limit: every
		// message comes from 127.0.0.1, as from one relaying provider.
		fmt.Sprintf("SUITE_SMTP_ADDR=127.0.0.1:%d", smtpPort),
		"SUITE_SMTP_CLIENT_RATE=100000000",
		"SUITE_PPROF_ADDR="+pprofAddr,
		"SUITE_ACCESS_LOG="+accessLog,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &suite{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort), pprof: pprofAddr,
		smtp: fmt.Sprintf("127.0.0.1:%d", smtpPort), log: logFile}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("suite dev did not become ready (log: %s)", logFile.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
	}
	_ = s.log.Close()
}

// setupOrg signs up an owner, creates an enterprise organization (no plan
// limits get in the way) and a crm_ key, all through the real API and CLI;
// it returns them with the owner's access token.
// benchOrg is an organization setupOrg made, its crm_ key and its owner's
// access token.
type benchOrg struct {
	tenant
	token string
	email string // the owner's, who signs in again with benchPassword (signIn)
}

// benchPassword is the password of every owner setupOrg signs up.
const benchPassword = "correct horse battery"

// signIn is a fresh access token of the owner email: a load that runs late
// in a full run outlives the token setupOrg got (they last 15 minutes).
func signIn(base, email string) (string, error) {
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err := call(base+"/identity/v1/token", "", map[string]string{"grant_type": "password", "email": email, "password": benchPassword}, &tok)
	return tok.AccessToken, err
}

// setPlan moves org to plan, as an operator does (suite admin set-plan).
func setPlan(binary, dbURL, dataDir, org, plan string) error {
	admin := exec.Command(binary, "admin", "set-plan", org, plan)
	admin.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "SUITE_DATA_DIR="+dataDir)
	if out, err := admin.CombinedOutput(); err != nil {
		return fmt.Errorf("suite admin set-plan: %v: %s", err, out)
	}
	return nil
}

func setupOrg(s *suite, binary, dbURL, dataDir string) (benchOrg, error) {
	email := fmt.Sprintf("bench-%d@example.com", time.Now().UnixNano())
	if err := call(s.base+"/identity/v1/users", "", map[string]string{"email": email, "password": benchPassword, "name": "Bench"}, nil); err != nil {
		return benchOrg{}, err
	}
	token, err := signIn(s.base, email)
	if err != nil {
		return benchOrg{}, err
	}
	var o struct{ ID, Status string }
	if err := call(s.base+"/crm/organization", token, map[string]string{"name": "Bench"}, &o); err != nil {
		return benchOrg{}, err
	}
	for o.Status != "active" {
		time.Sleep(100 * time.Millisecond)
		if err := getJSON(s.base+"/crm/organization/"+o.ID, token, &o); err != nil {
			return benchOrg{}, err
		}
	}
	if err := setPlan(binary, dbURL, dataDir, o.ID, "enterprise"); err != nil {
		return benchOrg{}, err
	}
	var k struct{ Key string }
	if err := call(s.base+"/crm/organization/"+o.ID+"/apikeys", token, map[string]string{"name": "bench", "service": "crm"}, &k); err != nil {
		return benchOrg{}, err
	}
	return benchOrg{tenant: tenant{org: o.ID, key: k.Key}, token: token, email: email}, nil
}

// mailboxOf is the organization's e-mail address, read through the API.
func mailboxOf(s *suite, org, token string) (string, error) {
	req, _ := http.NewRequest("GET", s.base+"/helpdesk/channels/email", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-workspace-id", org)
	var ch struct{ Address string }
	err := do(req, &ch)
	return ch.Address, err
}

func call(url, token string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(req, out)
}

// sendJSON sends a JSON body to url on client with the headers (name,
// value, …), drops the answer, and gives its status.
func sendJSON(client *http.Client, method, url, body string, headers ...string) (int, error) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// put sends body to url with PUT, with the token.
func put(url, token string, body any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return do(req, nil)
}

func getJSON(url, token string, out any) error {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return do(req, out)
}

func do(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// seedContacts inserts n contacts for org straight into the database (the
// list benchmark needs a realistic table, not an API write test).
func seedContacts(ctx context.Context, db *sql.DB, org string, n int) error {
	_, err := db.ExecContext(ctx, `INSERT INTO contacts (id, org_id, name, email, phone, company, designation, type, notes, created_by, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 'Seed ' || g, 'seed' || g || '@example.com', '+1 415 555 0100', 'Seed Co', 'Buyer', 'person', '', 'bench',
		       now() - (g || ' seconds')::interval, now()
		FROM generate_series(1, $2) AS g`, org, n)
	if err == nil {
		_, err = db.ExecContext(ctx, "ANALYZE contacts")
	}
	return err
}
