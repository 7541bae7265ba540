package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The web-form intakes the fault and capacity runs send (sender), and the
// leads they must make: each accepted intake exactly one lead.

// sender sends web-form intakes with a crm_ key, alternating between the
// APIs. Each intake has its own Idempotency-Key; a request that fails (no
// answer, 5xx, 409, 429) is retried with the same key on the other API, as
// a client behind a load balancer would, until it is accepted (202) or a
// minute has passed.
type sender struct {
	t        *e2e
	source   string
	conc     int                          // concurrent clients
	pace     time.Duration                // pause of each client between intakes
	max      int                          // intakes to send (at most)
	until    time.Time                    // stop starting intakes after this (zero: no limit)
	accepted func(n int64)                // called after each acceptance with the count so far
	answered func(r *response, err error) // called with every answer (or error), if set

	sent, ok, refused, retries atomic.Int64
	mu                         sync.Mutex
	sample                     string    // the first refusal
	ended                      time.Time // when run returned: the last intake answered
}

func (s *sender) run(ctx context.Context) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range s.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := int(next.Add(1)) - 1
				if n >= s.max || (!s.until.IsZero() && time.Now().After(s.until)) {
					return
				}
				s.sent.Add(1)
				if s.one(ctx, n) {
					got := s.ok.Add(1)
					if s.accepted != nil {
						s.accepted(got)
					}
				}
				if s.pace > 0 {
					_ = sleep(ctx, s.pace)
				}
			}
		}()
	}
	wg.Wait()
	s.ended = time.Now()
}

// one sends intake n until it is accepted or refused for good.
func (s *sender) one(ctx context.Context, n int) bool {
	key := fmt.Sprintf("%s-%d", s.source, n)
	began := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.retries.Add(1)
			if sleep(ctx, 200*time.Millisecond) != nil {
				return false
			}
		}
		r, err := request(ctx, s.t.http, "POST", s.t.base((n+attempt)%2)+"/crm/leads/webhook", intakeBody(s.source, n),
			"x-api-key", s.t.crmKey, "Idempotency-Key", key)
		if s.answered != nil {
			s.answered(r, err)
		}
		if err == nil && r.status == http.StatusAccepted {
			return true
		}
		retry := err != nil || r.status >= 500 || r.status == http.StatusConflict || r.status == http.StatusTooManyRequests
		if !retry || time.Since(began) > time.Minute {
			what := ""
			if err != nil {
				what = err.Error()
			} else {
				what = fmt.Sprintf("%d %s", r.status, strings.TrimSpace(string(r.body)))
			}
			s.mu.Lock()
			if s.sample == "" {
				s.sample = what
			}
			s.mu.Unlock()
			s.refused.Add(1)
			return false
		}
	}
}

// awaitLeads waits until every accepted intake of source is a processed
// intake and a lead, or nothing has moved for a minute, and then a moment
// longer to see late duplicates.
func (t *e2e) awaitLeads(ctx context.Context, source string, accepted int) (leadCount, error) {
	var c leadCount
	progress, last := time.Now(), -1
	for {
		var err error
		if c, err = t.countLeads(ctx, source); err != nil {
			return c, err
		}
		if c.emails >= accepted && c.processed >= accepted {
			break
		}
		if c.emails+c.processed != last {
			progress, last = time.Now(), c.emails+c.processed
		}
		if time.Since(progress) > time.Minute {
			return c, fmt.Errorf("%d accepted intakes: %d leads, %d processed, and nothing moved for a minute", accepted, c.emails, c.processed)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return c, err
		}
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return c, err
	}
	return t.countLeads(ctx, source)
}

// checkLeads fails unless accepted intakes made exactly accepted leads.
func checkLeads(c leadCount, accepted int) error {
	if dup := c.leads - c.emails; dup != 0 || c.leads != accepted || c.processed != accepted {
		return fmt.Errorf("%d accepted intakes made %d leads (%d duplicated, %d lost; %d intakes processed)",
			accepted, c.leads, dup, accepted-c.emails, c.processed)
	}
	return nil
}

// quarterAccepted starts sending n intakes of source (8 clients) and
// returns once a quarter of them is accepted, the moment a fault strikes;
// done closes when the last one is answered.
func (t *e2e) quarterAccepted(ctx context.Context, source string, n int) (s *sender, done chan struct{}, began time.Time, err error) {
	trigger := make(chan struct{})
	var once sync.Once
	s = &sender{t: t, source: source, conc: 8, max: n, accepted: func(got int64) {
		if got >= int64(n/4) {
			once.Do(func() { close(trigger) })
		}
	}}
	done = make(chan struct{})
	began = time.Now()
	go func() { s.run(ctx); close(done) }()
	select {
	case <-trigger:
		return s, done, began, nil
	case <-done:
		return nil, nil, began, fmt.Errorf("the intakes ended before a quarter was accepted (%d of %d; first refusal: %s)", s.ok.Load(), n, s.sample)
	}
}

// leadTimeline counts the leads of source made in each period from start
// on (the database's clock stamps them), e.g. "310, 120, 95".
func (t *e2e) leadTimeline(ctx context.Context, source string, start time.Time, period time.Duration) (string, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT floor(extract(epoch FROM created_at - $3) / $4)::int AS b, count(*)
		FROM leads WHERE org_id = $1 AND source = $2 AND created_at >= $3 GROUP BY b ORDER BY b`,
		t.orgID, source, start, period.Seconds())
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var b, n int
		if err := rows.Scan(&b, &n); err != nil {
			return "", err
		}
		for len(parts) < b {
			parts = append(parts, "0")
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", "), rows.Err()
}
