package models

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
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
	dialect := database.DialectFor(db)
	fsys, err := fs.Sub(migrationFS, "migrations/"+string(dialect))
	if err != nil {
		return nil, err
	}
	// Versions are reserved by issue and may land out of order (10 after
	// 12): a database that has a later version still gets an earlier one
	// that is new to it. Migrations are written to be independent of each
	// other's order for that reason.
	opts := []goose.ProviderOption{goose.WithGoMigrations(goMigrations(dialect)...), goose.WithAllowOutofOrder(true)}
	gooseDialect := goose.DialectSQLite3
	if dialect == database.Postgres {
		gooseDialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(gooseDialect, sqlDB, fsys, opts...)
}

// SchemaDigest identifies the schema Migrate gives an empty database of
// dialect d: a hash of that dialect's migration files and of the versions
// of the Go migrations. Those change data, never the schema, and an empty
// database has no data for them to change, so the files decide it. Test
// databases are copies of one migrated database per digest (dbtest).
func SchemaDigest(d database.Dialect) (string, error) {
	h := sha256.New()
	dir := "migrations/" + string(d)
	err := fs.WalkDir(migrationFS, dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		body, err := migrationFS.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(body))
		h.Write(body)
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, m := range goMigrations(d) {
		fmt.Fprintf(h, "go %d\n", m.Version)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goMigrations are the steps SQL cannot express, numbered among the SQL
// files (no SQL file of either dialect may take their versions).
func goMigrations(d database.Dialect) []*goose.Migration {
	return []*goose.Migration{
		// Version 5 added kb_articles.body_text empty: the articles' plain text.
		goose.NewGoMigration(6, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return fillColumn(ctx, tx, d, "kb_articles", "body", "body_text", MarkdownText)
		}}, nil),
		// Version 35 added contacts.phone_e164 empty: the phones, normalized.
		goose.NewGoMigration(36, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return fillColumn(ctx, tx, d, "contacts", "phone", "phone_e164", NormalizePhone)
		}}, nil),
	}
}

// fillColumn sets column to of every row of table to derive of its column
// from (a column a SQL migration added empty, whose value only Go can
// derive), in batches by id; rows whose value derives to "" are left.
func fillColumn(ctx context.Context, tx *sql.Tx, d database.Dialect, table, from, to string, derive func(string) string) error {
	p1, p2 := "?", "?"
	if d == database.Postgres {
		p1, p2 = "$1", "$2"
	}
	last := ""
	for {
		rows, err := tx.QueryContext(ctx, "SELECT id, "+from+" FROM "+table+" WHERE CAST(id AS text) > "+p1+" ORDER BY CAST(id AS text) LIMIT 200", last)
		if err != nil {
			return err
		}
		type row struct{ id, value string }
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.value); err != nil {
				_ = rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			if v := derive(r.value); v != "" {
				if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET "+to+" = "+p1+" WHERE id = "+p2, v, r.id); err != nil {
					return err
				}
			}
		}
		last = batch[len(batch)-1].id
	}
}
