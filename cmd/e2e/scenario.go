package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// scenario is the walkthrough through both APIs, then the faults.
func (t *e2e) scenario(ctx context.Context) error {
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"sign up, sign in and create an organization", t.account},
		{"web-form intakes", t.intakes},
		{"a helpdesk ticket solved and auto-closed", t.ticket},
		{"an API key revoked through one API", t.revocation},
		{"one Idempotency-Key on both APIs", t.idempotency},
		{"a sign-in limit counted across both APIs", t.rateLimit},
		{"billing (stripe-mock) and the AI interface across both APIs", t.billingAndAI},
	}
	faults := map[string]struct {
		name string
		run  func(context.Context) error
	}{
		"api-kill":           {"fault: an API process killed mid-request", t.faultAPIKill},
		"worker-kill":        {"fault: a worker killed during intakes", t.faultWorkerKill},
		"temporal-down":      {"fault: the Temporal server stopped during intakes", t.faultTemporalDown},
		"temporal-node-kill": {"fault: a Temporal node killed during intakes", t.faultTemporalNodeKill},
		"capacity":           {"capacity: CPU per intake in each process, leads/s with 2 workers and with 1", t.measureCapacity},
		"backlog":            {"backlog: every process's memory with a backlog of intakes", t.measureBacklog},
		"pg-restart":         {"fault: PostgreSQL restarted during intakes and reads", t.faultPostgresRestart},
		"sla-workers":        {"fault: every worker killed across an SLA due time, an automation's delay, a 100,000-row import and a 5,000-ticket merge", t.faultSLAWorkersDown},
	}
	walkthrough := len(steps)
	for _, name := range strings.Split(t.o.faults, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		f, ok := faults[name]
		if !ok {
			return fmt.Errorf("unknown fault %q (known: api-kill, worker-kill, temporal-down, temporal-node-kill, sla-workers, pg-restart, capacity, backlog)", name)
		}
		steps = append(steps, f)
	}
	var failed []error
	for i, s := range steps {
		fmt.Println()
		t.step("== %s", s.name)
		err := s.run(ctx)
		if err == nil {
			continue
		}
		err = fmt.Errorf("%s: %w", s.name, err)
		// The walkthrough stops at its first failure; a fault that fails
		// leaves the topology running (each restores what it broke), so
		// the next faults still run and report their figures.
		if i < walkthrough || ctx.Err() != nil || !t.intact() {
			return errors.Join(append(failed, err)...)
		}
		fmt.Printf("  FAILED: %v\n", err)
		failed = append(failed, err)
	}
	return errors.Join(failed...)
}

// intact tells whether every process of the topology runs.
func (t *e2e) intact() bool {
	for _, p := range append([]*proc{t.apis[0], t.apis[1], t.workers[0], t.workers[1]}, t.temporals...) {
		if !p.alive() {
			return false
		}
	}
	return true
}

// base is the URL of API process i (0 or 1).
func (t *e2e) base(i int) string { return t.apiBase[i] }

func (t *e2e) bearer() []string { return []string{"Authorization", "Bearer " + t.userToken} }

// account signs up and signs in, creates an organization and waits for its
// registration workflow, and creates a crm_ and an hd_ key, alternating
// between the APIs.
func (t *e2e) account(ctx context.Context) error {
	email := fmt.Sprintf("owner-%d@example.com", time.Now().UnixNano())
	const password = "correct horse battery"
	a := t.next()
	if err := expect(ctx, t.http, http.StatusCreated, nil, "POST", t.base(a)+"/identity/v1/users",
		map[string]string{"email": email, "password": password, "name": "E2E Owner"}); err != nil {
		return err
	}
	b := t.next()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := expect(ctx, t.http, http.StatusOK, &tok, "POST", t.base(b)+"/identity/v1/token",
		map[string]string{"grant_type": "password", "email": email, "password": password}); err != nil {
		return err
	}
	t.userToken = tok.AccessToken
	t.step("signed up on api%d, signed in on api%d", a+1, b+1)

	var org struct{ ID, Status string }
	c := t.next()
	began := time.Now()
	if err := expect(ctx, t.http, http.StatusCreated, &org, "POST", t.base(c)+"/crm/organization",
		map[string]string{"name": "E2E"}, t.bearer()...); err != nil {
		return err
	}
	t.orgID = org.ID
	for org.Status != "active" {
		if time.Since(began) > time.Minute {
			return fmt.Errorf("organization %s still %q after a minute (the registration workflow did not complete)", org.ID, org.Status)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
		if err := expect(ctx, t.http, http.StatusOK, &org, "GET", t.base(t.next())+"/crm/organization/"+org.ID, nil, t.bearer()...); err != nil {
			return err
		}
	}
	t.step("organization %s created on api%d, active after %s", org.ID, c+1, time.Since(began).Round(time.Millisecond))

	// The operator's way to lift plan limits (no Stripe here).
	cmd := exec.CommandContext(ctx, t.o.binary, "admin", "set-plan", t.orgID, "enterprise")
	cmd.Env = append(os.Environ(), t.suiteEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("suite admin set-plan: %v: %s", err, out)
	}

	var key struct{ ID, Key string }
	d := t.next()
	if err := expect(ctx, t.http, http.StatusCreated, &key, "POST", t.base(d)+"/crm/organization/"+t.orgID+"/apikeys",
		map[string]string{"name": "e2e crm", "service": "crm"}, t.bearer()...); err != nil {
		return err
	}
	t.crmKey = key.Key
	e := t.next()
	if err := expect(ctx, t.http, http.StatusCreated, &key, "POST", t.base(e)+"/crm/organization/"+t.orgID+"/apikeys",
		map[string]string{"name": "e2e helpdesk", "service": "helpdesk"}, t.bearer()...); err != nil {
		return err
	}
	t.hdKey = key.Key
	t.step("crm_ key created on api%d, hd_ key on api%d", d+1, e+1)
	return nil
}

// intakes sends a few web-form intakes alternately and follows each to
// its lead through the other API.
func (t *e2e) intakes(ctx context.Context) error {
	const n = 10
	source := fmt.Sprintf("e2e-walk-%d", time.Now().Unix())
	ids := make([]string, 0, n)
	for i := range n {
		var out struct{ IntakeID string }
		if err := expect(ctx, t.http, http.StatusAccepted, &out, "POST", t.base(i%2)+"/crm/leads/webhook", intakeBody(source, i),
			"x-api-key", t.crmKey, "Idempotency-Key", fmt.Sprintf("%s-%d", source, i)); err != nil {
			return err
		}
		ids = append(ids, out.IntakeID)
	}
	began := time.Now()
	for i, id := range ids {
		for {
			var st struct {
				Status string
				LeadID string
			}
			// Read through the API that did not accept it.
			if err := expect(ctx, t.http, http.StatusOK, &st, "GET", t.base((i+1)%2)+"/crm/leads/intakes/"+id, nil,
				"Authorization", "Bearer "+t.crmKey); err != nil {
				return err
			}
			if st.LeadID != "" {
				break
			}
			if time.Since(began) > time.Minute {
				return fmt.Errorf("intake %s has no lead after a minute (status %q)", id, st.Status)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	c, err := t.countLeads(ctx, source)
	if err != nil {
		return err
	}
	if c.leads != n || c.emails != n {
		return fmt.Errorf("%d intakes made %d leads (%d distinct e-mails), want %d", n, c.leads, c.emails, n)
	}
	t.step("%d intakes accepted alternately, each a lead (read through the other API) within %s", n, time.Since(began).Round(time.Millisecond))
	return nil
}

// ticket creates a ticket, assigns and solves it through different APIs,
// and waits for the auto-close timer (SUITE_TICKET_AUTOCLOSE_AFTER).
func (t *e2e) ticket(ctx context.Context) error {
	hd := []string{"x-api-key", t.hdKey, "x-workspace-id", t.orgID}
	var tk struct{ ID, Status string }
	a := t.next()
	if err := expect(ctx, t.http, http.StatusCreated, &tk, "POST", t.base(a)+"/helpdesk/tickets",
		map[string]string{"subject": "Printer on fire", "email": "bob@example.com", "priority": "high", "channel": "email"}, hd...); err != nil {
		return err
	}
	var members struct {
		Data []struct{ ID, Role string }
	}
	if err := expect(ctx, t.http, http.StatusOK, &members, "GET", t.base(t.next())+"/crm/organization/"+t.orgID+"/members", nil, t.bearer()...); err != nil {
		return err
	}
	if len(members.Data) == 0 {
		return fmt.Errorf("the organization lists no member")
	}
	if err := expect(ctx, t.http, http.StatusOK, nil, "PUT", t.base(t.next())+"/helpdesk/tickets/"+tk.ID,
		map[string]string{"agentId": members.Data[0].ID}, hd...); err != nil {
		return err
	}
	if err := expect(ctx, t.http, http.StatusOK, &tk, "PUT", t.base(t.next())+"/helpdesk/tickets/"+tk.ID,
		map[string]string{"status": "solved"}, hd...); err != nil {
		return err
	}
	solved := time.Now()
	for tk.Status != "closed" {
		if time.Since(solved) > t.o.autoClose+time.Minute {
			return fmt.Errorf("ticket %s still %q %s after it was solved (auto-close after %s)", tk.ID, tk.Status, time.Since(solved).Round(time.Second), t.o.autoClose)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
		if err := expect(ctx, t.http, http.StatusOK, &tk, "GET", t.base(t.next())+"/helpdesk/tickets/"+tk.ID, nil, hd...); err != nil {
			return err
		}
	}
	t.step("ticket created on api%d, assigned and solved through both, closed by its timer %s after solving (auto-close after %s)",
		a+1, time.Since(solved).Round(100*time.Millisecond), t.o.autoClose)
	return nil
}

// revocation: a key revoked through one API is refused by the other
// within about a second.
func (t *e2e) revocation(ctx context.Context) error {
	var key struct{ ID, Key string }
	if err := expect(ctx, t.http, http.StatusCreated, &key, "POST", t.base(0)+"/crm/organization/"+t.orgID+"/apikeys",
		map[string]string{"name": "revoke me", "service": "crm"}, t.bearer()...); err != nil {
		return err
	}
	use := func(i int) (int, error) {
		r, err := request(ctx, t.http, "GET", t.base(i)+"/crm/contacts?limit=1", nil, "Authorization", "Bearer "+key.Key)
		if err != nil {
			return 0, err
		}
		return r.status, nil
	}
	// Both APIs have seen (and cached) the key as valid.
	for i := range 2 {
		if st, err := use(i); err != nil || st != http.StatusOK {
			return fmt.Errorf("the new key on api%d: %d %v", i+1, st, err)
		}
	}
	if err := expect(ctx, t.http, http.StatusNoContent, nil, "DELETE", t.base(0)+"/crm/organization/"+t.orgID+"/apikeys/"+key.ID, nil, t.bearer()...); err != nil {
		return err
	}
	revoked := time.Now()
	if st, err := use(0); err != nil || st != http.StatusUnauthorized {
		return fmt.Errorf("the revoking API still accepts the key: %d %v", st, err)
	}
	for {
		st, err := use(1)
		if err != nil {
			return err
		}
		if st == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > 3*time.Second {
			return fmt.Errorf("api2 still answers %d with a key revoked through api1 %s ago", st, time.Since(revoked).Round(time.Millisecond))
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	took := time.Since(revoked)
	t.figure("revocation: a key revoked through api1 is refused at once by api1 and by api2 after %s", took.Round(time.Millisecond))
	if took > 2*time.Second {
		return fmt.Errorf("api2 took %s to refuse a revoked key (want about a second)", took.Round(time.Millisecond))
	}
	return nil
}

// idempotency: the same Idempotency-Key to api1 then api2 creates one
// contact, and api2 replays api1's answer.
func (t *e2e) idempotency(ctx context.Context) error {
	email := fmt.Sprintf("ada-%d@engines.io", time.Now().UnixNano())
	key := "e2e-" + email
	body := map[string]string{"name": "Ada Lovelace", "email": email, "type": "person"}
	var first, second struct{ ID string }
	if err := expect(ctx, t.http, http.StatusCreated, &first, "POST", t.base(0)+"/crm/contacts", body,
		"Authorization", "Bearer "+t.crmKey, "Idempotency-Key", key); err != nil {
		return err
	}
	if err := expect(ctx, t.http, http.StatusCreated, &second, "POST", t.base(1)+"/crm/contacts", body,
		"Authorization", "Bearer "+t.crmKey, "Idempotency-Key", key); err != nil {
		return err
	}
	n, err := t.countContacts(ctx, email)
	if err != nil {
		return err
	}
	if first.ID != second.ID || n != 1 {
		return fmt.Errorf("one Idempotency-Key on api1 then api2: ids %s and %s, %d contacts in the database (want one)", first.ID, second.ID, n)
	}
	t.figure("idempotency: one key sent to api1 then api2 → one contact (api2 replayed api1's answer)")
	return nil
}

// rateLimit: wrong passwords for one account, alternating between the two
// APIs, are refused with 429 after the per-account limit (5 a minute) —
// not after 5 on each API — and so is the right password then.
func (t *e2e) rateLimit(ctx context.Context) error {
	email := fmt.Sprintf("locked-%d@example.com", time.Now().UnixNano())
	const password = "correct horse battery"
	if err := expect(ctx, t.http, http.StatusCreated, nil, "POST", t.base(0)+"/identity/v1/users",
		map[string]string{"email": email, "password": password, "name": "Locked Out"}); err != nil {
		return err
	}
	signIn := func(i int, password string) (int, error) {
		r, err := request(ctx, t.http, "POST", t.base(i)+"/identity/v1/token",
			map[string]string{"grant_type": "password", "email": email, "password": password})
		if err != nil {
			return 0, err
		}
		return r.status, nil
	}
	var statuses []string
	for attempt := range 6 {
		st, err := signIn(attempt%2, "wrong password")
		if err != nil {
			return err
		}
		statuses = append(statuses, fmt.Sprintf("api%d:%d", attempt%2+1, st))
	}
	st, err := signIn(1, password)
	if err != nil {
		return err
	}
	statuses = append(statuses, fmt.Sprintf("api2 (right password):%d", st))
	t.figure("rate limit: wrong passwords alternating between the APIs → %s", strings.Join(statuses, ", "))
	want := "api1:401, api2:401, api1:401, api2:401, api1:401, api2:429, api2 (right password):429"
	if got := strings.Join(statuses, ", "); got != want {
		return fmt.Errorf("the per-account sign-in limit across two APIs: got %s, want %s", got, want)
	}
	return nil
}

func intakeBody(source string, n int) map[string]any {
	return map[string]any{
		"name": fmt.Sprintf("Lead %d", n), "email": fmt.Sprintf("%s-%d@acme-%d.example", source, n, n%97),
		"phone": "+1 415 555 2671", "company": "Acme", "value": 12000, "source": source,
	}
}

type leadCount struct {
	leads, emails int // leads of the source, and their distinct e-mails
	processed     int // intakes of the source the workflow finished
	intakes       int
}

// countLeads counts in the database, not through the API.
func (t *e2e) countLeads(ctx context.Context, source string) (leadCount, error) {
	var c leadCount
	err := t.db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT lower(email)) FROM leads WHERE org_id = $1 AND source = $2`,
		t.orgID, source).Scan(&c.leads, &c.emails)
	if err != nil {
		return c, err
	}
	err = t.db.QueryRowContext(ctx, `SELECT count(*), count(processed_at) FROM lead_intakes WHERE org_id = $1 AND payload::jsonb->>'source' = $2`,
		t.orgID, source).Scan(&c.intakes, &c.processed)
	return c, err
}

func (t *e2e) countContacts(ctx context.Context, email string) (int, error) {
	var n int
	err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM contacts WHERE org_id = $1 AND email = $2`, t.orgID, email).Scan(&n)
	return n, err
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
