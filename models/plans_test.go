package models_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
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
	db := dbtest.Open(t, database.Postgres)
	cases := []struct {
		name, index string
		query       func(tx *gorm.DB) *gorm.DB
	}{
		{"a lead by e-mail", "leads_org_email", func(tx *gorm.DB) *gorm.DB {
			var lead models.Lead
			return tx.Select("id").Scopes(models.LeadWithEmail(models.NewID(), "a@example.com")).Take(&lead)
		}},
		{"the outbox's due starts", "workflow_starts_turns", func(tx *gorm.DB) *gorm.DB {
			return models.DueStarts(tx, models.Now(), 100)
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
