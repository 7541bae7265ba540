package models_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// TestPartialIndexesServeGenericPlans checks that the hot lookups on a
// partial index say so in their statement. The drivers prepare statements,
// and after a few executions PostgreSQL may run a prepared statement with
// its generic plan, built without the parameters' values: such a plan can
// use a partial index only when the statement itself implies the index's
// predicate. Written with the state as a parameter, or without saying that
// the e-mail is not empty, these lookups scan the table under that plan.
func TestPartialIndexesServeGenericPlans(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL is not available: the plan check needs it")
	}
	db := dbtest.Open(t, models.Postgres)
	cases := []struct {
		name, index string
		query       func(tx *gorm.DB) *gorm.DB
	}{
		{"a lead by e-mail", "leads_org_email", func(tx *gorm.DB) *gorm.DB {
			var lead models.Lead
			return tx.Select("id").Scopes(models.LeadWithEmail(models.NewID(), "a@example.com")).Take(&lead)
		}},
		{"the outbox's due starts", "workflow_starts_due", func(tx *gorm.DB) *gorm.DB {
			var due []models.WorkflowStart
			return tx.Scopes(models.PendingStarts).Where("next_attempt_at <= ?", models.Now()).
				Order("next_attempt_at").Order("id").Limit(100).Find(&due)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stmt := tc.query(db.Session(&gorm.Session{DryRun: true})).Statement
			args := arguments(t, stmt.Vars)
			var plan []string
			err := db.Transaction(func(tx *gorm.DB) error {
				// A few rows make a sequential scan cheapest whatever the plan;
				// ask for what the plan would do on a large table.
				for _, q := range []string{
					"SET LOCAL enable_seqscan = off",
					"SET LOCAL plan_cache_mode = force_generic_plan",
					"PREPARE generic_lookup AS " + stmt.SQL.String(),
				} {
					if err := tx.Exec(q).Error; err != nil {
						return err
					}
				}
				defer tx.Exec("DEALLOCATE generic_lookup")
				return tx.Raw("EXPLAIN EXECUTE generic_lookup" + args).Scan(&plan).Error
			})
			if err != nil {
				t.Fatalf("explain %s: %v", stmt.SQL.String(), err)
			}
			if text := strings.Join(plan, "\n"); !strings.Contains(text, tc.index) {
				t.Fatalf("the generic plan of\n  %s\ndoes not use %s:\n%s", stmt.SQL.String(), tc.index, text)
			}
		})
	}
}

// arguments writes a statement's variables as EXECUTE's argument list:
// "(literal, literal, …)".
func arguments(t *testing.T, vars []any) string {
	args := make([]string, len(vars))
	for i, v := range vars {
		args[i] = literal(t, v)
	}
	return "(" + strings.Join(args, ", ") + ")"
}

// literal writes v as an SQL literal for EXECUTE's arguments.
func literal(t *testing.T, v any) string {
	switch v := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format(time.RFC3339Nano) + "'"
	case int, int64:
		return fmt.Sprint(v)
	}
	t.Fatalf("no literal for %T", v)
	return ""
}

// TestListPagesReuseTheirPlan checks that a list page's statement, run
// again and again as pgx runs it (prepared once per connection), is planned
// once and not on every run. With its LIMIT a parameter, the generic plan
// (made without the parameters' values) expects a tenth of a large
// organization's rows rather than a page, looks costlier than planning each
// run for the page, and PostgreSQL never switches to it: each request paid
// for planning. Written as a number, the LIMIT leaves the generic plan as
// cheap as the custom ones, and PostgreSQL keeps it after five runs.
func TestListPagesReuseTheirPlan(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL is not available: the plan check needs it")
	}
	db := dbtest.Open(t, models.Postgres)
	org := newOrg(t, db, models.PlanEnterprise, "UTC")
	if err := db.Exec(`INSERT INTO contacts (id, org_id, name, type, created_at, updated_at)
		SELECT gen_random_uuid(), ?, 'Contact ' || g, 'person', now() - g * interval '1 second', now()
		FROM generate_series(1, 5000) AS g`, org.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("ANALYZE contacts").Error; err != nil {
		t.Fatal(err)
	}
	var page []models.Contact
	stmt := db.Session(&gorm.Session{DryRun: true}).Model(&models.Contact{}).Where("org_id = ?", org.ID).
		Order("created_at DESC").Order("id DESC").Limit(26).Find(&page).Statement
	args := arguments(t, stmt.Vars)
	var generic int
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("PREPARE list_page AS " + stmt.SQL.String()).Error; err != nil {
			return err
		}
		defer tx.Exec("DEALLOCATE list_page")
		for range 10 {
			if err := tx.Exec("EXECUTE list_page" + args).Error; err != nil {
				return err
			}
		}
		return tx.Raw("SELECT generic_plans FROM pg_prepared_statements WHERE name = 'list_page'").Scan(&generic).Error
	})
	if err != nil {
		t.Fatalf("run %s: %v", stmt.SQL.String(), err)
	}
	if generic == 0 {
		t.Fatalf("PostgreSQL planned\n  %s\non each of 10 runs and never used its generic plan", stmt.SQL.String())
	}
}

// TestLimitsAreNumbers checks how LIMIT and OFFSET are written on
// PostgreSQL (literalLimit): as GORM writes them, with numbers in place of
// the parameters.
func TestLimitsAreNumbers(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL is not available")
	}
	db := dbtest.Open(t, models.Postgres)
	cases := []struct {
		query func(tx *gorm.DB) *gorm.DB
		tail  string
	}{
		{func(tx *gorm.DB) *gorm.DB { return tx.Limit(26) }, ` LIMIT 26`},
		{func(tx *gorm.DB) *gorm.DB { return tx.Limit(10).Offset(20) }, ` LIMIT 10 OFFSET 20`},
		{func(tx *gorm.DB) *gorm.DB { return tx.Offset(5) }, `"contacts" OFFSET 5`},
		{func(tx *gorm.DB) *gorm.DB { return tx.Limit(0) }, ` LIMIT 0`},
		{func(tx *gorm.DB) *gorm.DB { return tx.Limit(-1) }, `"contacts"`},
	}
	for _, tc := range cases {
		var rows []models.Contact
		stmt := tc.query(db.Session(&gorm.Session{DryRun: true}).Model(&models.Contact{})).Find(&rows).Statement
		if sql := strings.TrimSpace(stmt.SQL.String()); !strings.HasSuffix(sql, tc.tail) || len(stmt.Vars) != 0 {
			t.Errorf("%s (arguments %v): want it to end in %q with no arguments", sql, stmt.Vars, tc.tail)
		}
	}
}
