package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
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
// claim, on db (the request's transaction, or the pool after it). A
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

// heartbeat renews the claim on row every third of the lease until the
// returned stop is called. Stop does not wait for a renewal under way: on
// SQLite it may be queued behind the request's own transaction. The renewal names
// the claim by its created_at, so a claim that was taken over meanwhile is
// never extended by its former holder.
func heartbeat(ctx context.Context, db *gorm.DB, row *models.IdempotencyKey, opts RequestOptions) (stop func()) {
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

// newClaim is the in-flight claim of key, or a 422 naming what is wrong
// with it.
func newClaim(c *fiber.Ctx, key string, opts RequestOptions) (*models.IdempotencyKey, error) {
	if len(key) > maxIdempotencyKeyLength {
		return nil, models.Invalid(models.FieldError{Field: HeaderIdempotencyKey, Code: "max", Message: "Must be at most 255 characters long."})
	}
	if !printableASCII(key) {
		return nil, models.Invalid(models.FieldError{Field: HeaderIdempotencyKey, Code: "printable",
			Message: "Must be printable ASCII (letters, digits, punctuation, spaces)."})
	}
	now := opts.Now()
	return &models.IdempotencyKey{
		Scope:       strings.Clone(opts.Scope(c)),
		Key:         strings.Clone(key),
		RequestHash: requestHash(c),
		State:       models.IdemInFlight,
		CreatedAt:   now,
		ExpiresAt:   now.Add(idempotencyRetention),
		LockedUntil: now.Add(opts.Lease),
	}, nil
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
// with query, and body. A body the server streams (an upload over
// BodyLimit) is not read here — that would hold it whole in memory — and
// stands in by its length and media type (its multipart boundary, which
// a client draws anew for each body, included).
func requestHash(c *fiber.Ctx) string {
	h := sha256.New()
	h.Write([]byte(c.Method()))
	h.Write([]byte{0})
	h.Write(c.Request().URI().RequestURI())
	h.Write([]byte{0})
	if c.Request().IsBodyStream() {
		h.Write(c.Request().Header.ContentType())
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(c.Request().Header.ContentLength())))
	} else {
		h.Write(c.Body())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PurgeIdempotencyKeys deletes expired keys; the API runs it periodically.
func PurgeIdempotencyKeys(ctx context.Context, db *gorm.DB, now time.Time) (int64, error) {
	res := db.WithContext(ctx).Where("expires_at < ?", now).Delete(&models.IdempotencyKey{})
	return res.RowsAffected, res.Error
}
