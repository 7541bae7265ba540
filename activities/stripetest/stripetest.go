// Package stripetest runs Stripe's official mock server, stripe-mock
// (pinned in go.mod as a Go tool, built from the module cache), for tests,
// behind a recording proxy. stripe-mock keeps no state — every create
// answers a new object — so tests assert what the suite sent: how many
// creations, with which idempotency keys and metadata. The proxy can also
// answer in stripe-mock's place (a 500, a card decline, an object in a
// given state) or lose stripe-mock's answer after forwarding.
package stripetest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/business-suite/suite/internal/stripeconfig"
)

// Test credentials and prices of every Stripe a test starts.
const (
	SecretKey     = "sk_test_businesssuite"
	WebhookSecret = "whsec_business_suite_test"
)

// Prices are the configured price ids of the test configuration.
var Prices = map[string]string{
	stripeconfig.PriceKey("starter", "month"):    "price_starter_month",
	stripeconfig.PriceKey("business", "month"):   "price_business_month",
	stripeconfig.PriceKey("enterprise", "month"): "price_enterprise_month",
	stripeconfig.PriceKey("starter", "year"):     "price_starter_year",
	stripeconfig.PriceKey("business", "year"):    "price_business_year",
	stripeconfig.PriceKey("enterprise", "year"):  "price_enterprise_year",
}

// Request is one request the suite sent to Stripe.
type Request struct {
	Method         string
	Path           string
	IdempotencyKey string
	// Form is the form-encoded body, or the query of a GET.
	Form url.Values
	// Status is what the suite received.
	Status int
	// Forwarded tells whether stripe-mock saw the request.
	Forwarded bool
}

// Metadata returns the request's metadata[key].
func (r Request) Metadata(key string) string { return r.Form.Get("metadata[" + key + "]") }

type fault struct {
	method, pattern string
	times           int
	status          int
	body            string
	lose            bool // forward, then answer 500 instead of stripe-mock's answer
}

// Stripe is a running stripe-mock behind a recording proxy.
type Stripe struct {
	// URL is the proxy: the STRIPE_API_BASE of the suite under test.
	URL string

	mu       sync.Mutex
	requests []Request
	faults   []*fault
}

// Main runs a test package that uses Start: one stripe-mock serves every
// test of the package (it keeps no state, and loading its specification
// costs seconds of CPU) and is stopped when the tests end. Call it from
// TestMain: func TestMain(m *testing.M) { stripetest.Main(m) }.
func Main(m *testing.M) {
	mainUsed = true
	code := m.Run()
	if mock != nil {
		_ = mock.Process.Kill()
		_ = mock.Wait()
	}
	os.Exit(code)
}

var (
	mainUsed bool
	mockOnce sync.Once
	mock     *exec.Cmd
	mockURL  string
	mockErr  error
)

// Start returns a fresh recording proxy in front of the package's
// stripe-mock (started on first use, on a port of the system's choosing);
// the proxy stops when the test ends.
func Start(t testing.TB) *Stripe {
	t.Helper()
	if !mainUsed {
		t.Fatal("stripetest.Start needs stripetest.Main in the package's TestMain")
	}
	mockOnce.Do(func() { mock, mockURL, mockErr = startMock() })
	if mockErr != nil {
		t.Fatal(mockErr)
	}
	target, err := url.Parse(mockURL)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stripe{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, proxy) }))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Config is a billing configuration that talks to this Stripe.
func (s *Stripe) Config() stripeconfig.Config {
	prices := make(map[string]string, len(Prices))
	for k, v := range Prices {
		prices[k] = v
	}
	return stripeconfig.Config{SecretKey: SecretKey, WebhookSecret: WebhookSecret, APIBase: s.URL, Prices: prices, HTTPTimeout: 10 * time.Second}
}

// Respond makes the next times requests matching method and pattern (a
// path.Match pattern such as /v1/subscriptions/*) answer status and body
// without reaching stripe-mock.
func (s *Stripe) Respond(method, pattern string, times, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, pattern: pattern, times: times, status: status, body: body})
}

// Fail makes the next times matching requests answer a Stripe error of
// status (e.g. 500 api_error, 402 card_declined) without reaching stripe-mock.
func (s *Stripe) Fail(method, pattern string, times, status int, errType, code, message string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"type": errType, "code": code, "message": message}})
	s.Respond(method, pattern, times, status, string(body))
}

// Lose makes the next times matching requests reach stripe-mock, whose
// answer is then lost: the suite gets a 500 as if the connection broke
// after Stripe acted.
func (s *Stripe) Lose(method, pattern string, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, pattern: pattern, times: times, lose: true})
}

// Requests lists the requests matching method and pattern ("" matches any).
func (s *Stripe) Requests(method, pattern string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if matches(method, pattern, r.Method, r.Path) {
			out = append(out, r)
		}
	}
	return out
}

// Keys lists the distinct idempotency keys of the matching requests.
func (s *Stripe) Keys(method, pattern string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, r := range s.Requests(method, pattern) {
		if !seen[r.IdempotencyKey] {
			seen[r.IdempotencyKey] = true
			keys = append(keys, r.IdempotencyKey)
		}
	}
	return keys
}

func matches(method, pattern, gotMethod, gotPath string) bool {
	if method != "" && method != gotMethod {
		return false
	}
	if pattern == "" {
		return true
	}
	ok, _ := path.Match(pattern, gotPath)
	return ok
}

func (s *Stripe) takeFault(method, p string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.times > 0 && matches(f.method, f.pattern, method, p) {
			f.times--
			return f
		}
	}
	return nil
}

func (s *Stripe) serve(w http.ResponseWriter, r *http.Request, proxy *httputil.ReverseProxy) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	if r.Method == http.MethodGet {
		form = r.URL.Query()
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key"), Form: form}
	f := s.takeFault(r.Method, r.URL.Path)
	switch {
	case f != nil && !f.lose:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, f.body)
		rec.Status = f.status
	case f != nil:
		proxy.ServeHTTP(httptest.NewRecorder(), r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"type":"api_error","message":"connection lost (stripetest)"}}`)
		rec.Status, rec.Forwarded = http.StatusInternalServerError, true
	default:
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, r)
		rec.Status, rec.Forwarded = sw.status, true
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// mockBinary is stripe-mock built from the module cache at the version
// go.mod pins (`go tool -n` builds it once into the Go build cache and
// prints its path).
func mockBinary() (string, error) {
	buildOnce.Do(func() {
		out, err := exec.Command("go", "tool", "-n", "stripe-mock").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			buildErr = fmt.Errorf("build stripe-mock (go tool -n stripe-mock): %w", err)
			return
		}
		binary = strings.TrimSpace(string(out))
	})
	return binary, buildErr
}

// startMock runs stripe-mock on loopback ports of the system's choosing and
// returns its HTTP base URL.
func startMock() (*exec.Cmd, string, error) {
	bin, err := mockBinary()
	if err != nil {
		return nil, "", err
	}
	// Both listeners explicit: with only -http-addr it would also open
	// HTTPS on its fixed default port, which parallel runs would share.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start stripe-mock: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, "http://" + a, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", errors.New("stripe-mock did not start listening within 30 s")
	}
}

// Event builds a Stripe event of type typ carrying object, as Stripe sends
// it to a webhook endpoint (this stripe-go's API version).
func Event(typ string, object map[string]any) []byte {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	ev := map[string]any{
		"id": "evt_" + hex.EncodeToString(b), "object": "event", "type": typ, "api_version": stripe.APIVersion,
		"created": time.Now().Unix(), "livemode": false, "pending_webhooks": 1,
		"data": map[string]any{"object": object},
	}
	out, _ := json.Marshal(ev)
	return out
}

// Sign returns the Stripe-Signature header Stripe would send with payload,
// signed with secret at time at (stripe-go's test-signing helper).
func Sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}
