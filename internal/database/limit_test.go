package database_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

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
	db := dbtest.Open(t, database.Postgres)
	orgID := seedOrg(t, db)
	if err := db.Exec(`INSERT INTO contacts (id, org_id, name, type, created_at, updated_at)
		SELECT gen_random_uuid(), ?, 'Contact ' || g, 'person', now() - g * interval '1 second', now()
		FROM generate_series(1, 5000) AS g`, orgID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("ANALYZE contacts").Error; err != nil {
		t.Fatal(err)
	}
	var page []models.Contact
	q := db.Session(&gorm.Session{DryRun: true}).Model(&models.Contact{}).Where("org_id = ?", orgID).
		Order("created_at DESC").Order("id DESC")
	stmt := database.PageLimit(q, 26).Find(&page).Statement
	if len(stmt.Vars) != 1 { // the organization; the LIMIT is a number
		t.Fatalf("%s has the arguments %v, want the organization's id only", stmt.SQL.String(), stmt.Vars)
	}
	args := "('" + orgID + "')"
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

// TestPageLimitIsANumber checks how a PageLimit is written on both
// dialects — a number, replacing any LIMIT before it — and that every
// other LIMIT stays GORM's parameter on PostgreSQL (the SQLite dialect
// writes every LIMIT as a number).
func TestPageLimitIsANumber(t *testing.T) {
	for _, dialect := range dbtest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			db := dbtest.Open(t, dialect)
			type limitCase struct {
				query func(tx *gorm.DB) *gorm.DB
				tail  string
				vars  int
			}
			cases := []limitCase{
				{func(tx *gorm.DB) *gorm.DB { return database.PageLimit(tx, 26) }, ` LIMIT 26`, 0},
				{func(tx *gorm.DB) *gorm.DB { return database.PageLimit(tx.Limit(5), 26) }, ` LIMIT 26`, 0},
				{func(tx *gorm.DB) *gorm.DB { return database.PageLimit(tx, 0) }, ` LIMIT 0`, 0},
			}
			if dialect == database.Postgres {
				cases = append(cases, limitCase{func(tx *gorm.DB) *gorm.DB { return tx.Limit(26) }, ` LIMIT $1`, 1})
			}
			for _, tc := range cases {
				var rows []models.Contact
				stmt := tc.query(db.Session(&gorm.Session{DryRun: true}).Model(&models.Contact{})).Find(&rows).Statement
				sql := strings.TrimSpace(stmt.SQL.String())
				if !strings.Contains(sql, tc.tail) || len(stmt.Vars) != tc.vars {
					t.Errorf("%s (arguments %v): want %q in it with %d arguments", sql, stmt.Vars, tc.tail, tc.vars)
				}
			}
		})
	}
}

// InList pads a list to the next power of two with its last value, so the
// statements of lists of 1 to 512 values have ten shapes.
func TestInListHasFewShapes(t *testing.T) {
	shapes := map[int]bool{}
	for n := 1; n <= 512; n++ {
		values := make([]int, n)
		for i := range values {
			values[i] = i
		}
		padded := database.InList(values)
		shapes[len(padded)] = true
		if len(padded) < n || len(padded)&(len(padded)-1) != 0 || len(padded) >= 2*n {
			t.Fatalf("%d values padded to %d, want the next power of two", n, len(padded))
		}
		for i, v := range padded {
			if want := min(i, n-1); v != want {
				t.Fatalf("%d values: padded[%d] = %d, want %d", n, i, v, want)
			}
		}
	}
	if len(shapes) != 10 {
		t.Fatalf("%d shapes for lists of 1 to 512, want 10", len(shapes))
	}
	if got := database.InList([]string(nil)); got != nil {
		t.Fatalf("no values: %q", got)
	}
}
