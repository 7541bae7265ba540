package models

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/gorm"
)

// Each dialect has its own ordered, forward-only migration files with the
// same version numbers; the schema test checks both against the entities.
//
//go:embed migrations
var migrationFS embed.FS

// MigrationResult summarises one Migrate call.
type MigrationResult struct {
	Applied []int64 // versions applied by this call (empty: already current)
	Current int64   // schema version after the call
}

// Migrate applies every pending migration for db's dialect. It is safe to
// run from several processes at once on PostgreSQL (a session advisory lock
// serialises them) and is a no-op when the schema is current.
func Migrate(ctx context.Context, db *gorm.DB) (MigrationResult, error) {
	provider, err := newMigrationProvider(db)
	if err != nil {
		return MigrationResult{}, err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return MigrationResult{}, fmt.Errorf("migrate: %w", err)
	}
	var res MigrationResult
	for _, r := range results {
		res.Applied = append(res.Applied, r.Source.Version)
	}
	res.Current, err = provider.GetDBVersion(ctx)
	return res, err
}

// PendingMigrations tells whether db's schema lags behind the code.
func PendingMigrations(ctx context.Context, db *gorm.DB) (bool, error) {
	provider, err := newMigrationProvider(db)
	if err != nil {
		return false, err
	}
	return provider.HasPending(ctx)
}

func newMigrationProvider(db *gorm.DB) (*goose.Provider, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	dialect := DialectFor(db)
	fsys, err := fs.Sub(migrationFS, "migrations/"+string(dialect))
	if err != nil {
		return nil, err
	}
	var opts []goose.ProviderOption
	gooseDialect := goose.DialectSQLite3
	if dialect == Postgres {
		gooseDialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(gooseDialect, sqlDB, fsys, opts...)
}
