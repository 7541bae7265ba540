package models_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

func TestMigrationsFromEmptyAreIdempotentAndMatchModels(t *testing.T) {
	for _, d := range dbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := dbtest.OpenEmpty(t, d)

			first, err := models.Migrate(ctx, db)
			if err != nil {
				t.Fatalf("first migrate: %v", err)
			}
			if len(first.Applied) == 0 || first.Current != first.Applied[len(first.Applied)-1] {
				t.Fatalf("first migrate applied %v, current %d", first.Applied, first.Current)
			}
			again, err := models.Migrate(ctx, db)
			if err != nil {
				t.Fatalf("second migrate: %v", err)
			}
			if len(again.Applied) != 0 || again.Current != first.Current {
				t.Fatalf("re-apply was not a no-op: %+v", again)
			}
			if pending, err := models.PendingMigrations(ctx, db); err != nil || pending {
				t.Fatalf("pending after migrate: %v %v", pending, err)
			}
			assertSchemaMatchesModels(t, db)
		})
	}
}

// Several API replicas may run migrations at once against PostgreSQL; the
// advisory lock serialises them. (SQLite is the single-process embedded
// default, so it has no such case.)
func TestConcurrentMigrateIsSerialised(t *testing.T) {
	for _, d := range dbtest.Dialects(t) {
		if d != database.Postgres {
			continue
		}
		t.Run(string(d), func(t *testing.T) {
			dsn := dbtest.DSN(t, d)
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := database.Open(context.Background(), dsn, database.Options{MaxOpenConns: 2})
					if err != nil {
						errs <- err
						return
					}
					defer func() { _ = database.Close(db) }()
					_, err = models.Migrate(context.Background(), db)
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("concurrent migrate: %v", err)
				}
			}
		})
	}
}

// dialectColumns are columns one dialect has beyond the entity: generated
// search columns the application never writes.
var dialectColumns = map[string]map[string]bool{"kb_articles": {"search_vector": true}}

// assertSchemaMatchesModels checks that every entity has its table and that
// the table's columns are exactly the entity's fields: a migration that
// forgets a column, or a field without a migration, fails here.
func assertSchemaMatchesModels(t *testing.T, db *gorm.DB) {
	t.Helper()
	cache := &sync.Map{}
	for _, m := range models.All() {
		s, err := schema.Parse(m, cache, db.NamingStrategy)
		if err != nil {
			t.Fatalf("parse %T: %v", m, err)
		}
		if !db.Migrator().HasTable(s.Table) {
			t.Errorf("table %s for %T is missing", s.Table, m)
			continue
		}
		var want []string
		for _, f := range s.Fields {
			if f.DBName != "" {
				want = append(want, f.DBName)
			}
		}
		cols, err := db.Migrator().ColumnTypes(s.Table)
		if err != nil {
			t.Fatalf("columns of %s: %v", s.Table, err)
		}
		var got []string
		for _, c := range cols {
			if !dialectColumns[s.Table][c.Name()] {
				got = append(got, c.Name())
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			t.Errorf("table %s columns\n got  %v\n want %v (fields of %T)", s.Table, got, want, m)
		}
	}
}
