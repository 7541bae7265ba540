package main

import (
	"fmt"
)

// fieldsLoad is the contact list filtered by a custom field in a
// workspace of a million contacts (issue 47), beside its SELECT sent
// prepared.
const fieldsLoad = "GET /crm/contacts?fields.plan=gold (1M in org) beside pgbench -M prepared"

// fieldContacts is how many contacts the row's workspace holds; a tenth
// are on the gold plan.
const fieldContacts = 1_000_000

// filteredContacts is the list page's statements as the API sends them
// for ?fields.plan=gold: the filter's definitions (models.FieldFilters),
// then the page (a containment the GIN index may serve, or a walk of the
// list's index checking it).
var filteredContacts = workload{
	wrkScript: func(b *bencher) string {
		return fmt.Sprintf(`wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer %s"
wrk.path = "/crm/contacts?limit=25&fields.plan=gold"
`, b.key)
	},
	pgbenchMode: "prepared",
	pgLatency:   true,
	pgScript: func(*bencher) string {
		return `SELECT * FROM custom_fields WHERE org_id = :org AND object = 'contact' ORDER BY created_at, id;
SELECT * FROM contacts WHERE org_id = :org AND fields @> CAST('{"plan":"gold"}' AS jsonb) ORDER BY created_at DESC, id DESC LIMIT 26;
`
	},
}

// planField gives b's workspace the contact field plan (free or gold).
func (b *bencher) planField() error {
	err := call(b.base+"/crm/organization/"+b.org+"/fields", b.token,
		map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "select", "options": []string{"free", "gold"}}, nil)
	if err != nil {
		return fmt.Errorf("the plan field: %w", err)
	}
	return nil
}

// fieldFilterRow makes a workspace with a plan field and a million
// contacts (straight in the database: the API would take an hour) and
// runs the row. The contacts stay (the bench's database is dropped at the
// end; the delete of a million took longer than the row).
func (r *benchRun) fieldFilterRow(name string) error {
	ws, err := r.workspace()
	if err != nil {
		return err
	}
	if err := ws.planField(); err != nil {
		return err
	}
	_, err = ws.db.ExecContext(r.ctx, `INSERT INTO contacts (id, org_id, name, email, type, created_by, fields, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 'Contact ' || i, 'c' || i || '@example.com', 'person', 'bench',
		  jsonb_build_object('plan', CASE WHEN i % 10 = 0 THEN 'gold' ELSE 'free' END),
		  now() - i * interval '1 second', now()
		FROM generate_series(1, $2::int) i`, ws.org, fieldContacts)
	if err == nil {
		_, err = ws.db.ExecContext(r.ctx, `ANALYZE contacts`)
	}
	if err != nil {
		return fmt.Errorf("a million contacts: %w", err)
	}
	// From a quiet suite, as the automation row: behind the queued work
	// of the rows before, the list measured 0.16 of pgbench, alone 0.44.
	if err := r.b.quiet(name); err != nil {
		return err
	}
	rw, err := ws.pair(name, 16, filteredContacts)
	r.b.rounds = ws.rounds
	return r.add(rw, err)
}
