package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

func newApp() *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	app.Use(web.RequestIDMiddleware(), recover.New())
	return app
}

type result struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, app *fiber.App, method, path, body string, headers ...string) result {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := app.Test(req, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, string(b)}
}

type profile struct {
	City string `json:"city" validate:"omitempty,min=2"`
}

type contactReq struct {
	profile
	Name  string   `json:"name" validate:"required,notblank,max=5"`
	Email string   `json:"email" validate:"omitempty,email"`
	Age   int      `json:"age" validate:"gte=0"`
	Score *float64 `json:"score"`
}

func TestDecodeListsEveryBadField(t *testing.T) {
	app := newApp()
	app.Post("/x", func(c *fiber.Ctx) error {
		var r contactReq
		if err := web.Decode(c, &r); err != nil {
			return err
		}
		return c.JSON(r)
	})
	cases := []struct {
		name, body, ctype string
		status            int
		code              string
		fields            []string
	}{
		{"ok", `{"name":"Ada","email":"ada@example.com"}`, "", 200, "", nil},
		{"unknown fields all listed", `{"name":"Ada","nickname":"x","shoe":1}`, "", 422, "validation_failed", []string{`"field":"nickname"`, `"field":"shoe"`, "unknown_field"}},
		{"wrong types all listed", `{"name":5,"age":"old"}`, "", 422, "validation_failed", []string{`"field":"name"`, `"field":"age"`, "invalid_type"}},
		{"rules all listed", `{"name":"Adalbert","email":"nope","age":-1}`, "", 422, "validation_failed", []string{`"field":"name"`, `"field":"email"`, `"field":"age"`}},
		{"required", `{}`, "", 422, "validation_failed", []string{`"field":"name"`, `"code":"required"`}},
		{"blank", `{"name":"   "}`, "", 422, "validation_failed", []string{`"field":"name"`, `"code":"notblank"`}},
		{"embedded struct fields keep their JSON name", `{"name":"Ada","city":"X"}`, "", 422, "validation_failed", []string{`"field":"city"`}},
		{"malformed", `{"name":`, "", 400, "malformed_json", nil},
		{"not an object", `[1,2]`, "", 400, "malformed_json", nil},
		{"two objects", `{"name":"a"}{"name":"b"}`, "", 400, "malformed_json", nil},
		{"not json", `name=Ada`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.ctype != "" {
				headers = []string{"Content-Type", tc.ctype}
			}
			r := send(t, app, "POST", "/x", tc.body, headers...)
			if r.status != tc.status {
				t.Fatalf("status %d want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != "" && !strings.Contains(r.body, `"code":"`+tc.code+`"`) {
				t.Fatalf("code %s missing: %s", tc.code, r.body)
			}
			if tc.status >= 400 && r.header.Get("Content-Type") != web.ContentTypeProblem {
				t.Fatalf("content type %q", r.header.Get("Content-Type"))
			}
			for _, f := range tc.fields {
				if !strings.Contains(r.body, f) {
					t.Errorf("%s missing from %s", f, r.body)
				}
			}
		})
	}
}

func TestErrorsNeverLeakInternals(t *testing.T) {
	app := newApp()
	app.Get("/boom", func(*fiber.Ctx) error { return fmt.Errorf("dial tcp 10.0.0.7:5432: secret detail") })
	app.Get("/panic", func(*fiber.Ctx) error { panic("secret panic") })
	app.Get("/limit", func(*fiber.Ctx) error {
		return models.Err(models.ErrLimit, "seat_limit_reached", "All 2 seats are in use.")
	})
	for _, path := range []string{"/boom", "/panic"} {
		r := send(t, app, "GET", path, "")
		if r.status != 500 || strings.Contains(r.body, "secret") || !strings.Contains(r.body, `"code":"internal_error"`) {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		if r.header.Get(web.HeaderRequestID) == "" || !strings.Contains(r.body, r.header.Get(web.HeaderRequestID)) {
			t.Fatalf("%s: request id missing: %v %s", path, r.header, r.body)
		}
	}
	r := send(t, app, "GET", "/limit", "")
	if r.status != 402 || !strings.Contains(r.body, `"code":"seat_limit_reached"`) {
		t.Fatalf("limit: %d %s", r.status, r.body)
	}
}

func TestRequestIDIsEchoedOrMinted(t *testing.T) {
	app := newApp()
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	if r := send(t, app, "GET", "/", "", web.HeaderRequestID, "abc-123"); r.header.Get(web.HeaderRequestID) != "abc-123" {
		t.Fatalf("sane id not echoed: %q", r.header.Get(web.HeaderRequestID))
	}
	r := send(t, app, "GET", "/", "", web.HeaderRequestID, "bad id\twith spaces")
	if got := r.header.Get(web.HeaderRequestID); got == "" || strings.Contains(got, " ") {
		t.Fatalf("insane id kept: %q", got)
	}
}

// heldApp is an app behind inFlight whose GET /hold holds each request in
// its handler (after web.Waiting with ?wait=1) until release is closed;
// GET /fast answers at once. hold sends a request to path in the
// background, returns once its handler holds it, and gives its status.
type heldApp struct {
	app              *fiber.App
	entered, release chan struct{}
}

func newHeldApp(inFlight *web.InFlight) *heldApp {
	h := &heldApp{app: newApp(), entered: make(chan struct{}), release: make(chan struct{})}
	h.app.Use(inFlight.Middleware())
	h.app.Get("/hold", func(c *fiber.Ctx) error {
		if c.Query("wait") != "" {
			defer web.Waiting(c)()
		}
		h.entered <- struct{}{}
		<-h.release
		return c.SendString("held")
	})
	h.app.Get("/fast", func(c *fiber.Ctx) error { return c.SendString("ok") })
	return h
}

func (h *heldApp) hold(path string) <-chan int {
	done := make(chan int, 1)
	go func() {
		resp, err := h.app.Test(httptest.NewRequest("GET", path, nil), -1)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-h.entered
	return done
}

// InFlight counts a request while its handlers run, and not after, nor
// while it only waits (web.Waiting).
func TestInFlightCountsRunningRequests(t *testing.T) {
	var inFlight web.InFlight
	h := newHeldApp(&inFlight)
	var held []<-chan int
	for _, path := range []string{"/hold", "/hold", "/hold?wait=1"} {
		held = append(held, h.hold(path))
	}
	if n := inFlight.Load(); n != 2 {
		t.Fatalf("two requests working in their handlers and one waiting, counted %d", n)
	}
	close(h.release)
	for _, done := range held {
		if status := <-done; status != 200 {
			t.Fatalf("status %d", status)
		}
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("every request answered, %d still counted", n)
	}
}

// NewInFlight serves at most its limit at once: a request past it waits
// its turn and, after the queue's wait, is answered 503 with Retry-After;
// a request that only waits (web.Waiting) gives its slot up meanwhile.
func TestInFlightAdmitsAtMostItsLimit(t *testing.T) {
	inFlight := web.NewInFlight(1, 200*time.Millisecond)
	h := newHeldApp(inFlight)
	app, holding := h.app, h.hold
	waiter := holding("/hold?wait=1")
	if r := send(t, app, "GET", "/fast", ""); r.status != 200 {
		t.Fatalf("the only other request works while one waits: status %d, want 200", r.status)
	}
	worker := holding("/hold")
	r := send(t, app, "GET", "/fast", "")
	if r.status != fiber.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, `"overloaded"`) {
		t.Fatalf("a request past the limit for the whole queue wait: status %d, Retry-After %q, body %s; want 503 overloaded with Retry-After 1",
			r.status, r.header.Get("Retry-After"), r.body)
	}
	close(h.release)
	for _, done := range []<-chan int{worker, waiter} {
		if status := <-done; status != 200 {
			t.Fatalf("admitted request answered %d", status)
		}
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("every request answered, %d still counted", n)
	}
	if r := send(t, app, "GET", "/fast", ""); r.status != 200 {
		t.Fatalf("every slot given back: status %d, want 200", r.status)
	}
}

// A leased limit counts blocks, not requests, and still never lets more
// than Max through across replicas: near the limit a block is cut short,
// and from then on every request (refused ones too) is counted singly.
func TestLeasedLimitsNeverExceedTheLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now, start := testClock()
		window := start.Truncate(time.Minute).Add(time.Minute)
		now.Store(&window)
		clock := func() time.Time { return *now.Load() }
		replica := func() *fiber.App {
			app := newApp()
			app.Get("/leased", web.Limit{Name: "leased", Max: 10, Lease: 4, Window: time.Minute, Now: clock}.Handler(db),
				func(c *fiber.Ctx) error { return c.SendString("ok") })
			return app
		}
		hits := func() (n int) {
			t.Helper()
			if err := db.Raw("SELECT COALESCE(SUM(hits), 0) FROM rate_counters WHERE bucket = ?", "leased|0.0.0.0").Row().Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		a, b := replica(), replica()
		statuses := func(app *fiber.App, n int) (out []int) {
			for range n {
				out = append(out, send(t, app, "GET", "/leased", "").status)
			}
			return out
		}
		// Each replica takes a block of 4: two statements for eight requests.
		if got := append(statuses(a, 4), statuses(b, 4)...); !slices.Equal(got, []int{200, 200, 200, 200, 200, 200, 200, 200}) {
			t.Fatalf("first eight: %v", got)
		}
		if n := hits(); n != 8 {
			t.Fatalf("counted %d hits for two blocks", n)
		}
		// A's next block of 4 meets the limit: 2 of it are granted. B's
		// block is refused whole, and from then on B counts singly.
		if got := statuses(a, 1); got[0] != 200 {
			t.Fatalf("ninth: %v", got)
		}
		if got := statuses(b, 2); !slices.Equal(got, []int{429, 429}) {
			t.Fatalf("past the limit on the other replica: %v", got)
		}
		if got := statuses(a, 3); !slices.Equal(got, []int{200, 429, 429}) {
			t.Fatalf("the rest of the cut block, then the limit: %v", got)
		}
		// Refused requests count too: A's cut block (4), B's refused block
		// (4) and the three single refusals.
		if n := hits(); n != 8+4+4+1+2 {
			t.Fatalf("counted %d hits", n)
		}
		// Two windows on the budget is whole again, and what a replica
		// still holds of its block is served even after the other reached
		// the limit: ten requests in all.
		later := window.Add(3 * time.Minute)
		now.Store(&later)
		if got := statuses(a, 6); !slices.Equal(got, []int{200, 200, 200, 200, 200, 200}) {
			t.Fatalf("two windows later: %v", got)
		}
		if got := statuses(b, 3); !slices.Equal(got, []int{200, 200, 429}) {
			t.Fatalf("the other replica's cut block: %v", got)
		}
		if got := statuses(a, 3); !slices.Equal(got, []int{200, 200, 429}) {
			t.Fatalf("the rest of the first replica's block: %v", got)
		}
	})
}

// A limit on failures counts each request while it runs: requests sent
// together, each slow to fail (a password hashed with argon2id), cannot
// all pass the check before the first failure is counted.
func TestFailureLimitHoldsForConcurrentRequests(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		const max, sent = 3, 10
		var entered atomic.Int32
		release := make(chan struct{})
		app := newApp()
		app.Post("/login", web.Limit{Name: "login", Max: max, Window: time.Hour, FailuresOnly: true}.Handler(db),
			web.ErrorsAsResponses, func(c *fiber.Ctx) error {
				entered.Add(1)
				<-release
				return web.NewProblem(401, "invalid_grant", "Wrong password.")
			})
		statuses := make(chan int, sent)
		for range sent {
			go func() {
				req := httptest.NewRequest("POST", "/login", nil)
				resp, err := app.Test(req, -1)
				if err != nil {
					statuses <- 0
					return
				}
				resp.Body.Close()
				statuses <- resp.StatusCode
			}()
		}
		// The refused answer at once; the others wait in the handler.
		got, deadline := map[int]int{}, time.After(10*time.Second)
		for got[429]+int(entered.Load()) < sent {
			select {
			case s := <-statuses:
				got[s]++
			case <-time.After(10 * time.Millisecond): // look at entered again
			case <-deadline:
				t.Fatalf("after 10 s: %d in the handler, answers %v", entered.Load(), got)
			}
		}
		close(release)
		for got[401]+got[429] < sent {
			got[<-statuses]++
		}
		if entered.Load() != max || got[401] != max || got[429] != sent-max {
			t.Fatalf("%d of %d concurrent requests ran (answers %v), want %d", entered.Load(), sent, got, max)
		}
	})
}

// Limits are counted in the database: two replicas (two apps on one
// database) share them, requests alternating between the two.
func TestRateLimitsHoldAcrossReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now, start := testClock()
		window := start.Truncate(time.Minute).Add(time.Minute) // a window's start
		now.Store(&window)
		clock := func() time.Time { return *now.Load() }
		replica := func() *fiber.App {
			app := newApp()
			app.Get("/public", web.Limit{Name: "test", Max: 3, Window: time.Minute, Now: clock}.Handler(db),
				func(c *fiber.Ctx) error { return c.SendString("ok") })
			app.Post("/login", web.Limit{Name: "login", Max: 2, Window: time.Minute, Now: clock, FailuresOnly: true}.Handler(db),
				web.ErrorsAsResponses, func(c *fiber.Ctx) error {
					if c.Query("password") != "right" {
						return web.NewProblem(401, "invalid_grant", "Wrong password.")
					}
					return c.SendString("ok")
				})
			return app
		}
		apps := []*fiber.App{replica(), replica()}
		at := func(d time.Duration) { t := window.Add(d); now.Store(&t) }

		for i := range 3 {
			if r := send(t, apps[i%2], "GET", "/public", ""); r.status != 200 {
				t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
			}
		}
		r := send(t, apps[1], "GET", "/public", "")
		if r.status != 429 || !strings.Contains(r.body, `"code":"rate_limited"`) || r.header.Get("Retry-After") != "60" {
			t.Fatalf("the fourth request, on the other replica: %d %v %s", r.status, r.header, r.body)
		}
		// Half-way through the next window the previous one's 4 hits count
		// for 2: one more request fits, the next does not.
		at(90 * time.Second)
		if r := send(t, apps[0], "GET", "/public", ""); r.status != 200 {
			t.Fatalf("half a window later: %d %s", r.status, r.body)
		}
		if r := send(t, apps[1], "GET", "/public", ""); r.status != 429 || r.header.Get("Retry-After") != "30" {
			t.Fatalf("over the sliding estimate: %d %v", r.status, r.header)
		}
		// Two windows later it has all gone.
		at(3 * time.Minute)
		if r := send(t, apps[1], "GET", "/public", ""); r.status != 200 {
			t.Fatalf("two windows later: %d %s", r.status, r.body)
		}

		// Only failures count: successes never lock an account out, two
		// failures on two replicas do.
		for i := range 3 {
			if r := send(t, apps[i%2], "POST", "/login?password=right", ""); r.status != 200 {
				t.Fatalf("success %d: %d", i+1, r.status)
			}
		}
		for i := range 2 {
			if r := send(t, apps[i%2], "POST", "/login", ""); r.status != 401 {
				t.Fatalf("failure %d: %d", i+1, r.status)
			}
		}
		if r := send(t, apps[0], "POST", "/login?password=right", ""); r.status != 429 {
			t.Fatalf("after two failures: %d %s", r.status, r.body)
		}

		later := window.Add(10 * time.Minute)
		if n, err := models.PurgeRateCounters(t.Context(), db, later); err != nil || n == 0 {
			t.Fatalf("purge: %d %v", n, err)
		}
	})
}

func idempotentApp(db *gorm.DB, now *atomic.Pointer[time.Time], hits *atomic.Int32, gate chan struct{}) *fiber.App {
	return idempotentAppWithLease(db, now, hits, gate, 0)
}

func idempotentAppWithLease(db *gorm.DB, now *atomic.Pointer[time.Time], hits *atomic.Int32, gate chan struct{}, lease time.Duration) *fiber.App {
	app := newApp()
	// Authentication names the principal; here the bearer text stands for it.
	app.Use(func(c *fiber.Ctx) error {
		if tok, _ := web.BearerToken(c); tok != "" {
			web.SetIdempotencyScope(c, "user:"+tok)
		}
		return c.Next()
	})
	app.Use(web.Transactional(db, web.RequestOptions{Now: func() time.Time { return *now.Load() }, Lease: lease}))
	app.Post("/orders", func(c *fiber.Ctx) error {
		n := hits.Add(1)
		if gate != nil && c.Get("X-Wait") != "" {
			<-gate
		}
		c.Location("/orders/" + fmt.Sprint(n))
		return c.Status(201).JSON(fiber.Map{"order": n})
	})
	app.Post("/fail", func(c *fiber.Ctx) error {
		hits.Add(1)
		return fmt.Errorf("database exploded")
	})
	app.Post("/token", func(c *fiber.Ctx) error {
		hits.Add(1)
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(fiber.Map{"access_token": "secret-token-value"})
	})
	app.Post("/busy", func(c *fiber.Ctx) error {
		hits.Add(1)
		return web.NewProblem(429, "rate_limited", "slow down").WithRetryAfter(1)
	})
	app.Post("/invalid", func(c *fiber.Ctx) error {
		hits.Add(1)
		return models.Invalid(models.FieldError{Field: "x", Code: "required", Message: "x"})
	})
	return app
}

// testClock is the moved-by-hand clock of the idempotency tests.
func testClock() (*atomic.Pointer[time.Time], time.Time) {
	var now atomic.Pointer[time.Time]
	start := models.Now()
	now.Store(&start)
	return &now, start
}

func TestIdempotencyKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now, start := testClock()
		var hits atomic.Int32
		gate := make(chan struct{})
		app := idempotentApp(db, now, &hits, gate)
		key := func(k string) []string {
			return []string{web.HeaderIdempotencyKey, k, "Authorization", "Bearer tenant-a"}
		}

		first := send(t, app, "POST", "/orders", `{"sku":"a"}`, key("k1")...)
		again := send(t, app, "POST", "/orders", `{"sku":"a"}`, key("k1")...)
		if first.status != 201 || again.status != 201 || first.body != again.body || hits.Load() != 1 {
			t.Fatalf("replay: %d %s / %d %s, hits %d", first.status, first.body, again.status, again.body, hits.Load())
		}
		if again.header.Get(web.HeaderIdempotentReplayed) != "true" || again.header.Get("Location") != first.header.Get("Location") {
			t.Fatalf("replay headers: %v", again.header)
		}

		if r := send(t, app, "POST", "/orders", `{"sku":"b"}`, key("k1")...); r.status != 422 || !strings.Contains(r.body, "idempotency_key_reused") {
			t.Fatalf("different body: %d %s", r.status, r.body)
		}
		// The same key from another credential is another key.
		other := send(t, app, "POST", "/orders", `{"sku":"b"}`, web.HeaderIdempotencyKey, "k1", "Authorization", "Bearer tenant-b")
		if other.status != 201 || hits.Load() != 2 {
			t.Fatalf("other tenant: %d, hits %d", other.status, hits.Load())
		}

		// 4xx outcomes are stored; 5xx are not, so a retry runs again.
		send(t, app, "POST", "/invalid", `{}`, key("k2")...)
		send(t, app, "POST", "/invalid", `{}`, key("k2")...)
		send(t, app, "POST", "/fail", `{}`, key("k3")...)
		send(t, app, "POST", "/fail", `{}`, key("k3")...)
		if hits.Load() != 5 {
			t.Fatalf("after 4xx/5xx retries hits = %d, want 5 (4xx replayed once, 5xx re-run)", hits.Load())
		}

		// A retry while the first is in flight is a 409.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(t, app, "POST", "/orders", `{"sku":"c"}`, append(key("k4"), "X-Wait", "1")...)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for hits.Load() != 6 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		r := send(t, app, "POST", "/orders", `{"sku":"c"}`, append(key("k4"), "X-Wait", "1")...)
		close(gate)
		wg.Wait()
		if r.status != 409 || !strings.Contains(r.body, "idempotency_key_in_flight") || r.header.Get("Retry-After") == "" {
			t.Fatalf("in flight: %d %s", r.status, r.body)
		}

		// After 24 hours the key is forgotten and the request runs anew.
		later := start.Add(25 * time.Hour)
		now.Store(&later)
		if r := send(t, app, "POST", "/orders", `{"sku":"z"}`, key("k1")...); r.status != 201 || hits.Load() != 7 {
			t.Fatalf("expired key: %d hits %d", r.status, hits.Load())
		}
		if n, err := web.PurgeIdempotencyKeys(t.Context(), db, later); err != nil || n == 0 {
			t.Fatalf("purge: %d %v", n, err)
		}

		// Secrets are never stored: the retry learns the request succeeded,
		// and nothing in the database holds the token.
		hits.Store(0)
		if r := send(t, app, "POST", "/token", `{}`, key("secret")...); r.status != 200 || !strings.Contains(r.body, "secret-token-value") {
			t.Fatalf("token: %d %s", r.status, r.body)
		}
		r = send(t, app, "POST", "/token", `{}`, key("secret")...)
		if r.status != 409 || !strings.Contains(r.body, "idempotent_response_withheld") || hits.Load() != 1 {
			t.Fatalf("replayed secret: %d %s (hits %d)", r.status, r.body, hits.Load())
		}
		var leaked int64
		db.Model(&models.IdempotencyKey{}).Where("body LIKE ?", "%secret-token-value%").Count(&leaked)
		if leaked != 0 {
			t.Fatal("a secret response was stored")
		}
		// A 429 is not an outcome: the retry runs again.
		send(t, app, "POST", "/busy", `{}`, key("busy")...)
		send(t, app, "POST", "/busy", `{}`, key("busy")...)
		if hits.Load() != 3 {
			t.Fatalf("429 replayed instead of re-run: hits %d", hits.Load())
		}

		long := strings.Repeat("k", 256)
		if r := send(t, app, "POST", "/orders", `{}`, key(long)...); r.status != 422 {
			t.Fatalf("long key: %d %s", r.status, r.body)
		}
		if r := send(t, app, "POST", "/orders", `{}`, key("tab\tkey")...); r.status != 422 || !strings.Contains(r.body, "printable") {
			t.Fatalf("control character in the key: %d %s", r.status, r.body)
		}
	})
}

// A request whose process died (kill -9) leaves its key in flight; the
// retry proceeds as soon as the short lease lapses, not minutes later.
// A request still running renews its lease, so its retry keeps getting
// 409 and the work is never done twice.
func TestIdempotencyLeaseLapsesAfterACrashAndIsRenewedWhileAlive(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now, start := testClock()
		var hits atomic.Int32
		gate := make(chan struct{})
		app := idempotentApp(db, now, &hits, gate)
		key := []string{web.HeaderIdempotencyKey, "crashed", "Authorization", "Bearer tenant-a"}

		// What a process killed mid-request leaves behind: a claim taken
		// a moment ago, never renewed.
		// Its fingerprint is the retried request's: method, path and body.
		sum := sha256.Sum256([]byte("POST\x00/orders\x00" + `{"sku":"a"}`))
		if err := db.Create(&models.IdempotencyKey{Scope: "user:tenant-a", Key: "crashed", RequestHash: hex.EncodeToString(sum[:]),
			State: models.IdemInFlight, CreatedAt: start, ExpiresAt: start.Add(24 * time.Hour), LockedUntil: start.Add(web.DefaultIdempotencyLease)}).Error; err != nil {
			t.Fatal(err)
		}
		if r := send(t, app, "POST", "/orders", `{"sku":"a"}`, key...); r.status != 409 {
			t.Fatalf("retry within the lease: %d %s", r.status, r.body)
		}
		later := start.Add(15 * time.Second) // seconds after the crash, not minutes
		now.Store(&later)
		if r := send(t, app, "POST", "/orders", `{"sku":"a"}`, key...); r.status != 201 || hits.Load() != 1 {
			t.Fatalf("retry after the lease: %d %s (hits %d)", r.status, r.body, hits.Load())
		}

		// A live request renews its claim: with a 300 ms lease (real clock),
		// wait until the first lease is long over and the claim was renewed,
		// then retry — still in flight, still run once.
		real := time.Now
		live := idempotentAppWithLease(db, now, &hits, gate, 300*time.Millisecond)
		realNow := real().UTC().Truncate(time.Microsecond)
		now.Store(&realNow)
		tick := func() { n := real().UTC().Truncate(time.Microsecond); now.Store(&n) }
		liveKey := []string{web.HeaderIdempotencyKey, "slow", "Authorization", "Bearer tenant-a", "X-Wait", "1"}
		done := make(chan result, 1)
		go func() { done <- send(t, live, "POST", "/orders", `{"sku":"slow"}`, liveKey...) }()
		firstLease := realNow.Add(300 * time.Millisecond)
		deadline := real().Add(10 * time.Second)
		for {
			tick()
			var row models.IdempotencyKey
			err := db.Take(&row, "scope = ? AND key = ?", "user:tenant-a", "slow").Error
			if err == nil && row.LockedUntil.After(firstLease) && real().After(firstLease) {
				break // renewed, and the first lease has lapsed
			}
			if real().After(deadline) {
				t.Fatalf("the claim was not renewed: %+v %v", row, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		tick()
		if r := send(t, live, "POST", "/orders", `{"sku":"slow"}`, liveKey...); r.status != 409 || !strings.Contains(r.body, "idempotency_key_in_flight") {
			t.Fatalf("retry of a live request: %d %s", r.status, r.body)
		}
		close(gate)
		if r := <-done; r.status != 201 || hits.Load() != 2 {
			t.Fatalf("the live request: %d %s (hits %d)", r.status, r.body, hits.Load())
		}
	})
}

// EncodeCursor writes what json.Marshal writes, so that every cursor ever
// issued decodes the same way.
func TestEncodeCursorIsJSON(t *testing.T) {
	ist := time.FixedZone("IST", 5*3600+1800)
	times := []time.Time{
		models.Now(), time.Now(), time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, ist),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.Local),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, at := range times {
		for _, id := range []string{models.NewID(), "6F1C2A3B-4D5E-4F60-8172-839405A6B7C8", "", `a "quoted" <id>`, `ab"cd`, `ab\\cd`, "ü"} {
			c := web.Cursor{CreatedAt: at, ID: id}
			b, err := json.Marshal(c)
			if err != nil {
				continue // a time JSON cannot hold: any cursor will do
			}
			if got, want := web.EncodeCursor(c), base64.RawURLEncoding.EncodeToString(b); got != want {
				t.Errorf("EncodeCursor(%v, %q) = %s, json.Marshal's is %s", at, id, got, want)
			}
		}
	}
}

// SendPage writes the bytes encoding/json writes (HTML escaping, U+2028,
// RFC 3339 times in their zones, null for no cursor), which every client
// already reads, and names them JSON.
func TestSendPageWritesWhatEncodingJSONWrites(t *testing.T) {
	type row struct {
		Name string
		At   time.Time
		Tags map[string]int
	}
	type item struct {
		Name string         `json:"name"`
		At   time.Time      `json:"at"`
		Tags map[string]int `json:"tags,omitempty"`
		Note *string        `json:"note"`
	}
	view := func(r *row) item { return item{Name: strings.ToUpper(r.Name), At: r.At, Tags: r.Tags} }
	next := "eyJ0IjoiMjAyNiJ9"
	rows := []row{
		{Name: `<script>&"x"</script>` + "\u2028\u2029\x00\\", At: time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, time.FixedZone("IST", 5*3600+1800))},
		{Name: "ü", At: time.Date(2026, 11, 26, 13, 0, 0, 1, time.UTC), Tags: map[string]int{"b": 2, "a": 1, "<": 0}},
	}
	// The empty page first, while the pool of item buffers is empty.
	for _, page := range []web.Page[row]{{Data: []row{}}, {Data: rows, NextCursor: &next, HasMore: true}, {Data: []row{}}} {
		app := newApp()
		app.Get("/", func(c *fiber.Ctx) error { return web.SendPage(c, page, view) })
		resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		want, err := json.Marshal(web.MapPage(page, view))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("SendPage wrote\n%s\nencoding/json writes\n%s", got, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != fiber.MIMEApplicationJSON {
			t.Errorf("Content-Type = %q", ct)
		}
	}
}

func TestCursorPaginationIsStableUnderInserts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		base := models.Now()
		// Ten rows, several sharing a timestamp, so the id tie-break matters.
		var want []string
		for i := range 10 {
			row := models.WorkflowStart{ID: models.NewID(), WorkflowID: fmt.Sprintf("wf-%d", i), WorkflowType: "T", TaskQueue: "q",
				Status: models.StartPending, NextAttemptAt: base, CreatedAt: base.Add(time.Duration(i/3) * time.Second), UpdatedAt: base}
			if err := db.Create(&row).Error; err != nil {
				t.Fatal(err)
			}
			want = append(want, row.ID)
		}
		key := func(s *models.WorkflowStart) web.Cursor { return web.Cursor{CreatedAt: s.CreatedAt, ID: s.ID} }
		seen := map[string]bool{}
		req := web.PageRequest{Limit: 3}
		for pageNo := 0; ; pageNo++ {
			page, err := web.Paginate(db.Model(&models.WorkflowStart{}), req, key)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Data {
				if seen[r.ID] {
					t.Fatalf("row %s repeated on page %d", r.ID, pageNo)
				}
				seen[r.ID] = true
			}
			// A newer row arrives while the client pages: it must not shift pages.
			newer := models.WorkflowStart{ID: models.NewID(), WorkflowID: fmt.Sprintf("new-%d", pageNo), WorkflowType: "T", TaskQueue: "q",
				Status: models.StartPending, NextAttemptAt: base, CreatedAt: models.Now().Add(time.Hour), UpdatedAt: base}
			if err := db.Create(&newer).Error; err != nil {
				t.Fatal(err)
			}
			if !page.HasMore {
				break
			}
			cur, err := web.DecodeCursor(*page.NextCursor)
			if err != nil {
				t.Fatal(err)
			}
			req.After = &cur
		}
		for _, id := range want {
			if !seen[id] {
				t.Fatalf("row %s never listed", id)
			}
		}
	})
}

// A page read by Paginate and answered by SendPage gives its rows back for
// later pages to reuse: once sent they are cleared (a buffer in the pool
// keeps no row's strings alive), and a later, shorter page shows nothing of
// a longer one before it.
func TestSentPagesGiveTheirRowsBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		base := models.Now()
		typ := "T-" + models.NewID()
		var ids []string // newest first, as the list orders them
		for i := range 5 {
			row := models.WorkflowStart{ID: models.NewID(), WorkflowID: fmt.Sprintf("wf-%d", i), WorkflowType: typ, TaskQueue: "q",
				Status: models.StartPending, NextAttemptAt: base, CreatedAt: base.Add(time.Duration(-i) * time.Second), UpdatedAt: base}
			if err := db.Create(&row).Error; err != nil {
				t.Fatal(err)
			}
			ids = append(ids, row.ID)
		}
		type item struct {
			ID string `json:"id"`
		}
		var sent web.Page[models.WorkflowStart]
		app := newApp()
		app.Get("/", func(c *fiber.Ctx) error {
			page, err := web.Paginate(db.Model(&models.WorkflowStart{}).Where("workflow_type = ?", typ),
				web.PageRequest{Limit: c.QueryInt("limit")}, func(s *models.WorkflowStart) web.Cursor { return web.Cursor{CreatedAt: s.CreatedAt, ID: s.ID} })
			if err != nil {
				return err
			}
			sent = page
			return web.SendPage(c, page, func(s *models.WorkflowStart) item { return item{ID: s.ID} })
		})
		for _, limit := range []int{5, 2, 4, 1, 5} {
			resp, err := app.Test(httptest.NewRequest("GET", fmt.Sprintf("/?limit=%d", limit), nil))
			if err != nil {
				t.Fatal(err)
			}
			var got web.Page[item]
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, it := range got.Data {
				gotIDs = append(gotIDs, it.ID)
			}
			if want := ids[:limit]; !slices.Equal(gotIDs, want) || got.HasMore != (limit < 5) {
				t.Fatalf("limit %d: ids %v, hasMore %v; want %v, %v", limit, gotIDs, got.HasMore, want, limit < 5)
			}
			for i, row := range sent.Data[:cap(sent.Data)] {
				if row != (models.WorkflowStart{}) {
					t.Fatalf("limit %d: row %d of the sent page is still %s, not cleared", limit, i, row.ID)
				}
			}
		}
	})
}

// recordingHandler keeps every log record, as an asynchronous log shipper
// would: attribute strings must stay valid after the request.
type recordingHandler struct {
	mu      sync.Mutex
	records []map[string]string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindString {
			m[a.Key] = a.Value.String() // the string itself, not a copy
		}
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, m)
	h.mu.Unlock()
	return nil
}

// TestMetricsAndLogsKeepTheirLabels serves PUT, POST and GET over one
// keep-alive connection (so fasthttp reuses its request buffers) and then
// scrapes /metrics: every label and every access-log field must still read
// what the request said.
func TestMetricsAndLogsKeepTheirLabels(t *testing.T) {
	logs := &recordingHandler{}
	reg := prometheus.NewRegistry()
	app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(logs)), DisableStartupMessage: true})
	app.Use(web.RequestIDMiddleware(), web.Observe(slog.New(logs), web.NewMetrics(reg), web.AccessLogAll))
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	ok := func(c *fiber.Ctx) error { return c.SendString("ok") }
	app.Put("/things/:id", ok)
	app.Post("/things", ok)
	app.Get("/things/:id", ok)
	app.Delete("/things/:id", func(*fiber.Ctx) error { return fmt.Errorf("boom") })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	base := "http://" + ln.Addr().String()
	do := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	sent := []struct{ method, path string }{
		{"PUT", "/things/put-1"}, {"POST", "/things"}, {"GET", "/things/get-22"},
		{"DELETE", "/things/delete-333"}, {"PUT", "/things/put-4444"}, {"GET", "/nowhere/at/all"},
	}
	for _, s := range sent {
		do(s.method, s.path)
	}
	status, body := do("GET", "/metrics")
	if status != 200 {
		t.Fatalf("/metrics answered %d:\n%s", status, body)
	}
	for _, line := range []string{
		`suite_http_requests_total{method="PUT",route="/things/:id",status="200"} 2`,
		`suite_http_requests_total{method="POST",route="/things",status="200"} 1`,
		`suite_http_requests_total{method="GET",route="/things/:id",status="200"} 1`,
		`suite_http_requests_total{method="DELETE",route="/things/:id",status="500"} 1`,
		`suite_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`suite_http_request_duration_seconds_count{method="PUT",route="/things/:id"} 2`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s:\n%s", line, body)
		}
	}
	// A second scrape still works (the first one's label reads did not
	// clash with later requests).
	if status, body := do("GET", "/metrics"); status != 200 {
		t.Fatalf("second /metrics answered %d:\n%s", status, body)
	}

	logs.mu.Lock()
	defer logs.mu.Unlock()
	var access []map[string]string
	for _, r := range logs.records {
		if r["msg"] == "http request" {
			access = append(access, r)
		}
	}
	if len(access) < len(sent) {
		t.Fatalf("%d access-log lines for %d requests", len(access), len(sent))
	}
	for i, s := range sent {
		if got := access[i]; got["method"] != s.method || got["path"] != s.path || got["ip"] != "127.0.0.1" {
			t.Errorf("access log %d reads %s %s from %s, want %s %s from 127.0.0.1", i, got["method"], got["path"], got["ip"], s.method, s.path)
		}
	}
	for _, r := range logs.records {
		if r["msg"] == "request failed" && (r["method"] != "DELETE" || r["path"] != "/things/delete-333") {
			t.Errorf("error log reads %s %s, want DELETE /things/delete-333", r["method"], r["path"])
		}
	}
}

// TestAccessLogWritesWhatItsPolicyPicks: "all" writes every request,
// "errors" only answers of 400 and up and slow requests, "sample:N" one
// in N besides those; a readiness 503 is written at INFO, a 500 at ERROR.
func TestAccessLogWritesWhatItsPolicyPicks(t *testing.T) {
	for _, tc := range []struct {
		setting string
		// want is the paths logged for 6 × /ok, /missing, /slow, /readyz
		// and /boom, in that order.
		want []string
	}{
		{"all", []string{"/ok", "/ok", "/ok", "/ok", "/ok", "/ok", "/missing", "/slow", "/readyz", "/boom"}},
		{"errors", []string{"/missing", "/slow", "/readyz", "/boom"}},
		{"sample:3", []string{"/ok", "/ok", "/missing", "/slow", "/readyz", "/boom"}},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			policy, err := web.ParseAccessLog(tc.setting)
			if err != nil || policy.String() != tc.setting {
				t.Fatalf("ParseAccessLog(%q) = %v, %v", tc.setting, policy, err)
			}
			logs := &recordingHandler{}
			app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(logs)), DisableStartupMessage: true})
			app.Use(web.Observe(slog.New(logs), nil, policy))
			app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
			app.Get("/slow", func(c *fiber.Ctx) error { time.Sleep(web.SlowRequest); return c.SendString("ok") })
			app.Get("/readyz", func(c *fiber.Ctx) error { return c.SendStatus(503) })
			app.Get("/boom", func(*fiber.Ctx) error { return fmt.Errorf("boom") })
			paths := []string{"/ok", "/ok", "/ok", "/ok", "/ok", "/ok", "/missing", "/slow", "/readyz", "/boom"}
			for _, path := range paths {
				resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			var logged []string
			levels := map[string]string{}
			for _, r := range logs.records {
				if r["msg"] == "http request" {
					logged = append(logged, r["path"])
					levels[r["path"]] = r["level"]
				}
			}
			if !slices.Equal(logged, tc.want) {
				t.Fatalf("logged %v, want %v", logged, tc.want)
			}
			if levels["/readyz"] != "INFO" || levels["/boom"] != "ERROR" || levels["/missing"] != "INFO" {
				t.Fatalf("levels %v: want the readiness 503 at INFO and the 500 at ERROR", levels)
			}
		})
	}
	for _, bad := range []string{"", "some", "sample:", "sample:0", "sample:-1", "sample:x", "ALL"} {
		if _, err := web.ParseAccessLog(bad); err == nil {
			t.Errorf("ParseAccessLog(%q) took it", bad)
		}
	}
}

// TestDecodeReportsEveryFindingOnce: unknown fields, wrong types, broken
// rules and the handler's own checks come back in one 422, each field named
// once (a wrong type is not reported again as "required").
func TestDecodeReportsEveryFindingOnce(t *testing.T) {
	app := newApp()
	app.Post("/x", func(c *fiber.Ctx) error {
		var r contactReq
		err := web.Decode(c, &r, func() error {
			if r.Age == 0 { // the wrong-typed age reaches checks as zero
				return models.Invalid(models.FieldError{Field: "age", Code: "check", Message: "m"},
					models.FieldError{Field: "city", Code: "check", Message: "m"})
			}
			return nil
		})
		if err != nil {
			return err
		}
		return c.JSON(r)
	})
	r := send(t, app, "POST", "/x", `{"nickname":"x","email":"nope","age":"old","name":7}`)
	if r.status != 422 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var p struct{ Errors []models.FieldError }
	if err := json.Unmarshal([]byte(r.body), &p); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range p.Errors {
		if _, dup := got[f.Field]; dup {
			t.Errorf("%s named twice: %s", f.Field, r.body)
		}
		got[f.Field] = f.Code
	}
	want := map[string]string{"nickname": "unknown_field", "age": "invalid_type", "name": "invalid_type", "email": "email", "city": "check"}
	if !maps.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
}

func TestNullableTellsAbsentNullAndValueApart(t *testing.T) {
	type req struct {
		Agent web.Nullable[string] `json:"agent"`
	}
	for body, want := range map[string]web.Nullable[string]{
		`{}`:               {},
		`{"agent":null}`:   {Set: true, Null: true},
		`{"agent":""}`:     {Set: true},
		`{"agent":"m-1"}`:  {Set: true, Value: "m-1"},
		`{"agent": null }`: {Set: true, Null: true},
	} {
		var r req
		if err := web.DecodeBytes([]byte(body), &r); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if r.Agent != want {
			t.Errorf("%s: %+v, want %+v", body, r.Agent, want)
		}
	}
	var r req
	err := web.DecodeBytes([]byte(`{"agent":5}`), &r)
	var de *models.DomainError
	if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Code != "invalid_type" || de.Fields[0].Message != "Must be a JSON string." {
		t.Fatalf("a number: %v %+v", err, de)
	}
	if r.Agent.Set {
		t.Fatal("a wrong-typed value counts as sent")
	}
}

// TestDeepPagesUseTheIndexRange checks the plan PostgreSQL makes for a
// cursor page: the cursor must be part of the index range on (org_id,
// created_at, id) and not a filter over every newer row, which made a page
// 900,000 rows deep cost 1.6 s instead of 0.15 ms.
func TestDeepPagesUseTheIndexRange(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL is not available: the plan check needs it")
	}
	db := dbtest.Open(t, database.Postgres)
	org := models.NewID()
	after := web.Cursor{CreatedAt: models.Now(), ID: models.NewID()}
	sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB {
		page, err := web.Paginate(tx.Model(&models.Contact{}).Where("org_id = ?", org),
			web.PageRequest{Limit: 25, After: &after}, func(c *models.Contact) web.Cursor { return web.Cursor{} })
		if err != nil || len(page.Data) != 0 {
			t.Errorf("a dry run returned %v, %v", page, err)
		}
		return tx
	})
	var plan []string
	err := db.Transaction(func(tx *gorm.DB) error {
		// With a few rows a sequential scan is cheapest; ask for the plan an
		// index would give, as it does on a large table.
		if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
			return err
		}
		return tx.Raw("EXPLAIN " + sql).Scan(&plan).Error
	})
	if err != nil {
		t.Fatalf("explain %s: %v", sql, err)
	}
	text := strings.Join(plan, "\n")
	var cond bool
	for _, line := range plan {
		if strings.Contains(line, "Filter:") && strings.Contains(line, "created_at") {
			t.Fatalf("the cursor is a filter, not an index range:\n%s", text)
		}
		cond = cond || (strings.Contains(line, "Index Cond:") && strings.Contains(line, "created_at"))
	}
	if !cond {
		t.Fatalf("the cursor is not in the index condition:\n%s", text)
	}
}

// crashApp writes an order in the handler's request transaction and then,
// when asked, dies the way a killed process does: the panic unwinds past
// the middleware, which neither commits nor stores an outcome. Before, a
// handler's writes were committed on their own, and a retry after the lease
// created the order a second time.
func crashApp(t *testing.T, db *gorm.DB, now *atomic.Pointer[time.Time]) *fiber.App {
	t.Helper()
	if err := db.Exec("CREATE TABLE test_orders (id INTEGER PRIMARY KEY, sku TEXT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	app := newApp()
	app.Use(web.Transactional(db, web.RequestOptions{Now: func() time.Time { return *now.Load() }}))
	var seq atomic.Int32
	insert := func(c *fiber.Ctx) (int32, error) {
		n := seq.Add(1)
		return n, web.Tx(c).Exec("INSERT INTO test_orders (id, sku) VALUES (?, ?)", n, "x").Error
	}
	app.Post("/orders", func(c *fiber.Ctx) error {
		n, err := insert(c)
		if err != nil {
			return err
		}
		if c.Get("X-Crash") != "" {
			panic("killed after the write")
		}
		return c.Status(201).JSON(fiber.Map{"order": n})
	})
	app.Post("/orders/wait", func(c *fiber.Ctx) error {
		n, err := insert(c)
		if err != nil {
			return err
		}
		if err := web.CommitAccepted(c, fiber.Map{"order": n, "status": "started"}); err != nil {
			return err
		}
		// What the worker sees while the handler waits: the committed order.
		var seen int64
		if err := db.Raw("SELECT COUNT(*) FROM test_orders WHERE id = ?", n).Scan(&seen).Error; err != nil || seen != 1 {
			return fmt.Errorf("the order is not visible before the wait: %d %v", seen, err)
		}
		if c.Get("X-Crash") != "" {
			panic("killed while waiting")
		}
		return c.Status(200).JSON(fiber.Map{"order": n, "status": "done"})
	})
	app.Post("/orders/duplicate", func(c *fiber.Ctx) error {
		// A refusal after a failed statement (PostgreSQL aborts the
		// transaction there) is still stored and replayed.
		if err := web.Tx(c).Exec("INSERT INTO test_orders (id, sku) VALUES (?, ?)", -1, "x").Error; err != nil {
			return err
		}
		if err := web.Tx(c).Exec("INSERT INTO test_orders (id, sku) VALUES (?, ?)", -1, "x").Error; err == nil {
			return errors.New("the duplicate was inserted")
		}
		return web.NewProblem(409, "duplicate", "Already there.")
	})
	return app
}

func countOrders(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM test_orders WHERE id > 0").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// A request whose transaction cannot begin, because the database has gone
// away, is a 503 the client may retry, keyed or not: the transaction's
// handle carries the error of its BEGIN, which its first statement returns.
func TestRequestsWhoseTransactionCannotBeginAreUnavailable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, key := range []string{"", "k-1"} {
			appDB, sever := dbtest.Severable(t, db)
			pool, err := appDB.DB()
			if err != nil {
				t.Fatal(err)
			}
			pool.SetMaxIdleConns(0) // the request's BEGIN dials, and finds the database gone
			app := newApp()
			app.Post("/probe", func(c *fiber.Ctx) error {
				if key != "" {
					return c.Next() // the key is claimed while the database is there
				}
				sever()
				return c.Next()
			}, web.Transactional(appDB, web.RequestOptions{}), func(c *fiber.Ctx) error {
				sever()
				var n int
				return web.Tx(c).Raw("SELECT 1").Scan(&n).Error
			})
			req := httptest.NewRequest("POST", "/probe", strings.NewReader("{}"))
			if key != "" {
				req.Header.Set(web.HeaderIdempotencyKey, key)
			}
			resp, err := app.Test(req, 30_000)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != fiber.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("key %q: %d (Retry-After %q) %s, want 503 with Retry-After", key, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}
	})
}

func TestIdempotentWritesCommitWithTheirOutcome(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now, start := testClock()
		app := crashApp(t, db, now)
		afterLease := func() { later := now.Load().Add(web.DefaultIdempotencyLease + time.Second); now.Store(&later) }

		t.Run("killed after the handler's write", func(t *testing.T) {
			key := []string{web.HeaderIdempotencyKey, "crash"}
			if r := send(t, app, "POST", "/orders", `{"sku":"x"}`, append(key, "X-Crash", "1")...); r.status != 500 {
				t.Fatalf("the crashing request: %d %s", r.status, r.body)
			}
			if n := countOrders(t, db); n != 0 {
				t.Fatalf("the dead request's write survived it: %d orders", n)
			}
			if r := send(t, app, "POST", "/orders", `{"sku":"x"}`, key...); r.status != 409 {
				t.Fatalf("retry within the lease: %d %s", r.status, r.body)
			}
			afterLease()
			first := send(t, app, "POST", "/orders", `{"sku":"x"}`, key...)
			again := send(t, app, "POST", "/orders", `{"sku":"x"}`, key...)
			if first.status != 201 || again.body != first.body || again.header.Get(web.HeaderIdempotentReplayed) != "true" {
				t.Fatalf("retries: %d %s / %d %s", first.status, first.body, again.status, again.body)
			}
			if n := countOrders(t, db); n != 1 {
				t.Fatalf("%d orders after the retries, want 1", n)
			}
		})

		t.Run("killed while waiting after an early commit", func(t *testing.T) {
			now.Store(&start)
			key := []string{web.HeaderIdempotencyKey, "wait-crash"}
			before := countOrders(t, db)
			if r := send(t, app, "POST", "/orders/wait", `{}`, append(key, "X-Crash", "1")...); r.status != 500 {
				t.Fatalf("the crashing request: %d %s", r.status, r.body)
			}
			afterLease()
			r := send(t, app, "POST", "/orders/wait", `{}`, key...)
			if r.status != 202 || !strings.Contains(r.body, `"started"`) || r.header.Get(web.HeaderIdempotentReplayed) != "true" {
				t.Fatalf("the retry does not replay the committed answer: %d %s", r.status, r.body)
			}
			if n := countOrders(t, db); n != before+1 {
				t.Fatalf("%d orders, want %d", n, before+1)
			}
			// Not killed: the final answer replaces the provisional one.
			key = []string{web.HeaderIdempotencyKey, "wait-ok"}
			if r := send(t, app, "POST", "/orders/wait", `{}`, key...); r.status != 200 {
				t.Fatalf("the waiting request: %d %s", r.status, r.body)
			}
			if r := send(t, app, "POST", "/orders/wait", `{}`, key...); r.status != 200 || !strings.Contains(r.body, `"done"`) {
				t.Fatalf("replay of the final answer: %d %s", r.status, r.body)
			}
		})

		t.Run("a refusal after a failed statement", func(t *testing.T) {
			key := []string{web.HeaderIdempotencyKey, "dup"}
			first := send(t, app, "POST", "/orders/duplicate", `{}`, key...)
			again := send(t, app, "POST", "/orders/duplicate", `{}`, key...)
			if first.status != 409 || again.status != 409 || again.header.Get(web.HeaderIdempotentReplayed) != "true" {
				t.Fatalf("%d %s / %d %s", first.status, first.body, again.status, again.body)
			}
		})
	})
}
