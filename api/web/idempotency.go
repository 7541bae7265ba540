package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/models"
)

// Idempotency headers.
const (
	HeaderIdempotencyKey     = "Idempotency-Key"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
	idempotencyRetention     = 24 * time.Hour
	// DefaultIdempotencyLease is how long an in-flight key stays claimed
	// without a heartbeat. The request renews it every third of that while
	// it runs, so only a request whose process died loses its claim, and a
	// retry after a crash proceeds within seconds.
	DefaultIdempotencyLease = 10 * time.Second
	maxIdempotencyKeyLength = 255
	// secretWithheld marks a stored outcome whose body was not kept.
	secretWithheld = "(secret withheld)"
)

// IdempotencyOptions tunes the middleware.
type IdempotencyOptions struct {
	// Scope names whose keys these are, so two callers' keys never collide.
	// The default is the principal the authentication middleware recorded
	// with SetIdempotencyScope ("anonymous" when none did).
	Scope func(c *fiber.Ctx) string
	// Now is the clock (tests move it).
	Now func() time.Time
	// Lease is how long an in-flight claim lasts without renewal
	// (DefaultIdempotencyLease when zero).
	Lease time.Duration
}

const localIdempotencyScope = "idempotency-scope"

// SetIdempotencyScope records whose Idempotency-Keys the request uses: the
// principal (a user id, with the organization when it is already known, or
// an API key id), never the raw credential, so a retry after a token
// refresh still finds its key. Authentication middleware calls it.
func SetIdempotencyScope(c *fiber.Ctx, scope string) { c.Locals(localIdempotencyScope, scope) }

// PrincipalScope is the scope recorded by SetIdempotencyScope, or
// "anonymous" for requests without a principal (sign-up, sign-in).
func PrincipalScope(c *fiber.Ctx) string {
	if s, ok := c.Locals(localIdempotencyScope).(string); ok && s != "" {
		return s
	}
	return "anonymous"
}

// Idempotency makes every POST that carries an Idempotency-Key safe to
// retry. The first request with a key runs and its response (any status
// below 500) is stored for 24 hours; a retry with the same body gets the
// stored response back, with Idempotent-Replayed: true; the same key with a
// different body is a 422; a retry while the first is still running is a
// 409. A 5xx or 429 outcome is not stored, so the client's retry runs
// again. A successful response marked Cache-Control: no-store holds a secret
// and is never stored: its retry gets a 409 saying so.
// Keys live in the database, so every API replica honours them.
func Idempotency(db *gorm.DB, opts IdempotencyOptions) fiber.Handler {
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
		key := c.Get(HeaderIdempotencyKey)
		if c.Method() != fiber.MethodPost || key == "" {
			return c.Next()
		}
		if len(key) > maxIdempotencyKeyLength {
			return models.Invalid(models.FieldError{Field: HeaderIdempotencyKey, Code: "max", Message: "Must be at most 255 characters long."})
		}
		if !printableASCII(key) {
			return models.Invalid(models.FieldError{Field: HeaderIdempotencyKey, Code: "printable",
				Message: "Must be printable ASCII (letters, digits, punctuation, spaces)."})
		}
		ctx := c.UserContext()
		now := opts.Now()
		row := models.IdempotencyKey{
			Scope:       strings.Clone(opts.Scope(c)),
			Key:         strings.Clone(key),
			RequestHash: requestHash(c),
			State:       models.IdemInFlight,
			CreatedAt:   now,
			ExpiresAt:   now.Add(idempotencyRetention),
			LockedUntil: now.Add(opts.Lease),
		}
		claimed, err := claimKey(ctx, db, &row, now)
		if err != nil {
			return err
		}
		if !claimed {
			return replay(c, &row)
		}

		stopHeartbeat := heartbeat(context.WithoutCancel(ctx), db, &row, opts)
		defer stopHeartbeat()
		// The handler's writes and the outcome stored under the key commit
		// in one transaction: a process that dies in between leaves neither,
		// and the retry runs again once the claim's lease lapses.
		reqCtx, tx, err := models.BeginRequestTx(ctx, db)
		if err != nil {
			release(ctx, db, &row)
			return err
		}
		defer tx.Rollback()
		c.SetUserContext(reqCtx)
		c.Locals(localIdempotentRequest, &idempotentRequest{db: db, row: &row, ctx: reqCtx, tx: tx})

		if handlerErr := c.Next(); handlerErr != nil {
			if err := tx.BeginErr(); err != nil {
				// The database failed the request, whatever the handler made
				// of it: a row read can only say its context was canceled.
				handlerErr = err
			}
			if err := c.App().ErrorHandler(c, handlerErr); err != nil {
				return err
			}
		}
		stopHeartbeat()
		resp := c.Response()
		if !storable(resp.StatusCode()) {
			// Not an outcome: the retry must run again — unless the handler
			// committed early (CommitAccepted), whose stored answer stands.
			if tx.Open() {
				tx.Rollback()
				release(ctx, db, &row)
			}
			return nil
		}
		if !tx.Open() {
			// Committed early: replace the provisional answer with the final
			// one. The request succeeded either way; a failure here only
			// leaves the provisional answer for a retry to replay.
			if err := storeOutcome(context.WithoutCancel(ctx), db, &row, resp); err != nil {
				slog.ErrorContext(ctx, "storing an idempotent response failed", "key", row.Key, "error", err)
			}
			return nil
		}
		err = tx.Commit(func() error { return storeOutcome(reqCtx, db, &row, resp) })
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errKeyInFlight):
			return errKeyInFlight
		case resp.StatusCode() >= 400:
			// A refusal whose transaction could not commit (PostgreSQL
			// aborts a transaction at its first failed statement, such as
			// the insert that found a duplicate): it changed nothing, and
			// its answer is stored on its own.
			if err := storeOutcome(context.WithoutCancel(ctx), db, &row, resp); err != nil {
				return err
			}
			return nil
		default:
			// The commit failed, or its acknowledgement was lost: the
			// answer must not claim success. The claim stays in flight, so
			// a retry replays the outcome if the commit did land, and runs
			// again after the lease if it did not.
			return err
		}
	}
}

// storable tells whether a response is an outcome to keep under its key:
// a 5xx or a 429 is not, the client's retry must run again.
func storable(status int) bool {
	return status < 500 && status != fiber.StatusTooManyRequests
}

// errKeyInFlight answers a request whose key another request holds: a retry
// while the first is still running, and a request that ran past its lease
// and lost the claim to such a retry (its writes are rolled back).
var errKeyInFlight = NewProblem(fiber.StatusConflict, "idempotency_key_in_flight",
	"A request with this Idempotency-Key is still being processed; retry shortly.").WithRetryAfter(1)

// claimOf narrows q to the key row while it is row's claim: a claim taken
// over since (a new created_at) is never touched by its former holder.
func claimOf(q *gorm.DB, row *models.IdempotencyKey) *gorm.DB {
	return q.Model(&models.IdempotencyKey{}).
		Where("scope = ? AND key = ? AND created_at = ?", row.Scope, row.Key, row.CreatedAt)
}

// release gives up a claim whose request stored no outcome, so a retry runs
// at once.
func release(ctx context.Context, db *gorm.DB, row *models.IdempotencyKey) {
	err := claimOf(db.WithContext(context.WithoutCancel(ctx)), row).Delete(&models.IdempotencyKey{}).Error
	if err != nil {
		slog.WarnContext(ctx, "releasing an idempotency claim failed; it lapses with its lease", "key", row.Key, "error", err)
	}
}

// storeOutcome records resp as the outcome of the request that holds row's
// claim, with ctx (inside the request transaction, or after it). A
// successful response marked Cache-Control: no-store holds a secret (tokens,
// a new API key) and is never written down: the key records only that the
// request succeeded, so a retry cannot repeat it.
func storeOutcome(ctx context.Context, db *gorm.DB, row *models.IdempotencyKey, resp *fasthttp.Response) error {
	status := resp.StatusCode()
	outcome := map[string]any{"state": models.IdemDone, "status_code": status, "content_type": secretWithheld,
		"location": "", "body": nil}
	if status >= 300 || string(resp.Header.Peek(fiber.HeaderCacheControl)) != "no-store" {
		outcome["content_type"] = string(resp.Header.ContentType())
		outcome["location"] = string(resp.Header.Peek(fiber.HeaderLocation))
		outcome["body"] = append([]byte(nil), resp.Body()...)
	}
	res := claimOf(db.WithContext(ctx), row).Updates(outcome)
	if res.Error == nil && res.RowsAffected == 0 {
		return errKeyInFlight
	}
	return res.Error
}

const localIdempotentRequest = "idempotent-request"

// idempotentRequest is what CommitAccepted needs of the middleware's state.
type idempotentRequest struct {
	db  *gorm.DB
	row *models.IdempotencyKey
	ctx context.Context
	tx  *models.RequestTx
}

// CommitAccepted answers 202 with body and commits the request's writes
// now, with that answer stored as its outcome. A handler that goes on to
// wait for work its writes started (Prefer: wait) calls it first: the
// worker must see those writes, and a retry after a crash during the wait
// replays this answer. The final response replaces it once the handler
// returns. Without an Idempotency-Key there is nothing to commit.
func CommitAccepted(c *fiber.Ctx, body any) error {
	if err := c.Status(fiber.StatusAccepted).JSON(body); err != nil {
		return err
	}
	r, ok := c.Locals(localIdempotentRequest).(*idempotentRequest)
	if !ok || !r.tx.Open() {
		return nil
	}
	return r.tx.Commit(func() error { return storeOutcome(r.ctx, r.db, r.row, c.Response()) })
}

// heartbeat renews the claim on row every third of the lease until the
// returned stop is called. Stop does not wait for a renewal under way: on
// SQLite it may be queued behind the request's own transaction. The renewal names
// the claim by its created_at, so a claim that was taken over meanwhile is
// never extended by its former holder.
func heartbeat(ctx context.Context, db *gorm.DB, row *models.IdempotencyKey, opts IdempotencyOptions) (stop func()) {
	quit := make(chan struct{})
	go func() {
		ticker := time.NewTicker(opts.Lease / 3)
		defer ticker.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ticker.C:
				err := claimOf(db.WithContext(ctx), row).Where("state = ?", models.IdemInFlight).
					Update("locked_until", opts.Now().Add(opts.Lease)).Error
				if err != nil {
					slog.WarnContext(ctx, "renewing an idempotency claim failed", "key", row.Key, "error", err)
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit) }) }
}

// claimKey inserts the in-flight row. When the key already exists it loads
// it into row and reports false — unless the existing row has expired, or
// its request died in flight (its lease ran out without a heartbeat), in
// which case it is taken over.
func claimKey(ctx context.Context, db *gorm.DB, row *models.IdempotencyKey, now time.Time) (bool, error) {
	q := db.WithContext(ctx)
	res := q.Clauses(clause.OnConflict{DoNothing: true}).Create(row)
	if res.Error != nil || res.RowsAffected == 1 {
		return res.Error == nil, res.Error
	}
	var existing models.IdempotencyKey
	if err := q.Where("scope = ? AND key = ?", row.Scope, row.Key).Take(&existing).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) { // purged between the two statements
			return claimKey(ctx, db, row, now)
		}
		return false, err
	}
	stale := existing.ExpiresAt.Before(now) ||
		(existing.State == models.IdemInFlight && existing.LockedUntil.Before(now))
	if stale {
		res := claimOf(q, &existing).
			Updates(map[string]any{"request_hash": row.RequestHash, "state": models.IdemInFlight, "status_code": 0,
				"content_type": "", "location": "", "body": nil, "created_at": row.CreatedAt, "expires_at": row.ExpiresAt,
				"locked_until": row.LockedUntil})
		if res.Error != nil {
			return false, res.Error
		}
		if res.RowsAffected == 1 {
			return true, nil
		}
		return claimKey(ctx, db, row, now) // another request took it over first
	}
	requestHash := row.RequestHash
	*row = existing
	if existing.RequestHash != requestHash {
		row.State = "mismatch"
	}
	return false, nil
}

func replay(c *fiber.Ctx, row *models.IdempotencyKey) error {
	switch row.State {
	case "mismatch":
		return NewProblem(fiber.StatusUnprocessableEntity, "idempotency_key_reused",
			"This Idempotency-Key was used with a different request; use a new key for a new request.")
	case models.IdemInFlight:
		return errKeyInFlight
	}
	if row.ContentType == secretWithheld {
		return NewProblem(fiber.StatusConflict, "idempotent_response_withheld",
			"The request with this Idempotency-Key already succeeded. Its response held a secret, which is never stored, so it cannot be replayed.")
	}
	c.Set(HeaderIdempotentReplayed, "true")
	if row.ContentType != "" {
		c.Set(fiber.HeaderContentType, row.ContentType)
	}
	if row.Location != "" {
		c.Set(fiber.HeaderLocation, row.Location)
	}
	return c.Status(row.StatusCode).Send(row.Body)
}

// printableASCII tells whether s holds only printable ASCII characters:
// an Idempotency-Key is stored and compared as text, and control
// characters (NUL above all) have no place in it.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestHash fingerprints what makes two requests "the same": method, path
// with query, and body.
func requestHash(c *fiber.Ctx) string {
	h := sha256.New()
	h.Write([]byte(c.Method()))
	h.Write([]byte{0})
	h.Write(c.Request().URI().RequestURI())
	h.Write([]byte{0})
	h.Write(c.Body())
	return hex.EncodeToString(h.Sum(nil))
}

// PurgeIdempotencyKeys deletes expired keys; the API runs it periodically.
func PurgeIdempotencyKeys(ctx context.Context, db *gorm.DB, now time.Time) (int64, error) {
	res := db.WithContext(ctx).Where("expires_at < ?", now).Delete(&models.IdempotencyKey{})
	return res.RowsAffected, res.Error
}
