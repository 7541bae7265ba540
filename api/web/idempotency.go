package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/models"
)

// Idempotency headers.
const (
	HeaderIdempotencyKey     = "Idempotency-Key"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
	idempotencyRetention     = 24 * time.Hour
	idempotencyInFlightLease = 2 * time.Minute
	maxIdempotencyKeyLength  = 255
	// secretWithheld marks a stored outcome whose body was not kept.
	secretWithheld = "(secret withheld)"
)

// IdempotencyOptions tunes the middleware.
type IdempotencyOptions struct {
	// Scope names whose keys these are, so two callers' keys never collide.
	// The default hashes the credential headers.
	Scope func(c *fiber.Ctx) string
	// Now is the clock (tests move it).
	Now func() time.Time
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
		opts.Scope = CredentialScope
	}
	if opts.Now == nil {
		opts.Now = models.Now
	}
	return func(c *fiber.Ctx) error {
		key := c.Get(HeaderIdempotencyKey)
		if c.Method() != fiber.MethodPost || key == "" {
			return c.Next()
		}
		if len(key) > maxIdempotencyKeyLength {
			return models.Invalid(models.FieldError{Field: HeaderIdempotencyKey, Code: "max", Message: "Must be at most 255 characters long."})
		}
		ctx := c.UserContext()
		now := opts.Now()
		row := models.IdempotencyKey{
			Scope:       opts.Scope(c),
			Key:         string([]byte(key)),
			RequestHash: requestHash(c),
			State:       models.IdemInFlight,
			CreatedAt:   now,
			ExpiresAt:   now.Add(idempotencyRetention),
		}
		claimed, err := claimKey(ctx, db, &row, now)
		if err != nil {
			return err
		}
		if !claimed {
			return replay(c, &row)
		}

		handlerErr := c.Next()
		if handlerErr != nil {
			if err := c.App().ErrorHandler(c, handlerErr); err != nil {
				return err
			}
		}
		// Record the outcome even if the client went away meanwhile.
		store := db.WithContext(context.WithoutCancel(ctx)).Model(&models.IdempotencyKey{}).
			Where("scope = ? AND key = ?", row.Scope, row.Key)
		resp := c.Response()
		status := resp.StatusCode()
		if status >= 500 || status == fiber.StatusTooManyRequests {
			// Not an outcome: the retry must run again.
			return store.Delete(&models.IdempotencyKey{}).Error
		}
		if status < 300 && string(resp.Header.Peek(fiber.HeaderCacheControl)) == "no-store" {
			// The response holds a secret (tokens, a new API key): it is
			// never written down. The key still records that the request
			// succeeded, so a retry cannot repeat it.
			return store.Updates(map[string]any{"state": models.IdemDone, "status_code": status, "content_type": secretWithheld, "body": nil}).Error
		}
		err = store.Updates(map[string]any{
			"state":        models.IdemDone,
			"status_code":  resp.StatusCode(),
			"content_type": string(resp.Header.ContentType()),
			"location":     string(resp.Header.Peek(fiber.HeaderLocation)),
			"body":         append([]byte(nil), resp.Body()...),
		}).Error
		if err != nil {
			// The request succeeded; keep its response. The key stays in
			// flight and is taken over after its lease.
			slog.ErrorContext(ctx, "storing an idempotent response failed", "key", row.Key, "error", err)
		}
		return nil
	}
}

// claimKey inserts the in-flight row. When the key already exists it loads
// it into row and reports false — unless the existing row has expired, or
// its request died in flight (lease over), in which case it is taken over.
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
		(existing.State == models.IdemInFlight && existing.CreatedAt.Before(now.Add(-idempotencyInFlightLease)))
	if stale {
		res := q.Model(&models.IdempotencyKey{}).
			Where("scope = ? AND key = ? AND created_at = ?", existing.Scope, existing.Key, existing.CreatedAt).
			Updates(map[string]any{"request_hash": row.RequestHash, "state": models.IdemInFlight, "status_code": 0,
				"content_type": "", "location": "", "body": nil, "created_at": row.CreatedAt, "expires_at": row.ExpiresAt})
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
		return NewProblem(fiber.StatusConflict, "idempotency_key_in_flight",
			"A request with this Idempotency-Key is still being processed; retry shortly.").WithRetryAfter(1)
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

// CredentialScope scopes keys to the credential presented, so the same key
// from two tenants never collides. Credential-less callers share one scope.
func CredentialScope(c *fiber.Ctx) string {
	h := sha256.New()
	for _, name := range []string{fiber.HeaderAuthorization, "X-Api-Key", "X-Workspace-Id"} {
		h.Write(c.Request().Header.Peek(name))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
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
