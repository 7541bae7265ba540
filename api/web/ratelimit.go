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
	if key == nil {
		key = func(c *fiber.Ctx) string { return c.IP() }
	}
	return limiter.New(limiter.Config{
		Max:               max,
		Expiration:        window,
		LimiterMiddleware: limiter.SlidingWindow{},
		KeyGenerator:      func(c *fiber.Ctx) string { return name + "\x00" + key(c) },
		LimitReached:      limitReached(window),
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
	return limiter.New(limiter.Config{
		Max:                    max,
		Expiration:             window,
		LimiterMiddleware:      limiter.SlidingWindow{},
		SkipSuccessfulRequests: true,
		KeyGenerator:           func(c *fiber.Ctx) string { return name + "\x00" + key(c) },
		LimitReached:           limitReached(window),
	})
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
