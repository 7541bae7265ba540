package outbox

import (
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/business-suite/suite/models"
)

// The relay's pacing while the process has more pressing work: the flood
// meter that tells which organizations record rows faster than FloodRate,
// and the yield rate their rows are held to while the process is busy.

// YieldTo makes the relay give way to the process's own requests: while
// busy reports true, the rows of organizations that this process saw
// record more than FloodRate rows a second (in the last second) are
// dispatched at most perSecond a second together; every other row, and
// every row once busy reports false, goes at full Concurrency. Call it
// before Run.
//
// `suite dev` runs the API, the worker and the Temporal server on the same
// cores, and every workflow the relay starts takes a share of them: under a
// flood of submissions the pipeline behind the intake would slow the
// intake's own accept. Accepting — the durable step the sender waits for —
// comes first; the flood's starts wait in the outbox, a floor of perSecond
// keeps them moving, and the backlog drains at full speed once the load
// eases. A light pipeline — another organization's intake beside the
// flood, or a steady 50 leads a second while reads saturate the API — is
// not held back: its workflows cost the API little, and its senders wait
// for their leads.
//
// While it holds rows back, the relay passes once a second (each pass
// dispatches up to a second's worth of the yield rate) and is not woken by
// the flooding organizations' commits: a pass reads the due rows in turns
// across organizations, which costs more the larger the backlog, and one a
// commit would spend the cores the yield is there to free.
func (s *Starter) YieldTo(busy func() bool, perSecond float64) {
	s.busy, s.yield = busy, rate.NewLimiter(rate.Limit(perSecond), max(1, int(math.Ceil(perSecond))))
	s.floods = &floods{orgs: map[string]*floodMeter{}}
}

// FloodRate is how many outbox rows a second an organization records
// before the relay paces its rows while the process is busy (YieldTo):
// twice the steady intake that `make bench` measures.
const FloodRate = 100

// mayDispatch tells whether row may be dispatched now: always, unless the
// process is busy and row's organization floods, and then only within the
// yield rate.
func (s *Starter) mayDispatch(row *models.WorkflowStart) bool {
	if s.busy == nil || !s.floods.flooding(row.OrgID, time.Now()) || !s.busy() || s.yield.Allow() {
		return true
	}
	s.yields.Inc()
	return false
}

// recorded notes that a row of orgID was recorded (YieldTo's flood meter)
// and tells whether its commit should wake the relay: not while the relay
// holds the flooding organization's rows back (YieldTo).
func (s *Starter) recorded(orgID string) (wake bool) {
	if s.floods == nil {
		return true
	}
	flooding := s.floods.note(orgID, time.Now())
	return !s.heldBack.Load() || !flooding
}

// floods meters the rows each organization records in this process.
type floods struct {
	mu   sync.Mutex
	orgs map[string]*floodMeter
}

// floodMeter is one organization's: a token bucket of FloodRate a second,
// and until when the organization counts as flooding (a second after its
// bucket last ran dry).
type floodMeter struct {
	bucket *rate.Limiter
	until  time.Time
}

// note counts a row of orgID and tells whether the organization floods.
func (f *floods) note(orgID string, now time.Time) (flooding bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.orgs[orgID]
	if m == nil {
		if len(f.orgs) >= maxMeteredOrgs {
			f.prune(now)
		}
		m = &floodMeter{bucket: rate.NewLimiter(FloodRate, FloodRate)}
		// The key outlives the request whose row it names.
		f.orgs[strings.Clone(orgID)] = m
	}
	if !m.bucket.AllowN(now, 1) {
		m.until = now.Add(time.Second)
	}
	return now.Before(m.until)
}

func (f *floods) flooding(orgID string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.orgs[orgID]
	return m != nil && now.Before(m.until)
}

// maxMeteredOrgs bounds the meters kept; past it, the meters of
// organizations with a full bucket (quiet for a second) are dropped.
const maxMeteredOrgs = 10_000

func (f *floods) prune(now time.Time) {
	for org, m := range f.orgs {
		if m.bucket.TokensAt(now) >= FloodRate && !now.Before(m.until) {
			delete(f.orgs, org)
		}
	}
}
