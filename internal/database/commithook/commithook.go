// Package commithook is for tests: it gives a *gorm.DB whose transactions
// run a test's function last, just before their COMMIT, so that a test can
// make a transaction's last statement fail (web's request transactions must
// then leave nothing behind) or count the transactions that commit. The
// hook lives on the test's own handle, not in the options of the code under
// test.
package commithook

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// Wrap returns a handle on db's database whose transactions run fn just
// before they commit. fn gets the transaction (its Statement.Context is the
// context the transaction was begun with); when it fails, the transaction
// is rolled back and its COMMIT fails with fn's error. Statements outside a
// transaction run as on db, except that internal/database's FindAll reads
// through GORM's Find on it (its pgx path needs db's own pool).
func Wrap(db *gorm.DB, fn func(tx *gorm.DB) error) *gorm.DB {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	// A Session with a Context has a Statement of its own, so db's keeps
	// its pool.
	hooked := db.Session(&gorm.Session{NewDB: true, Context: ctx})
	p := &pool{ConnPool: db.Statement.ConnPool, db: db, fn: fn}
	hooked.ConnPool, hooked.Statement.ConnPool = p, p
	return hooked
}

// pool is db's connection pool, beginning transactions that run fn.
type pool struct {
	gorm.ConnPool
	db *gorm.DB
	fn func(tx *gorm.DB) error
}

var (
	_ gorm.ConnPool         = (*pool)(nil)
	_ gorm.ConnPoolBeginner = (*pool)(nil)
	_ gorm.GetDBConnector   = (*pool)(nil)
	_ gorm.TxCommitter      = (*hookedTx)(nil)
)

// BeginTx begins a transaction on the pool as GORM's Begin would.
func (p *pool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	var tx gorm.ConnPool
	switch beginner := p.ConnPool.(type) {
	case gorm.TxBeginner:
		sqlTx, err := beginner.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		tx = sqlTx
	case gorm.ConnPoolBeginner:
		var err error
		if tx, err = beginner.BeginTx(ctx, opts); err != nil {
			return nil, err
		}
	default:
		return nil, gorm.ErrInvalidTransaction
	}
	return &hookedTx{ConnPool: tx, ctx: ctx, pool: p}, nil
}

// GetDBConn is the pool's *sql.DB (gorm.DB.DB).
func (p *pool) GetDBConn() (*sql.DB, error) {
	switch inner := p.ConnPool.(type) {
	case gorm.GetDBConnector:
		return inner.GetDBConn()
	case *sql.DB:
		return inner, nil
	}
	return nil, gorm.ErrInvalidDB
}

// hookedTx is a transaction that runs its pool's fn before it commits.
type hookedTx struct {
	gorm.ConnPool // the transaction, a gorm.TxCommitter
	ctx           context.Context
	pool          *pool
}

func (t *hookedTx) Commit() error {
	tx := t.pool.db.Session(&gorm.Session{NewDB: true, Context: t.ctx})
	tx.Statement.ConnPool = t.ConnPool
	if err := t.pool.fn(tx); err != nil {
		_ = t.ConnPool.(gorm.TxCommitter).Rollback()
		return err
	}
	return t.ConnPool.(gorm.TxCommitter).Commit()
}

func (t *hookedTx) Rollback() error { return t.ConnPool.(gorm.TxCommitter).Rollback() }
