package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// The migrated databases tests get are copies of a template migrated once:
//
//   - SQLite: once per test process, into a file whose bytes each test
//     writes to a file of its own;
//   - PostgreSQL: once per schema on the server, as the database
//     suite_template_<digest> (models.SchemaDigest), which CREATE DATABASE
//     … TEMPLATE copies. It stays for the next test run of the same schema;
//     a template of another schema is dropped when a new one is made.

const templatePrefix = "suite_template_"

var sqliteTemplate struct {
	once  sync.Once
	files map[string][]byte // the migrated database's files by suffix ("", "-wal")
	err   error
}

// sqliteCopy writes a copy of the migrated SQLite template into the test's
// temporary directory and returns its path.
func sqliteCopy(t testing.TB) string {
	t.Helper()
	sqliteTemplate.once.Do(func() { sqliteTemplate.files, sqliteTemplate.err = migrateSQLiteTemplate() })
	if sqliteTemplate.err != nil {
		t.Fatalf("migrate the SQLite template: %v", sqliteTemplate.err)
	}
	path := filepath.Join(t.TempDir(), "suite.db")
	for suffix, body := range sqliteTemplate.files {
		if err := os.WriteFile(path+suffix, body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// migrateSQLiteTemplate migrates a new SQLite file, closes it and returns
// its files' bytes (closing the last connection folds the write-ahead log
// into the file; any left is copied too).
func migrateSQLiteTemplate() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "suite-dbtest-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "suite.db")
	if err := migrateAt(path); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, suffix := range []string{"", "-wal"} {
		body, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[suffix] = body
	}
	return files, nil
}

// migrateAt opens the database at dsn, migrates it and closes it.
func migrateAt(dsn string) error {
	db, err := database.Open(context.Background(), dsn, database.Options{MaxOpenConns: 1})
	if err != nil {
		return err
	}
	_, err = models.Migrate(context.Background(), db)
	return errors.Join(err, database.Close(db))
}

var pgTemplate struct {
	sync.Mutex
	name string // the template, once this process has made or found it
}

// postgresTemplate returns the name of the PostgreSQL template of the
// current schema, making it when the server has none.
func postgresTemplate(t testing.TB) string {
	t.Helper()
	admin := PostgresURL(t)
	if admin == "" {
		t.Skip("PostgreSQL is not available")
	}
	pgTemplate.Lock()
	defer pgTemplate.Unlock()
	if pgTemplate.name != "" {
		return pgTemplate.name
	}
	digest, err := models.SchemaDigest(database.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	name := templatePrefix + digest[:16]
	if err := ensurePostgresTemplate(admin, name); err != nil {
		t.Fatalf("make the PostgreSQL template %s: %v", name, err)
	}
	pgTemplate.name = name
	return name
}

// ensurePostgresTemplate makes the template name unless the server has it:
// it migrates a database of its own and renames it when done, so a test
// process never copies a half-migrated template, and two processes making
// it at once both succeed (the second rename fails; its copy is dropped).
func ensurePostgresTemplate(admin, name string) error {
	adminDB, err := sql.Open("pgx", admin)
	if err != nil {
		return err
	}
	defer func() { _ = adminDB.Close() }()
	ctx := context.Background()
	templateExists := func() (bool, error) {
		var exists bool
		err := adminDB.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
		return exists, err
	}
	if exists, err := templateExists(); err != nil || exists {
		return err
	}
	building := name + "_" + randomSuffix()
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	drop := func(db string) { _, _ = adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") }
	dsn, err := databaseURLOf(admin, building)
	if err == nil {
		err = migrateAt(dsn)
	}
	if err != nil {
		drop(building)
		return err
	}
	if _, renameErr := adminDB.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); renameErr != nil {
		drop(building)
		if exists, err := templateExists(); err == nil && exists {
			return nil // another process made it meanwhile
		}
		return fmt.Errorf("rename %s to %s: %w", building, name, renameErr)
	}
	// Templates of other schemas are left over from earlier runs. One in
	// use (a test run of that schema is copying it) refuses the DROP; it
	// goes another time.
	rows, err := adminDB.QueryContext(ctx, "SELECT datname FROM pg_database WHERE datname LIKE '"+templatePrefix+"%' AND datname <> $1", name)
	if err != nil {
		return nil
	}
	var stale []string
	for rows.Next() {
		var db string
		if rows.Scan(&db) == nil && !strings.HasPrefix(db, name) {
			stale = append(stale, db)
		}
	}
	_ = rows.Close()
	for _, db := range stale {
		_, _ = adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+db)
	}
	return nil
}
