package web

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
)

// RateLimit limits requests per key (by default the client IP) to max per
// window, answering 429 problem+json with Retry-After beyond it. Counters
// are per process: with N API replicas the effective limit is N×max, which
// is the intent for abuse protection of public endpoints (see
// docs/decisions.md).
func RateLimit(name string, max int, window time.Duration, key func(c *fiber.Ctx) string) fiber.Handler {
	return Limit{Name: name, Max: max, Window: window, Key: key}.Handler()
}

// Limit is a rate limit with every option; RateLimit and RateLimitFailures
// are its common shapes.
type Limit struct {
	Name   string
	Max    int
	Window time.Duration
	// Key buckets requests (default: the client IP).
	Key func(c *fiber.Ctx) string
	// Only, when set, limits just the requests it accepts; the others pass.
	Only func(c *fiber.Ctx) bool
	// FailuresOnly counts only requests answered with a status ≥ 400 (put
	// ErrorsAsResponses after the limiter so that it sees the status).
	FailuresOnly bool
}

// Handler is the limit as middleware.
func (l Limit) Handler() fiber.Handler {
	key := l.Key
	if key == nil {
		key = func(c *fiber.Ctx) string { return c.IP() }
	}
	var skip func(c *fiber.Ctx) bool
	if l.Only != nil {
		skip = func(c *fiber.Ctx) bool { return !l.Only(c) }
	}
	name := l.Name
	return limiter.New(limiter.Config{
		Next:                   skip,
		Max:                    l.Max,
		Expiration:             l.Window,
		LimiterMiddleware:      limiter.SlidingWindow{},
		SkipSuccessfulRequests: l.FailuresOnly,
		KeyGenerator:           func(c *fiber.Ctx) string { return name + "\x00" + key(c) },
		LimitReached:           limitReached(l.Window),
	})
}

func limitReached(window time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		retry, _ := strconv.Atoi(string(c.Response().Header.Peek(fiber.HeaderRetryAfter)))
		if retry < 1 {
			retry = int(window.Seconds())
		}
		return NewProblem(fiber.StatusTooManyRequests, "rate_limited",
			"Too many requests; retry after the time in Retry-After.").WithRetryAfter(retry)
	}
}

// RateLimitFailures is RateLimit counting only failed requests (status ≥
// 400): e.g. wrong passwords per account, so that a user who signs in
// successfully is never locked out by the limiter.
func RateLimitFailures(name string, max int, window time.Duration, key func(c *fiber.Ctx) string) fiber.Handler {
	return Limit{Name: name, Max: max, Window: window, Key: key, FailuresOnly: true}.Handler()
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
