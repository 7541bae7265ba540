package web

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// The request transaction.
//
// Every request that may change data — POST, PUT, PATCH and DELETE — runs
// its writes in one database transaction, which its handler takes by name:
//
//	tx := web.Tx(c)                  // begun here, at its first use
//	if err := tx.Create(row).Error; err != nil {
//		return err                   // rolled back: nothing of the request stays
//	}
//	return c.Status(201).JSON(view)  // committed once the handler answered
//
// The Transactional middleware ends it after the handler: an answer below
// 400 commits it (with the answer stored under the request's
// Idempotency-Key, when it has one, in the same transaction); a refusal
// (4xx) or a failure (5xx) rolls it back, on both dialects alike. A handler
// that fails half-way, or a statement that fails after others succeeded,
// leaves nothing behind. A nested tx.Transaction is a savepoint (GORM's
// own), and work to do once the writes are visible to others — waking the
// outbox relay — is registered with AfterCommit.
//
// Reads that need not see the request's own writes go to the pool (the
// handler's DB), as every GET does: on SQLite the transaction holds the
// database's one write lock from its first statement, so a handler takes
// Tx where its writes begin. A handler whose whole request is one
// statement may take OneStatementTx instead (see there).

const localRequestTx = "request-tx"

// RequestOptions tunes Transactional.
type RequestOptions struct {
	// Scope names whose Idempotency-Keys a request uses, so two callers'
	// keys never collide. The default is the principal the authentication
	// middleware recorded with SetIdempotencyScope ("anonymous" when none
	// did).
	Scope func(c *fiber.Ctx) string
	// Now is the clock (tests move it).
	Now func() time.Time
	// Lease is how long an in-flight key stays claimed without renewal
	// (DefaultIdempotencyLease when zero).
	Lease time.Duration
}

// requestTx is one request's transaction and what ends it.
type requestTx struct {
	db  *gorm.DB        // the pool the transaction is begun on
	ctx context.Context // the request's, without its cancellation
	tx  *gorm.DB        // nil until Tx
	// one is the handle OneStatementTx gave out, nil when none.
	one *oneStatement
	// key is the Idempotency-Key's claim, nil without a key.
	key *models.IdempotencyKey
	// committed: CommitAccepted ended the transaction early.
	committed bool
	// keepOnRefusal: KeepOnRefusal was called.
	keepOnRefusal bool
	afterCommit   []func()
}

// mutating tells whether a request of this method may change data.
func mutating(method string) bool {
	switch method {
	case fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete:
		return true
	}
	return false
}

// errNoRequestTx answers a handler that asks for a transaction outside a
// mutating request behind Transactional: a bug, never a client's doing.
var errNoRequestTx = errors.New("web.Tx: the request has no transaction (not a POST, PUT, PATCH or DELETE behind web.Transactional)")

// errRequestTxEnded answers a handler that asks for the transaction after
// CommitAccepted ended it.
var errRequestTxEnded = errors.New("web.Tx: the request's transaction was already committed (CommitAccepted)")

// Tx is the request's transaction, begun at its first call; every later
// call returns the same one. A handle whose transaction could not begin
// (the database is away) carries that error, which its first statement
// returns. After CommitAccepted it is a handle that fails every statement;
// outside a mutating request behind Transactional it panics (a bug, which
// the recover middleware answers with a 500).
func Tx(c *fiber.Ctx) *gorm.DB {
	rt, ok := c.Locals(localRequestTx).(*requestTx)
	switch {
	case !ok:
		panic(errNoRequestTx)
	case rt.committed:
		failed := rt.db.Session(&gorm.Session{NewDB: true, Context: rt.ctx})
		_ = failed.AddError(errRequestTxEnded)
		return failed
	case rt.tx == nil:
		// Not tied to the request's cancellation: a client that goes away
		// does not roll the handler's writes back half-way.
		rt.tx = rt.db.WithContext(rt.ctx).Begin()
	}
	return rt.tx
}

// AfterCommit runs fn once the request's transaction has committed (the
// outbox relay's wake-up); a transaction that rolls back drops it. Outside
// a request transaction fn runs at once.
func AfterCommit(c *fiber.Ctx, fn func()) {
	if rt, ok := c.Locals(localRequestTx).(*requestTx); ok && !rt.committed {
		rt.afterCommit = append(rt.afterCommit, fn)
		return
	}
	fn()
}

// KeepOnRefusal makes the request's writes commit although its answer is a
// refusal (4xx), which otherwise rolls them back: for the rare write that
// a refusal exists to make — a reused refresh token revokes its sign-in and
// answers 401. A failure (5xx) still rolls everything back.
func KeepOnRefusal(c *fiber.Ctx) {
	if rt, ok := c.Locals(localRequestTx).(*requestTx); ok {
		rt.keepOnRefusal = true
	}
}

// Transactional runs every mutating request (POST, PUT, PATCH, DELETE) in
// one request transaction (Tx) and ends it as the handler's answer says,
// and makes every POST that carries an Idempotency-Key safe to retry. It
// runs after authentication, so that a request refused for its credential
// stores nothing.
//
// Idempotency: the first request with a key runs, and its answer (any
// status below 500 but 429) is stored for 24 hours; a retry with the same
// body gets the stored answer back, with Idempotent-Replayed: true; the
// same key with a different body is a 422; a retry while the first is
// still running is a 409. A 5xx or 429 is not stored, so the client's retry
// runs again. A successful answer marked Cache-Control: no-store holds a
// secret and is never stored: its retry gets a 409 saying so. Keys live in
// the database, so every API replica honours them.
//
// The answer of a successful keyed request is stored in the request's
// transaction, which then commits: a process killed at any point leaves
// both or neither. A refusal changes nothing, so its answer is stored on
// its own once the transaction is rolled back. A COMMIT that fails, or
// whose acknowledgement is lost, answers its error and leaves the key in
// flight: if it did land, the retry after the lease replays the answer; if
// not, the retry runs again. A failure before the COMMIT (the stored
// answer) releases the key at once.
func Transactional(db *gorm.DB, opts RequestOptions) fiber.Handler {
	if opts.Scope == nil {
		opts.Scope = PrincipalScope
	}
	if opts.Now == nil {
		opts.Now = models.Now
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultIdempotencyLease
	}
	return func(c *fiber.Ctx) error {
		if !mutating(c.Method()) {
			return c.Next()
		}
		ctx := c.UserContext()
		rt := &requestTx{db: db, ctx: context.WithoutCancel(ctx)}
		if key := c.Get(HeaderIdempotencyKey); key != "" && c.Method() == fiber.MethodPost {
			row, err := newClaim(c, key, opts)
			if err != nil {
				return err
			}
			claimed, err := claimKey(ctx, db, row, opts.Now())
			if err != nil {
				return err
			}
			if !claimed {
				return replay(c, row)
			}
			rt.key = row
			stopHeartbeat := heartbeat(rt.ctx, db, row, opts)
			defer stopHeartbeat()
		}
		c.Locals(localRequestTx, rt)
		defer rt.rollback()

		if err := c.Next(); err != nil {
			if err := c.App().ErrorHandler(c, err); err != nil {
				return err
			}
		}
		return rt.end(c)
	}
}

// end commits or rolls back the request's transaction as its answer says,
// and settles its Idempotency-Key.
func (rt *requestTx) end(c *fiber.Ctx) error {
	resp := c.Response()
	status := resp.StatusCode()
	switch {
	case rt.committed:
		// Committed early (CommitAccepted): the final answer replaces the
		// provisional one, unless it is not an outcome (the provisional
		// answer stands). The request succeeded either way; a failure here
		// only leaves the provisional answer for a retry to replay.
		if rt.key != nil && storable(status) {
			if err := storeOutcome(rt.ctx, rt.db, rt.key, resp); err != nil {
				slog.ErrorContext(rt.ctx, "storing an idempotent response failed", "key", rt.key.Key, "error", err)
			}
		}
		return nil
	case status < 400, status < 500 && rt.keepOnRefusal:
		if err := rt.commit(c); err != nil {
			// The answer must not claim success.
			resp.Header.Del(fiber.HeaderLocation)
			var lost *commitError
			if rt.key != nil && !errors.As(err, &lost) && !errors.Is(err, errKeyInFlight) {
				// Nothing was committed: the retry runs again.
				rt.rollback()
				release(rt.ctx, rt.db, rt.key)
			}
			return c.App().ErrorHandler(c, err)
		}
		return nil
	}
	rt.rollback()
	switch {
	case rt.key == nil:
	case storable(status):
		// A refusal changed nothing; the same request would be refused the
		// same way, so its answer is what a retry gets.
		if err := storeOutcome(rt.ctx, rt.db, rt.key, resp); err != nil {
			return err
		}
	default:
		// Not an outcome: the retry must run again.
		release(rt.ctx, rt.db, rt.key)
	}
	return nil
}

// commit stores the answer under the request's key, commits, and then runs
// the AfterCommit functions.
func (rt *requestTx) commit(c *fiber.Ctx) error {
	if err := rt.commitTx(c); err != nil {
		return err
	}
	rt.runAfterCommit()
	return nil
}

func (rt *requestTx) commitTx(c *fiber.Ctx) error {
	if rt.tx == nil {
		switch {
		case rt.one != nil:
			return nil // OneStatementTx's statement committed on its own
		case rt.key != nil:
			// The request wrote nothing: its stored answer is the one
			// statement to commit.
			return storeOutcome(rt.ctx, rt.db, rt.key, c.Response())
		default:
			return nil
		}
	}
	tx := Tx(c)
	if rt.key != nil {
		if err := storeOutcome(rt.ctx, tx, rt.key, c.Response()); err != nil {
			return err
		}
	}
	err := tx.Commit().Error
	rt.tx = nil
	if err != nil {
		return &commitError{err}
	}
	return nil
}

// commitError is a COMMIT that failed, or whose acknowledgement was lost:
// whether it landed is unknown, so a request's key stays in flight — if it
// did land, the retry after the lease replays the answer; if not, the
// retry runs again.
type commitError struct{ err error }

func (e *commitError) Error() string { return e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

func (rt *requestTx) runAfterCommit() {
	hooks := rt.afterCommit
	rt.afterCommit = nil
	for _, fn := range hooks {
		fn()
	}
}

// rollback ends a transaction that is still open without its writes.
func (rt *requestTx) rollback() {
	if rt.tx != nil {
		rt.tx.Rollback()
		rt.tx = nil
	}
	rt.afterCommit = nil
}

// CommitAccepted answers 202 with body and commits the request's writes
// now (with that answer stored under its Idempotency-Key, when it has one).
// A handler that goes on to wait for work its writes started (Prefer: wait)
// calls it first: the worker must see those writes, and a retry after a
// crash during the wait replays this answer. The final answer replaces it
// once the handler returns. After it, Tx refuses every statement: the wait
// reads on the pool.
func CommitAccepted(c *fiber.Ctx, body any) error {
	if err := c.Status(fiber.StatusAccepted).JSON(body); err != nil {
		return err
	}
	rt, ok := c.Locals(localRequestTx).(*requestTx)
	if !ok || rt.committed {
		return nil
	}
	err := rt.commit(c)
	rt.committed = err == nil
	return err
}
