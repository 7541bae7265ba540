package web

import (
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
)

// InFlight counts the requests a process is serving, so that background
// work sharing its cores can give way while the API is saturated (the
// outbox relay under `suite dev`: outbox.Starter.YieldTo).
type InFlight struct{ n atomic.Int64 }

// inFlightKey is the request local that holds the InFlight counting it.
type inFlightKey struct{}

// Middleware counts each request while its handlers run; mount it first.
func (f *InFlight) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		f.n.Add(1)
		defer f.n.Add(-1)
		c.Locals(inFlightKey{}, f)
		return c.Next()
	}
}

// Waiting takes c out of the in-flight count while it only waits — for a
// workflow, under Prefer: wait — rather than works; it counts again once
// the returned function is called. Waiters are no load, and the work they
// wait for may be what gives way to a busy API.
func Waiting(c *fiber.Ctx) (resume func()) {
	f, _ := c.Locals(inFlightKey{}).(*InFlight)
	if f == nil {
		return func() {}
	}
	f.n.Add(-1)
	return func() { f.n.Add(1) }
}

// Begin counts one request served outside Fiber (a message the SMTP
// listener is receiving) until the returned function is called.
func (f *InFlight) Begin() (done func()) {
	f.n.Add(1)
	return func() { f.n.Add(-1) }
}

// Load is the number of requests in flight now.
func (f *InFlight) Load() int64 { return f.n.Load() }
