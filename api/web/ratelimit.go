package web

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// RateLimit limits requests per key (by default the client IP) to max per
// window, answering 429 problem+json with Retry-After beyond it. Counters
// live in db, so the limit holds across every API replica.
func RateLimit(db *gorm.DB, name string, max int, window time.Duration, key func(c *fiber.Ctx) string) fiber.Handler {
	return Limit{Name: name, Max: max, Window: window, Key: key}.Handler(db)
}

// RateLimitFailures is RateLimit counting only failed requests (status ≥
// 400): e.g. wrong passwords per account, so that a user who signs in
// successfully is never locked out by the limiter.
func RateLimitFailures(db *gorm.DB, name string, max int, window time.Duration, key func(c *fiber.Ctx) string) fiber.Handler {
	return Limit{Name: name, Max: max, Window: window, Key: key, FailuresOnly: true}.Handler(db)
}

// Limit is a rate limit with every option; RateLimit and RateLimitFailures
// are its common shapes.
type Limit struct {
	Name   string
	Max    int
	Window time.Duration
	// Key buckets requests (default: the client address, ClientIP).
	Key func(c *fiber.Ctx) string
	// Only, when set, limits just the requests it accepts; the others pass.
	Only func(c *fiber.Ctx) bool
	// FailuresOnly counts only requests answered with a status ≥ 400 (put
	// ErrorsAsResponses after the limiter so that it sees the status); a
	// request counts while it runs, so that requests sent at once cannot
	// all pass before the first failure is counted.
	FailuresOnly bool
	// Lease, above 1, lets each process count its requests against the
	// shared counter in blocks of up to Lease rather than one statement per
	// request: for a high limit on one busy bucket (an integration's key),
	// whose counter row every request would otherwise update in turn. A
	// block is counted in full when it is taken, and its unused requests
	// lapse when the fixed window ends, so the limit never lets more
	// requests through than Max; it may refuse up to Lease a window early
	// for each process. Not with FailuresOnly.
	Lease int
	// Now is the clock (tests move it; models.Now by default).
	Now func() time.Time
}

// Handler is the limit as middleware, counting in db's rate_counters: the
// requests of the sliding window that ends now are estimated from the
// current fixed window's count and the previous one's, weighted by how much
// of it is still inside (one statement per request, or per block with
// Lease). Refused requests count too, so a client that keeps hammering
// stays refused. A database that cannot count answers the request with its
// error (a 503 when it is gone): a limit that guards sign-in does not open
// when the database fails.
func (l Limit) Handler(db *gorm.DB) fiber.Handler {
	key := l.Key
	if key == nil {
		key = ClientIP
	}
	now := l.Now
	if now == nil {
		now = models.Now
	}
	var leases *leaseTable
	if l.Lease > 1 && !l.FailuresOnly {
		leases = &leaseTable{limit: l, buckets: map[string]*lease{}}
	}
	return func(c *fiber.Ctx) error {
		if l.Only != nil && !l.Only(c) {
			return c.Next()
		}
		// The bucket is concatenated, a string of its own (not fasthttp's
		// buffer): the lease table may keep it as a key.
		ctx, bucket, at := c.UserContext(), l.Name+"|"+key(c), now()
		if leases != nil {
			if err := leases.take(ctx, db, bucket, at); err != nil {
				return err
			}
			return c.Next()
		}
		rate, err := models.HitRate(ctx, db, bucket, l.Window, at, 1)
		if err != nil {
			return err
		}
		if rate.Estimate() > float64(l.Max) {
			return limitReached(rate, at)
		}
		if !l.FailuresOnly {
			return c.Next()
		}
		// Only failures count, yet each request is counted before it runs
		// and given back once it has succeeded: counted after it failed,
		// requests sent together would all find the count below Max before
		// any of them was added (a burst of password guesses, each slowed
		// by argon2id, would all be tried).
		if err := c.Next(); err != nil {
			return err
		}
		if c.Response().StatusCode() < 400 {
			// In the window it was counted in (at). A refund that fails
			// leaves the request counted, which can only refuse early; the
			// answer already written stands.
			_, _ = models.HitRate(ctx, db, bucket, l.Window, at, -1)
		}
		return nil
	}
}

// leaseTable holds one process's leased requests, by bucket.
type leaseTable struct {
	limit   Limit
	mu      sync.Mutex
	buckets map[string]*lease
}

// maxLeasedBuckets bounds a lease table; past it, the table starts over
// (what its leases held is lost, which only ever refuses early).
const maxLeasedBuckets = 10_000

// lease is the requests a process may still serve for one bucket in one
// fixed window, already counted in the database.
type lease struct {
	mu     sync.Mutex // held while a block is taken: one statement at a time per bucket
	window time.Time
	left   int
	// size is the next block's: Lease, or 1 once a block was cut short by
	// the limit (near it, every request is counted, refused ones too).
	size int
}

// take serves one request of bucket from its lease, taking a new block
// from the database when the lease is spent; it returns the 429 when the
// limit leaves none.
func (t *leaseTable) take(ctx context.Context, db *gorm.DB, bucket string, at time.Time) error {
	t.mu.Lock()
	b := t.buckets[bucket]
	if b == nil {
		if len(t.buckets) >= maxLeasedBuckets {
			t.buckets = map[string]*lease{}
		}
		b = &lease{}
		t.buckets[bucket] = b
	}
	t.mu.Unlock()

	b.mu.Lock()
	defer b.mu.Unlock()
	// A new fixed window starts a new lease. A request that read the clock
	// just before another rolled the window over is served, and counted,
	// in the new one: the lease never flips back.
	if window := at.Truncate(t.limit.Window); window.After(b.window) {
		b.window, b.left, b.size = window, 0, t.limit.Lease
	}
	if at.Before(b.window) {
		at = b.window
	}
	if b.left > 0 {
		b.left--
		return nil
	}
	rate, err := models.HitRate(ctx, db, bucket, t.limit.Window, at, b.size)
	if err != nil {
		return err
	}
	// The block is in the count; whatever of it lies past the limit is not
	// granted.
	granted := b.size - int(math.Ceil(rate.Estimate()-float64(t.limit.Max)))
	granted = min(granted, b.size)
	if granted < b.size {
		b.size = 1
	}
	if granted < 1 {
		return limitReached(rate, at)
	}
	b.left = granted - 1
	return nil
}

// limitReached is the 429, with Retry-After until the current fixed
// window ends (when the estimate next drops by the previous window's share).
func limitReached(rate models.Rate, now time.Time) error {
	retry := max(1, int(math.Ceil(rate.WindowEnd.Sub(now).Seconds())))
	return NewProblem(fiber.StatusTooManyRequests, "rate_limited",
		"Too many requests; retry after the time in Retry-After.").WithRetryAfter(retry)
}

// ErrorsAsResponses writes a returned error as its problem response right
// away, so that middleware earlier in the chain (such as RateLimitFailures)
// sees the final status code.
func ErrorsAsResponses(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		return c.App().ErrorHandler(c, err)
	}
	return nil
}
