package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"gorm.io/gorm"
)

// A request transaction makes everything one HTTP request writes commit in
// one database transaction, together with whatever its caller records last
// (the idempotency middleware: the response stored under the request's
// Idempotency-Key). A process that dies after the handler's writes can then
// never leave them without that record, or the record without them.
//
// Handlers need not know about it: every statement run with a context that
// carries a RequestTx joins it, and a transaction a handler opens inside it
// (db.Transaction, the outbox) becomes a savepoint. That routing is done by
// the connection pool Open installs (txRouter).

type requestTxKey struct{}

// RequestTx is one request's transaction. It begins at the first statement
// that joins it, so a handler holds no connection (and, on SQLite, no write
// lock) before it touches the database.
type RequestTx struct {
	mu          sync.Mutex
	ctx         context.Context // what the transaction begins with
	db          *sql.DB
	tx          *sql.Tx // nil until the first statement
	beginErr    error
	done        bool
	savepoints  int
	afterCommit []func()
}

// ErrRequestTxDone is returned for committing a request transaction that
// has already ended.
var ErrRequestTxDone = errors.New("the request's transaction has already ended")

// BeginRequestTx returns a context whose statements on db join one
// transaction, and that transaction. The caller ends it with Commit or
// Rollback. The transaction is not tied to ctx's cancellation: a client
// that goes away does not roll back a handler's writes half-way.
func BeginRequestTx(ctx context.Context, db *gorm.DB) (context.Context, *RequestTx, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, err
	}
	rt := &RequestTx{ctx: context.WithoutCancel(ctx), db: sqlDB}
	return context.WithValue(ctx, requestTxKey{}, rt), rt, nil
}

// conn is the transaction, begun now if this is its first statement, or
// nil once it has ended.
func (rt *RequestTx) conn() (*sql.Tx, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.done {
		return nil, nil
	}
	if rt.tx == nil && rt.beginErr == nil {
		rt.tx, rt.beginErr = rt.db.BeginTx(rt.ctx, nil)
	}
	return rt.tx, rt.beginErr
}

// Commit runs last (a final write made with the transaction's context;
// nil for none) and commits, then runs the AfterCommit callbacks. An error
// from last rolls everything back. Committing an ended transaction is an
// error.
func (rt *RequestTx) Commit(last func() error) error {
	if !rt.Open() {
		return ErrRequestTxDone
	}
	if last != nil {
		if err := last(); err != nil {
			rt.Rollback()
			return err
		}
	}
	rt.mu.Lock()
	tx, beginErr := rt.tx, rt.beginErr
	rt.done = true
	hooks := rt.afterCommit
	rt.afterCommit = nil
	rt.mu.Unlock()
	if beginErr != nil {
		return beginErr
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	for _, fn := range hooks {
		fn()
	}
	return nil
}

// Rollback ends the transaction without its writes; after Commit or a
// first Rollback it does nothing.
func (rt *RequestTx) Rollback() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.done {
		return
	}
	rt.done = true
	rt.afterCommit = nil
	if rt.tx != nil {
		_ = rt.tx.Rollback()
	}
}

// BeginErr is why the transaction could not begin, or nil. Every statement
// made in it since failed for that reason, though not all of them can say
// so (see txRouter.QueryRowContext): it is the error to report.
func (rt *RequestTx) BeginErr() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.beginErr
}

// Open tells whether the transaction has not ended yet.
func (rt *RequestTx) Open() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return !rt.done
}

// AfterCommit runs fn once the writes made with ctx are committed: at once
// when ctx carries no open request transaction (the caller's own
// transaction has just committed), otherwise when the request's does. A
// rolled-back request transaction drops fn.
func AfterCommit(ctx context.Context, fn func()) {
	if rt, ok := ctx.Value(requestTxKey{}).(*RequestTx); ok {
		rt.mu.Lock()
		if !rt.done {
			rt.afterCommit = append(rt.afterCommit, fn)
			rt.mu.Unlock()
			return
		}
		rt.mu.Unlock()
	}
	fn()
}

// txRouter is the connection pool behind every *gorm.DB that Open returns:
// a statement whose context carries an open request transaction runs in
// it, any other on the pool in its turn (admission).
type txRouter struct {
	db    *sql.DB
	turns *admission
}

var (
	_ gorm.ConnPool         = (*txRouter)(nil)
	_ gorm.ConnPoolBeginner = (*txRouter)(nil)
	_ gorm.GetDBConnector   = (*txRouter)(nil)
)

// route finds where a statement made with ctx runs: the request's
// transaction when ctx carries an open one, the pool otherwise.
func (r *txRouter) route(ctx context.Context) (gorm.ConnPool, *RequestTx, error) {
	rt, ok := ctx.Value(requestTxKey{}).(*RequestTx)
	if !ok {
		return r.db, nil, nil
	}
	tx, err := rt.conn()
	switch {
	case err != nil:
		return nil, nil, err
	case tx == nil: // ended (committed early): the pool again
		return r.db, nil, nil
	}
	return tx, rt, nil
}

// run runs a statement where route sends it; a read on the pool runs in
// its turn (admission).
func run[R any](ctx context.Context, r *txRouter, query string, stmt func(gorm.ConnPool) (R, error)) (R, error) {
	p, rt, err := r.route(ctx)
	if err != nil {
		var zero R
		return zero, err
	}
	if rt != nil || !isRead(query) { // in the request's transaction, or a write
		return stmt(p)
	}
	admitted, err := r.turns.enter(ctx)
	if err != nil {
		var zero R
		return zero, err
	}
	defer r.turns.leave(admitted)
	return stmt(p)
}

func (r *txRouter) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return run(ctx, r, query, func(p gorm.ConnPool) (*sql.Stmt, error) { return p.PrepareContext(ctx, query) })
}

func (r *txRouter) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return run(ctx, r, query, func(p gorm.ConnPool) (sql.Result, error) { return p.ExecContext(ctx, query, args...) })
}

func (r *txRouter) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return run(ctx, r, query, func(p gorm.ConnPool) (*sql.Rows, error) { return p.QueryContext(ctx, query, args...) })
}

// QueryRowContext cannot return an error of its own: when the request's
// transaction failed to begin, or ctx ended while the statement waited for
// its turn, the row is read with a canceled context, which fails its Scan.
// The request's real error is then RequestTx.BeginErr, which the
// idempotency middleware reports in its place.
func (r *txRouter) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row, err := run(ctx, r, query, func(p gorm.ConnPool) (*sql.Row, error) { return p.QueryRowContext(ctx, query, args...), nil })
	if err != nil {
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		return r.db.QueryRowContext(canceled, query, args...)
	}
	return row
}

func (r *txRouter) GetDBConn() (*sql.DB, error) { return r.db, nil }

// BeginTx opens a transaction, or, inside a request transaction, a
// savepoint that the caller's Commit releases and Rollback rolls back to.
func (r *txRouter) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	p, rt, err := r.route(ctx)
	if err != nil {
		return nil, err
	}
	if rt == nil {
		return r.db.BeginTx(ctx, opts)
	}
	tx := p.(*sql.Tx)
	rt.mu.Lock()
	rt.savepoints++
	name := fmt.Sprintf("request_sp_%d", rt.savepoints)
	rt.mu.Unlock()
	if _, err := tx.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
		return nil, err
	}
	return &savepoint{Tx: tx, db: r.db, ctx: context.WithoutCancel(ctx), name: name}, nil
}

// savepoint stands for a transaction opened inside a request transaction.
type savepoint struct {
	*sql.Tx
	db   *sql.DB
	ctx  context.Context
	name string
}

func (s *savepoint) Commit() error {
	_, err := s.Tx.ExecContext(s.ctx, "RELEASE SAVEPOINT "+s.name)
	return err
}

func (s *savepoint) Rollback() error {
	_, err := s.Tx.ExecContext(s.ctx, "ROLLBACK TO SAVEPOINT "+s.name)
	return err
}

func (s *savepoint) GetDBConn() (*sql.DB, error) { return s.db, nil }
