package web

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// InFlight counts the requests a process is serving, so that background
// work sharing its cores can give way while the API is saturated (the
// outbox relay under `suite dev`: outbox.Starter.YieldTo), and, when made
// with a limit (NewInFlight), admits at most that many at once.
type InFlight struct {
	n atomic.Int64
	// slots, when not nil, holds a token for every request admitted:
	// the rest wait for one, in order, for at most queueWait.
	slots     chan struct{}
	queueWait time.Duration
}

// NewInFlight is an InFlight that serves at most limit requests at once
// (0: no limit); the rest wait their turn, and one that waited queueWait
// is answered 503 with Retry-After.
//
// Why: under `suite dev` the API, the worker and the Temporal server share
// the process and its cores, and Go's scheduler shares them out per
// goroutine. Sixty-four connections reading at once were sixty-four
// runnable handlers (and as many busy PostgreSQL backends) against the
// handful of goroutines that carry an accepted lead through its workflow:
// the pipeline behind the intake got a sliver of the CPU, and a lead took
// 12 s to be scored (docs/decisions.md, "Admission"). Waiting handlers take
// no CPU, so with the API's share bounded the pipeline keeps its pace
// while the reads queue for milliseconds.
func NewInFlight(limit int, queueWait time.Duration) *InFlight {
	f := &InFlight{queueWait: queueWait}
	if limit > 0 {
		f.slots = make(chan struct{}, limit)
	}
	return f
}

// inFlightKey is the request local that holds the InFlight counting it.
type inFlightKey struct{}

// errOverloaded answers a request that waited its whole turn in vain.
var errOverloaded = NewProblem(fiber.StatusServiceUnavailable, "overloaded",
	"The server is busy and could not start this request in time; nothing was done. Retry after the time in Retry-After.")

// Middleware admits each request (NewInFlight) and counts it while its
// handlers run; mount it first.
func (f *InFlight) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !f.acquire(c.UserContext()) {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(1))
			return errOverloaded
		}
		f.n.Add(1)
		defer func() {
			f.n.Add(-1)
			f.release()
		}()
		c.Locals(inFlightKey{}, f)
		return c.Next()
	}
}

// acquire takes a slot, waiting for at most queueWait; without a limit it
// always succeeds at once.
func (f *InFlight) acquire(ctx context.Context) bool {
	if f.slots == nil {
		return true
	}
	select {
	case f.slots <- struct{}{}:
		return true
	default:
	}
	wait := time.NewTimer(f.queueWait)
	defer wait.Stop()
	select {
	case f.slots <- struct{}{}:
		return true
	case <-wait.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (f *InFlight) release() {
	if f.slots != nil {
		<-f.slots
	}
}

// Waiting takes c out of the in-flight count while it only waits — for a
// workflow, under Prefer: wait — rather than works, and gives its slot to
// the next request; it counts again, once it has a slot again, when the
// returned function is called. Waiters are no load, and the work they
// wait for may be what gives way to a busy API.
func Waiting(c *fiber.Ctx) (resume func()) {
	f, _ := c.Locals(inFlightKey{}).(*InFlight)
	if f == nil {
		return func() {}
	}
	f.n.Add(-1)
	f.release()
	return func() {
		// Its turn comes without the queue's bound: the request was
		// admitted once, and what it waited for is done.
		if f.slots != nil {
			f.slots <- struct{}{}
		}
		f.n.Add(1)
	}
}

// Begin counts one request served outside Fiber (a message the SMTP
// listener is receiving) until the returned function is called.
func (f *InFlight) Begin() (done func()) {
	f.n.Add(1)
	return func() { f.n.Add(-1) }
}

// Load is the number of requests in flight now.
func (f *InFlight) Load() int64 { return f.n.Load() }
