package web

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"
)

// OneStatementTx is Tx for a handler whose request writes with exactly
// one statement: the statement runs as a transaction of its own, as
// PostgreSQL and SQLite run a lone statement, with no BEGIN and COMMIT
// round trips around it. The handle refuses a second statement (it fails
// with errSecondStatement), so the request stays one transaction; a
// handler reads on the pool before it. A request with an Idempotency-Key
// also writes its stored answer, so for it this is Tx.
//
// Why: BEGIN and COMMIT around POST /crm/contacts' one INSERT are two more
// round trips to PostgreSQL; in paired runs of `make bench` (-only 'POST
// /crm/contacts') they took its throughput from 0.66–0.67 to 0.52–0.53 of
// the bare INSERT's, and the suite's CPU per request from 0.11–0.13 to
// 0.15–0.20 ms (docs/decisions.md, "Performance"). The contact create and
// the lead intake's accept, the two writes `make bench` holds to a goal,
// use it.
//
// The statement has committed once it returns; a handler whose statement
// wrote nothing (an INSERT … ON CONFLICT DO NOTHING that found its row)
// may go on with Tx.
func OneStatementTx(c *fiber.Ctx) *gorm.DB {
	rt, ok := c.Locals(localRequestTx).(*requestTx)
	if !ok || rt.key != nil || rt.tx != nil || rt.committed {
		return Tx(c)
	}
	if rt.one == nil {
		db := rt.db.Session(&gorm.Session{NewDB: true, Context: rt.ctx})
		rt.one = &oneStatement{pool: db.Statement.ConnPool, db: db}
		db.Statement.ConnPool = rt.one
	}
	return rt.one.db
}

// errSecondStatement answers a second statement on OneStatementTx's
// handle: a bug in the handler, which must take Tx instead.
var errSecondStatement = errors.New("web.OneStatementTx: a second statement in a one-statement request (take web.Tx for a request of several)")

// oneStatement is the connection pool of OneStatementTx's handle: it runs
// one statement, or one transaction begun on it, on the pool, and refuses
// anything after that.
type oneStatement struct {
	pool gorm.ConnPool
	db   *gorm.DB
	used atomic.Bool
}

var (
	_ gorm.ConnPool         = (*oneStatement)(nil)
	_ gorm.ConnPoolBeginner = (*oneStatement)(nil)
)

// take claims the handle's one statement.
func (o *oneStatement) take() error {
	if o.used.Swap(true) {
		return errSecondStatement
	}
	return nil
}

func (o *oneStatement) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := o.take(); err != nil {
		return nil, err
	}
	return o.pool.PrepareContext(ctx, query)
}

func (o *oneStatement) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := o.take(); err != nil {
		return nil, err
	}
	return o.pool.ExecContext(ctx, query, args...)
}

func (o *oneStatement) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := o.take(); err != nil {
		return nil, err
	}
	return o.pool.QueryContext(ctx, query, args...)
}

// QueryRowContext has no error to return: a second statement panics, which
// the recover middleware answers with a 500 (a handler's bug).
func (o *oneStatement) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := o.take(); err != nil {
		panic(err)
	}
	return o.pool.QueryRowContext(ctx, query, args...)
}

// BeginTx lets the one statement be a transaction of several, begun on the
// handle (db.Transaction): on SQLite an INSERT and its workflow start are
// two statements (models.RecordWithStart). It begins on the pool as GORM's
// Begin does, on a pool that begins a *sql.Tx (the suite's) or one that
// begins a pool of its own (a test's commithook).
func (o *oneStatement) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := o.take(); err != nil {
		return nil, err
	}
	switch beginner := o.pool.(type) {
	case gorm.TxBeginner:
		tx, err := beginner.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		return tx, nil
	case gorm.ConnPoolBeginner:
		return beginner.BeginTx(ctx, opts)
	}
	return nil, gorm.ErrInvalidTransaction
}
