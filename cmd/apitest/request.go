package apitest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Request describes one HTTP call.
type Request struct {
	Method string
	Path   string
	// Body is JSON-encoded unless it is a string or []byte (sent as is).
	Body    any
	Headers map[string]string
	// SkipSpec disables OpenAPI validation (only for deliberately
	// off-spec traffic such as routes that must not exist).
	SkipSpec bool
}

// Response is a recorded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	t      testing.TB
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.t.Fatalf("decode response %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.JSON(&m)
	return m
}

// Expect fails the test unless the status is want.
func (r *Response) Expect(want int) *Response {
	r.t.Helper()
	if r.Status != want {
		r.t.Fatalf("status %d, want %d; body: %s", r.Status, want, r.Body)
	}
	return r
}

// ExpectProblem fails the test unless the response is a problem+json with
// the given status and code.
func (r *Response) ExpectProblem(status int, code string) map[string]any {
	r.t.Helper()
	r.Expect(status)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		r.t.Fatalf("content type %q, want application/problem+json", ct)
	}
	m := r.Map()
	if m["code"] != code {
		r.t.Fatalf("problem code %v, want %s; body: %s", m["code"], code, r.Body)
	}
	if m["requestId"] == "" || m["requestId"] != r.Header.Get("X-Request-Id") {
		r.t.Fatalf("problem requestId %v does not match X-Request-Id %q", m["requestId"], r.Header.Get("X-Request-Id"))
	}
	return m
}

// Do sends req through the app and validates both sides against the
// OpenAPI document.
func (e *Env) Do(req Request) *Response {
	e.T.Helper()
	var body []byte
	switch b := req.Body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			e.T.Fatalf("encode request body: %v", err)
		}
	}
	httpReq := httptest.NewRequest(req.Method, "http://127.0.0.1:8080"+req.Path, bytes.NewReader(body))
	if body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Headers {
		httpReq.Header.Set(k, v)
	}
	if e.Keyed && req.Method == http.MethodPost && httpReq.Header.Get("Idempotency-Key") == "" && !strings.HasSuffix(req.Path, "/webhook") {
		// A keyed Env sends every POST as a careful client sends it, with a
		// fresh Idempotency-Key, so that each handler runs both ways: its
		// answer stored in its transaction, and without (the webhooks' keys
		// mean more than a retry: they are left alone).
		httpReq.Header.Set("Idempotency-Key", "apitest-"+rand.Text())
	}
	httpResp, err := e.App.Test(httpReq, 30_000)
	if err != nil {
		e.T.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer httpResp.Body.Close()
	respBody, err := io.ReadAll(httpResp.Body)
	if err != nil {
		e.T.Fatalf("read response: %v", err)
	}
	resp := &Response{Status: httpResp.StatusCode, Header: httpResp.Header, Body: respBody, t: e.T}
	if !req.SkipSpec {
		checkSpec(e.T, req.Method, req.Path, httpReq.Header, body, resp)
	}
	return resp
}

// Multipart is a multipart/form-data body of fields (in the order given,
// as name, value pairs) and then a file named filename in a part named
// file, and its Content-Type.
func Multipart(filename string, file []byte, fields ...string) (body []byte, contentType string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(file)
	_ = mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// Upload posts a Multipart body to path with headers.
func (e *Env) Upload(path string, headers map[string]string, filename string, file []byte, fields ...string) *Response {
	e.T.Helper()
	body, contentType := Multipart(filename, file, fields...)
	h := map[string]string{"Content-Type": contentType}
	for k, v := range headers {
		h[k] = v
	}
	return e.Do(Request{Method: "POST", Path: path, Headers: h, Body: body})
}

// ProblemCodes are the "field:code" of each of a problem's errors.
func ProblemCodes(problem map[string]any) []string {
	var out []string
	errs, _ := problem["errors"].([]any)
	for _, f := range errs {
		m, _ := f.(map[string]any)
		field, _ := m["field"].(string)
		code, _ := m["code"].(string)
		out = append(out, field+":"+code)
	}
	return out
}
