package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/business-suite/suite/cmd/internal/harness"
	"github.com/business-suite/suite/worker/ports"
)

// suite is the suite under test: `suite dev`, or production's processes
// (-topology split).
type suite struct {
	procs []*suiteProc // in the order they started
	base  string
	pprof string // the API process's SUITE_PPROF_ADDR, with -profile
	smtp  string
}

// suiteProc is one process of the suite under test.
type suiteProc struct {
	role    string // its command: dev, temporal, worker or api
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{} // closed once it has exited
	waitErr error         // how it exited, once done is closed
}

// exited is nil while p runs, and once it has gone, how it ended.
func (p *suiteProc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("suite %s exited (%v); its log ends:\n%s", p.role, p.waitErr, harness.LogTail(p.log.Name(), 20))
	default:
		return nil
	}
}

// The topologies the bench starts (-topology).
const (
	// topologyDev is `suite dev`: the API, the worker and an embedded
	// Temporal server on SQLite in one process — what `make run` starts
	// and the README's table measures.
	topologyDev = "dev"
	// topologySplit is production's processes, one of each: `suite
	// temporal` (on its SQLite file), `suite worker` and `suite api`
	// (deploy/README).
	topologySplit = "split"
)

// describeTopology names the processes of topology for the table.
func describeTopology(topology string) string {
	if topology == topologySplit {
		return "suite api, suite worker and suite temporal"
	}
	return "suite dev"
}

// accessLog is the access-log policy the suite runs with: `suite api`'s
// default (every error and slow request, one in ten of the others), not
// `suite dev`'s line for every request, which is a developer's view at a
// terminal. The loads measure the request path as production serves it:
// a line for every GET was 0.019 ms of the suite's CPU, a seventh of a
// list page's (docs/decisions.md, "A list page's empty custom fields, the
// bench's access log, and a floor for the GET").
const accessLog = "sample:10"

// freeAddr is an address on a free port of 127.0.0.1 for the suite under
// test (see ports.Addr for why not port 0).
func freeAddr() (string, error) { return ports.Addr("127.0.0.1") }

// startSuite starts cfg.topology's processes on the database dbURL with
// the data directory dataDir, and waits until the API is ready.
func startSuite(cfg config, dbURL, dataDir string) (*suite, error) {
	var httpAddr, temporalAddr, smtpAddr, pprofAddr string
	for _, addr := range []*string{&httpAddr, &temporalAddr, &smtpAddr} {
		var err error
		if *addr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	if cfg.profileDir != "" {
		var err error
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	s := &suite{base: "http://" + httpAddr, pprof: pprofAddr, smtp: smtpAddr}
	// What the API process is given, in either topology.
	api := []string{
		"DATABASE_URL=" + dbURL,
		"SUITE_DATA_DIR=" + dataDir,
		"SUITE_HTTP_ADDR=" + httpAddr,
		"TEMPORAL_ADDRESS=" + temporalAddr,
		"SUITE_TEMPORAL_UI_ADDR=",
		"SUITE_DEMO=false",
		// The load runs send the intake with one crm_ key far above its
		// default per-key limit (6,000 a minute): the bench measures the
		// pipeline, not the limiter, as an integration configured for its
		// volume would see it.
		"SUITE_WEBHOOK_KEY_RATE=100000000",
		// The same for the SMTP listener's per-client limit: every
		// message comes from 127.0.0.1, as from one relaying provider.
		"SUITE_SMTP_ADDR=" + smtpAddr,
		"SUITE_SMTP_CLIENT_RATE=100000000",
		"SUITE_PPROF_ADDR=" + pprofAddr,
		"SUITE_ACCESS_LOG=" + accessLog,
	}
	var err error
	if cfg.topology == topologySplit {
		err = s.startSplit(cfg.binary, dbURL, dataDir, temporalAddr, api)
	} else {
		err = s.start(cfg.binary, dataDir, "dev", api...)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	if err := s.awaitReady(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// startSplit starts production's processes: `suite temporal` on
// temporalAddr, then (once the schema is migrated, as a deployment does
// first) `suite worker` and `suite api`, which api's environment
// configures. They share what `suite dev` settles alone: the identity
// service's address and token (the API serves it, the worker registers
// organizations with it), the mail domain, and webhooks to this machine
// (the webhook rows' receivers).
func (s *suite) startSplit(binary, dbURL, dataDir, temporalAddr string, api []string) error {
	if err := s.start(binary, dataDir, "temporal", "SUITE_DATA_DIR="+filepath.Join(dataDir, "temporal"),
		"TEMPORAL_ADDRESS="+temporalAddr, "SUITE_TEMPORAL_UI_ADDR="); err != nil {
		return err
	}
	if err := harness.AwaitListening(context.Background(), temporalAddr, 2*time.Minute, s.exited); err != nil {
		return err
	}
	migrate := exec.Command(binary, "migrate")
	migrate.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "SUITE_DATA_DIR="+dataDir)
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("suite migrate: %v: %s", err, out)
	}
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	healthAddr, err := freeAddr()
	if err != nil {
		return err
	}
	shared := []string{
		"IDENTITY_URL=" + s.base + "/identity",
		"IDENTITY_SERVICE_TOKEN=" + hex.EncodeToString(token),
		"SUITE_MAIL_DOMAIN=suite.localhost",
		"SUITE_WEBHOOK_ALLOW_HOSTS=127.0.0.1,::1",
	}
	if err := s.start(binary, dataDir, "worker", append([]string{"DATABASE_URL=" + dbURL, "SUITE_DATA_DIR=" + dataDir,
		"TEMPORAL_ADDRESS=" + temporalAddr, "SUITE_WORKER_HEALTH_ADDR=" + healthAddr}, shared...)...); err != nil {
		return err
	}
	return s.start(binary, dataDir, "api", append(api, shared...)...)
}

// start starts `binary role` with env added to the bench's own, its
// output in dataDir/suite-<role>.log.
func (s *suite) start(binary, dataDir, role string, env ...string) error {
	logFile, err := os.Create(filepath.Join(dataDir, "suite-"+role+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, role)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start suite %s: %w", role, err)
	}
	p := &suiteProc{role: role, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
	return nil
}

// exited is the first of the suite's processes that has gone, nil while
// all of them run.
func (s *suite) exited() error {
	for _, p := range s.procs {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

// awaitReady waits until the API answers /readyz with 200: its database,
// Temporal and a worker polling; or until one of its processes exits.
func (s *suite) awaitReady() error {
	_, err := harness.AwaitReady(context.Background(), http.DefaultClient, s.base+"/readyz", 2*time.Minute, s.exited)
	if errors.Is(err, harness.ErrNotReady) {
		var logs []string
		for _, p := range s.procs {
			logs = append(logs, p.log.Name())
		}
		return fmt.Errorf("the suite %w (logs: %s)", err, strings.Join(logs, ", "))
	}
	if err != nil {
		return fmt.Errorf("the suite did not become ready: %w", err) // exited: its log is quoted
	}
	return nil
}

// processes are the suite's process ids, whose CPU and memory the bench
// reads.
func (s *suite) processes() processes {
	pids := make(processes, len(s.procs))
	for i, p := range s.procs {
		pids[i] = p.cmd.Process.Pid
	}
	return pids
}

// stop interrupts the processes, the last started first (the API before
// the worker, the worker before Temporal), each given 30 s to finish.
func (s *suite) stop() {
	for _, p := range slices.Backward(s.procs) {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		_ = p.log.Close()
	}
}

// peakMemory is each process's peak resident memory over the run.
func (s *suite) peakMemory() (string, error) {
	var parts []string
	for _, p := range s.procs {
		mib, err := harness.PeakRSS(p.cmd.Process.Pid)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("suite %s %d MiB", p.role, mib))
	}
	return strings.Join(parts, ", "), nil
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

// processes are the ids of the suite's processes: the bench's CPU and
// memory figures are their sums.
type processes []int

// cpu is the user and system CPU time the processes have used.
func (ps processes) cpu() (time.Duration, error) { return sumOf(ps, harness.ProcessCPU) }

// residentMiB is the processes' resident memory now.
func (ps processes) residentMiB() (int, error) { return sumOf(ps, harness.ResidentMiB) }

// peakMiB is the sum of the processes' peaks of resident memory (which
// need not have come at once).
func (ps processes) peakMiB() (int, error) { return sumOf(ps, harness.PeakRSS) }

// sumOf is the sum of what read gives for each of the processes.
func sumOf[T int | time.Duration](ps processes, read func(pid int) (T, error)) (T, error) {
	var sum T
	for _, pid := range ps {
		v, err := read(pid)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}
