package web

import (
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
)

// InFlight counts the requests a process is serving, so that background
// work sharing its cores can give way while the API is saturated (the
// outbox relay under `suite dev`: outbox.Starter.YieldTo).
type InFlight struct{ n atomic.Int64 }

// Middleware counts each request while its handlers run; mount it first.
func (f *InFlight) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		f.n.Add(1)
		defer f.n.Add(-1)
		return c.Next()
	}
}

// Load is the number of requests in flight now.
func (f *InFlight) Load() int64 { return f.n.Load() }
