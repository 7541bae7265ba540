package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/business-suite/suite/api"
	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models/dbtest"
)

func TestOperationsEndpoints(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		r := e.Do(apitest.Request{Method: "GET", Path: "/healthz"}).Expect(200)
		if r.Header.Get("X-Request-Id") == "" {
			t.Fatal("no X-Request-Id")
		}
		ready := e.Do(apitest.Request{Method: "GET", Path: "/readyz"}).Expect(200).Map()
		if ready["status"] != "ready" {
			t.Fatalf("readyz: %v", ready)
		}
		metrics := e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Expect(200)
		if !strings.Contains(string(metrics.Body), `suite_http_requests_total{method="GET",route="/readyz",status="200"} 1`) {
			t.Fatalf("metrics do not count requests:\n%s", metrics.Body)
		}
		var doc map[string]any
		e.Do(apitest.Request{Method: "GET", Path: "/openapi.json"}).Expect(200).JSON(&doc)
		if doc["openapi"] != "3.1.0" {
			t.Fatalf("openapi.json: %v", doc["openapi"])
		}
		page := e.Do(apitest.Request{Method: "GET", Path: "/docs"}).Expect(200)
		if !strings.Contains(string(page.Body), "Business Suite API reference") || !strings.Contains(string(page.Body), `id="swagger-ui"`) {
			t.Fatal("/docs is not the reference viewer")
		}
	})
}

func TestProblemResponsesForTheBasics(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	// Unknown route: 404 problem+json with a request id.
	e.Do(apitest.Request{Method: "GET", Path: "/no/such/route"}).ExpectProblem(404, "not_found")

	// The authenticated interfaces refuse requests without a credential,
	// before routing: 401 whatever the path.
	for _, path := range []string{"/crm/contacts", "/helpdesk/tickets", "/v1/ai/summarize"} {
		e.Do(apitest.Request{Method: "GET", Path: path, SkipSpec: true}).ExpectProblem(401, "unauthorized")
	}

	// A 2 MiB body is refused by the server itself with 413, still as a
	// problem with a request id. (fasthttp reads the body before routing,
	// so this goes over a real socket rather than app.Test.)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = api.Serve(e.App, ln) }()
	defer func() { _ = e.App.Shutdown() }()
	// The client announces 2 MiB and sends the first 16 KiB; the server
	// answers without reading more (it streams a body over its limit, and
	// reads the first 8 KiB of it before a handler sees the request:
	// web.LimitBody refuses it from its Content-Length).
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /crm/contacts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"name\":\"%s", 2<<20, strings.Repeat("a", 16<<10))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 413 || p["code"] != "payload_too_large" || resp.Header.Get("Content-Type") != "application/problem+json" ||
		resp.Header.Get("X-Request-Id") == "" || p["requestId"] != resp.Header.Get("X-Request-Id") {
		t.Fatalf("2 MiB body: %d %v %v", resp.StatusCode, resp.Header, p)
	}

	// An upload refused before its body is read (no credential) closes the
	// connection: the rest of the body is no next request.
	upload, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer upload.Close()
	body := strings.Repeat("x", 100<<10)
	fmt.Fprintf(upload, "POST /crm/imports HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	refused, err := http.ReadResponse(bufio.NewReader(upload), nil)
	if err != nil {
		t.Fatal(err)
	}
	refused.Body.Close()
	if refused.StatusCode != 401 || !refused.Close {
		t.Fatalf("an unread upload's answer: %d, Connection: %q", refused.StatusCode, refused.Header.Get("Connection"))
	}
}

// A request whose headers or request line overflow the server's read
// buffer is answered 431 before the connection closes, every time: the
// server lingers over the input it did not read, so the client is not
// reset before it reads the answer (web.Linger).
func TestOversizedRequestsAreAlwaysAnswered(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = api.Serve(e.App, ln) }()
	defer func() { _ = e.App.Shutdown() }()
	requests := map[string]string{
		"a 10 KB header":       "GET /crm/contacts HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("a", 10<<10) + "\r\n\r\n",
		"an 8 KB query string": "GET /crm/contacts?q=" + strings.Repeat("a", 8<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	for name, request := range requests {
		answered := 0
		var failures []string
		for range 50 {
			status, err := sendRaw(ln.Addr().String(), request)
			if err == nil && status == 431 {
				answered++
			} else if len(failures) < 3 {
				failures = append(failures, fmt.Sprintf("%d %v", status, err))
			}
		}
		if answered != 50 {
			t.Errorf("%s: %d of 50 tries answered 431; others: %v", name, answered, failures)
		}
	}
}

// sendRaw writes request on a new connection and reads the answer's status
// and problem code (which must be headers_too_large).
func sendRaw(addr, request string) (int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	// In pieces, as a client's buffered writer sends it: the server
	// answers after its buffer's worth, while the rest is still coming.
	for piece := range slices.Chunk([]byte(request), 1<<10) {
		if _, err := conn.Write(piece); err != nil {
			return 0, fmt.Errorf("write: %w", err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var p map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return resp.StatusCode, fmt.Errorf("body: %w", err)
	}
	if p["code"] != "headers_too_large" || resp.Header.Get("Content-Type") != "application/problem+json" {
		return resp.StatusCode, fmt.Errorf("not the problem: %v %v", resp.Header, p)
	}
	return resp.StatusCode, nil
}

func TestReadyzReportsTemporalDown(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	app := api.New(api.Deps{DB: db, Temporal: tc, Metrics: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth: auth.New(db, nil)})
	e := &apitest.Env{T: t, App: app, DB: db}
	r := e.Do(apitest.Request{Method: "GET", Path: "/readyz"}).Expect(503)
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	var body struct {
		Checks map[string]struct{ Status string } `json:"checks"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Checks["temporal"].Status != "down" || body.Checks["database"].Status != "ok" {
		t.Fatalf("readyz body: %s", r.Body)
	}
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := api.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A panic in a handler is a 500 problem, and the log has its stack.
func TestPanicsAreLoggedWithTheirStack(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	var logged bytes.Buffer
	app := api.New(api.Deps{DB: db, Metrics: prometheus.NewRegistry(), Log: slog.New(slog.NewJSONHandler(&logged, nil)),
		Auth: auth.New(db, nil)})
	app.Get("/test/panic", func(*fiber.Ctx) error { panicInAHandler(); return nil })
	e := &apitest.Env{T: t, App: app, DB: db}
	r := e.Do(apitest.Request{Method: "GET", Path: "/test/panic", SkipSpec: true})
	r.ExpectProblem(500, "internal_error")
	var entry struct{ Msg, Panic, Stack, RequestID string }
	for line := range strings.SplitSeq(logged.String(), "\n") {
		if strings.Contains(line, "panic serving a request") {
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatal(err)
			}
		}
	}
	if entry.Panic != "the handler broke" || !strings.Contains(entry.Stack, "panicInAHandler") || entry.RequestID != r.Header.Get("X-Request-Id") {
		t.Fatalf("the panic's log entry %+v\nlog:\n%s", entry, logged.String())
	}
}

func panicInAHandler() { panic("the handler broke") }
