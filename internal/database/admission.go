package database

import (
	"container/list"
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// admission bounds the reads that run on the connection pool at once and
// lets the others in first come, first served.
//
// database/sql hands a freed connection to a random one of the statements
// waiting for it, so under load some wait many turns while others wait
// none: with 64 clients on 20 connections, a list request's p99 was four
// times its median. A FIFO queue in front of the pool makes every read
// wait about the same, and a bound near what the database can run at once
// (under `suite dev`, twice the cores it shares with the API) keeps the
// rest queued here instead of contending inside PostgreSQL: the same list
// at 64 clients went from a p99 of 36–39 ms to 20–21 ms at the same
// throughput (docs/decisions.md, "Performance").
//
// Only reads take turns: a read is CPU work in the database, which the
// bound is sized to, while a write spends most of its time waiting for its
// commit to reach the disk, and more writes at once share one flush. With
// writes bounded too, POST /crm/contacts lost a fifth of its throughput and
// its p99 grew tenfold. A read takes its turn for its round trip (FindAll
// until its rows are read), and only on the pool: a transaction already
// holds its connection, and a statement in it waiting for a turn held by
// statements that wait for its locks would never run. For the same reason
// a read that has waited maxWait goes ahead without a turn: a caller that
// holds a transaction's locks while reading on the pool cannot stall the
// others for longer than that.
type admission struct {
	mu      sync.Mutex
	free    int       // turns nobody holds
	queue   list.List // of chan struct{}: the reads waiting for a turn, first come first
	maxWait time.Duration
}

// admissionMaxWait is how long a read waits for a turn before it goes
// ahead without one.
const admissionMaxWait = time.Second

func newAdmission(n int) *admission {
	return &admission{free: n, maxWait: admissionMaxWait}
}

// enter waits for ctx's read's turn. admitted tells whether it took
// one (false when it waited maxWait: it goes ahead without), to be handed
// to leave when the statement is done. A canceled ctx ends the wait with
// its error.
//
// The queue is this type's own rather than x/sync's semaphore (which is
// FIFO too) so that a read is counted as waiting (waiting) exactly when
// it stands in the queue: the tests that check the order of turns start
// the next read only once the one before it is queued.
func (a *admission) enter(ctx context.Context) (admitted bool, err error) {
	a.mu.Lock()
	if a.free > 0 && a.queue.Len() == 0 {
		a.free--
		a.mu.Unlock()
		return true, nil
	}
	turn := make(chan struct{})
	place := a.queue.PushBack(turn)
	maxWait := a.maxWait
	a.mu.Unlock()

	timeout := time.NewTimer(maxWait)
	defer timeout.Stop()
	select {
	case <-turn:
		return true, nil
	case <-ctx.Done():
	case <-timeout.C:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-turn: // handed the turn while giving up
		if ctx.Err() == nil {
			return true, nil
		}
		a.handOn()
	default:
		a.queue.Remove(place)
	}
	return false, ctx.Err()
}

// leave ends a read's turn (enter's admitted).
func (a *admission) leave(admitted bool) {
	if !admitted {
		return
	}
	a.mu.Lock()
	a.handOn()
	a.mu.Unlock()
}

// handOn gives a turn to the read waiting longest, or back to the free
// ones when none waits. a.mu is held.
func (a *admission) handOn() {
	if first := a.queue.Front(); first != nil {
		close(a.queue.Remove(first).(chan struct{}))
		return
	}
	a.free++
}

// waiting tells how many reads wait for a turn now.
func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queue.Len()
}

// isRead tells whether query only reads: a SELECT (a data-modifying WITH
// starts with WITH, and GORM writes SELECT in capitals).
func isRead(query string) bool {
	return len(query) >= 6 && strings.EqualFold(query[:6], "SELECT")
}

// pool is the connection pool behind every *gorm.DB that Open returns: a
// read takes its turn (admission), anything else runs at once. A
// transaction begun on it is database/sql's own, whose statements hold
// their connection and never take turns.
type pool struct {
	db    *sql.DB
	turns *admission
}

var (
	_ gorm.ConnPool       = (*pool)(nil)
	_ gorm.TxBeginner     = (*pool)(nil)
	_ gorm.GetDBConnector = (*pool)(nil)
)

// inTurn runs stmt, in its turn when query only reads.
func inTurn[R any](ctx context.Context, p *pool, query string, stmt func() (R, error)) (R, error) {
	if !isRead(query) {
		return stmt()
	}
	admitted, err := p.turns.enter(ctx)
	if err != nil {
		var zero R
		return zero, err
	}
	defer p.turns.leave(admitted)
	return stmt()
}

func (p *pool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return inTurn(ctx, p, query, func() (*sql.Stmt, error) { return p.db.PrepareContext(ctx, query) })
}

func (p *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return inTurn(ctx, p, query, func() (sql.Result, error) { return p.db.ExecContext(ctx, query, args...) })
}

func (p *pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return inTurn(ctx, p, query, func() (*sql.Rows, error) { return p.db.QueryContext(ctx, query, args...) })
}

// QueryRowContext waits for its turn like the others; a row whose wait
// ended with ctx is read with ctx, so it fails with ctx's error (a
// *sql.Row carries no error of its own that could say so).
func (p *pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row, _ := inTurn(ctx, p, query, func() (*sql.Row, error) { return p.db.QueryRowContext(ctx, query, args...), nil })
	if row == nil {
		return p.db.QueryRowContext(ctx, query, args...)
	}
	return row
}

func (p *pool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	return p.db.BeginTx(ctx, opts)
}

func (p *pool) GetDBConn() (*sql.DB, error) { return p.db, nil }
