package models

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	// Pure-Go SQLite (registers the "sqlite" database/sql driver). The cgo
	// driver that gorm.io/driver/sqlite imports by default is never used.
	_ "modernc.org/sqlite"
)

// Dialect names the SQL dialect behind a *gorm.DB.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DBOptions tunes the connection pool.
type DBOptions struct {
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

// Open connects to PostgreSQL when dsn starts with postgres:// or
// postgresql://, and otherwise treats dsn as the path of an SQLite database
// file (created if missing) opened in WAL mode with foreign keys enforced.
func Open(ctx context.Context, dsn string, opts DBOptions) (*gorm.DB, error) {
	gcfg := &gorm.Config{
		Logger:                                   logger.Discard,
		TranslateError:                           true,
		DisableForeignKeyConstraintWhenMigrating: true,
		NowFunc:                                  Now,
		// Every write that spans statements opens its own transaction
		// (db.Transaction, the outbox); a single INSERT or UPDATE needs no
		// BEGIN/COMMIT around it, which cost two of a POST's four round trips.
		// No model has associations or hooks that write other rows.
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
	if dialect == Postgres {
		db.ClauseBuilders["LIMIT"] = literalLimit
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	// Statements made with a request transaction's context run in it
	// (requesttx.go).
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
	}
	maxActive := opts.MaxActive
	if maxActive <= 0 || maxActive > maxOpen {
		maxActive = maxOpen
	}
	router := &txRouter{db: sqlDB, turns: newAdmission(maxActive)}
	db.ConnPool, db.Statement.ConnPool = router, router
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

// literalLimit writes a statement's LIMIT and OFFSET as numbers, not as
// parameters ("LIMIT 26", not "LIMIT $2"), on PostgreSQL; the SQLite
// driver already writes them so. pgx prepares every statement, and
// PostgreSQL plans a prepared statement afresh on every run until a plan
// made without the parameters' values (the generic plan) looks no costlier
// than those. Not knowing the LIMIT, the generic plan of a list page
// expects a tenth of the organization's rows rather than a page, so a large
// organization's lists were planned on every request: 0.045 ms of
// PostgreSQL's CPU a page, more than running it (0.03 ms). Both are the
// numbers GORM was given, never a client's text; a page size is one of
// 1–101, so a list shape has at most that many statements in pgx's cache
// (TestListPagesReuseTheirPlan).
func literalLimit(c clause.Clause, builder clause.Builder) {
	limit, ok := c.Expression.(clause.Limit)
	if !ok {
		c.Build(builder)
		return
	}
	hasLimit := limit.Limit != nil && *limit.Limit >= 0
	if hasLimit {
		builder.WriteString("LIMIT ")
		builder.WriteString(strconv.Itoa(*limit.Limit))
	}
	if limit.Offset > 0 {
		if hasLimit {
			builder.WriteByte(' ')
		}
		builder.WriteString("OFFSET ")
		builder.WriteString(strconv.Itoa(limit.Offset))
	}
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

// IsUniqueViolation tells whether err is a duplicate-key error on either dialect.
func IsUniqueViolation(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed"))
}
