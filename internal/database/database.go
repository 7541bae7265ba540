// Package database is the suite's database machinery, kept apart from the
// domain rules in models: opening a pool on either dialect, and the few
// fast paths around GORM that measurements justified. Each fast path says
// in its doc comment what it saves and where that was measured
// (docs/decisions.md, "Performance"), and has a test that compares it with
// the plain GORM path:
//
//   - the pool lets reads take turns in arrival order (admission.go);
//   - a list page's LIMIT is a number, not a parameter (limit.go);
//   - FindAll reads a list's rows without GORM's per-field reflection, on
//     PostgreSQL straight from pgx's wire values (findall.go, pgdecode.go);
//   - InsertUnless writes a flat model, guarded by a query, in one
//     statement GORM wrote once for the model (insert.go);
//   - page buffers are recycled between list requests (buffers.go);
//   - Numbered rewrites ? placeholders once per statement (numbered.go).
//
// Everything else is GORM as its documentation describes it: a
// transaction is db.Transaction or db.Begin, and a handle runs its
// statements where its ConnPool says — the pool, or the transaction it was
// begun as. Nothing is routed by a context value.
package database

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	// Pure-Go SQLite (registers the "sqlite" database/sql driver). The cgo
	// driver that gorm.io/driver/sqlite imports by default is never used.
	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names the SQL dialect behind a *gorm.DB.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Options tunes the connection pool.
type Options struct {
	MaxOpenConns int
	// MaxActive bounds the reads run on the pool at once, outside
	// transactions; the others wait their turn in arrival order
	// (admission). 0, or more than MaxOpenConns: MaxOpenConns.
	MaxActive       int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	// LogSQL logs every statement (development aid).
	LogSQL bool
}

// Now is the clock of every stored timestamp, GORM's CreatedAt and
// UpdatedAt included: UTC, truncated to the microsecond precision
// PostgreSQL keeps, so a value reads back unchanged.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Open connects to PostgreSQL when dsn starts with postgres:// or
// postgresql://, and otherwise treats dsn as the path of an SQLite database
// file (created if missing) opened in WAL mode with foreign keys enforced.
func Open(ctx context.Context, dsn string, opts Options) (*gorm.DB, error) {
	gcfg := &gorm.Config{
		Logger:                                   logger.Discard,
		TranslateError:                           true,
		DisableForeignKeyConstraintWhenMigrating: true,
		NowFunc:                                  Now,
		// A write that spans statements is written in a transaction of its
		// own (the request's, db.Transaction, the outbox); a single INSERT
		// or UPDATE on the pool needs no BEGIN/COMMIT around it, which cost
		// two of a POST's four round trips. No model has associations or
		// hooks that write other rows.
		SkipDefaultTransaction: true,
	}
	if opts.LogSQL {
		gcfg.Logger = logger.Default.LogMode(logger.Info)
	}

	var dialector gorm.Dialector
	dialect := DialectOf(dsn)
	switch dialect {
	case Postgres:
		dialector = postgres.Open(dsn)
	default:
		if err := os.MkdirAll(filepath.Dir(dsn), 0o755); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		dialector = sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: sqliteDSN(dsn)})
	}

	db, err := gorm.Open(dialector, gcfg)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
	}
	maxActive := opts.MaxActive
	if maxActive <= 0 || maxActive > maxOpen {
		maxActive = maxOpen
	}
	p := &pool{db: sqlDB, turns: newAdmission(maxActive)}
	db.ConnPool, db.Statement.ConnPool = p, p
	maxIdle := opts.MaxIdleConns
	if maxIdle <= 0 || maxIdle > maxOpen {
		maxIdle = maxOpen
	}
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxIdle)
	if opts.ConnMaxLifetime > 0 {
		sqlDB.SetConnMaxLifetime(opts.ConnMaxLifetime)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("ping %s database: %w", dialect, err)
	}
	return db, nil
}

// DialectOf tells which dialect a DSN selects.
func DialectOf(dsn string) Dialect {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return Postgres
	}
	return SQLite
}

// DialectFor tells which dialect an open *gorm.DB speaks.
func DialectFor(db *gorm.DB) Dialect {
	if db.Dialector.Name() == "postgres" {
		return Postgres
	}
	return SQLite
}

// sqliteDSN turns a file path into a modernc.org/sqlite DSN: WAL so readers
// never block the writer, a busy timeout so concurrent writers queue instead
// of failing, foreign keys on, and IMMEDIATE transactions so a transaction
// that reads and then writes cannot deadlock on lock upgrade.
func sqliteDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

// Close closes the pool behind db.
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks the database answers within ctx.
func Ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// IsDataError tells whether the database refused a statement for the
// values it was given — a constraint violated or a value it cannot hold
// (PostgreSQL's SQLSTATE classes 22, 23 and 54 — a value over a limit,
// such as an index row; SQLite's constraint and type
// errors) — an error that the same statement meets again on every retry,
// unlike a connection lost or a lock timed out.
func IsDataError(err error) bool {
	if err == nil {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23") || strings.HasPrefix(pg.Code, "54")
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) || errors.Is(err, gorm.ErrForeignKeyViolated) || errors.Is(err, gorm.ErrCheckConstraintViolated) {
		return true
	}
	var lite *modernc.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
			return true
		}
	}
	return false
}

// IsUniqueViolation tells whether err is a duplicate-key error on either dialect.
func IsUniqueViolation(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed"))
}
