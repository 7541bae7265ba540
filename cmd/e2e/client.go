package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// response is an HTTP answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) decode(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode %d answer %q: %w", r.status, r.body, err)
	}
	return nil
}

// request sends one request; body (if not nil) is sent as JSON, headers
// are name/value pairs.
func request(ctx context.Context, client *http.Client, method, url string, body any, headers ...string) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// expect sends a request and fails unless it answers want; out (if not
// nil) receives the JSON answer.
func expect(ctx context.Context, client *http.Client, want int, out any, method, url string, body any, headers ...string) error {
	r, err := request(ctx, client, method, url, body, headers...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if r.status != want {
		return fmt.Errorf("%s %s: answered %d, want %d: %s", method, url, r.status, want, strings.TrimSpace(string(r.body)))
	}
	if out != nil {
		return r.decode(out)
	}
	return nil
}

// get is a GET answering its status and body.
func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	r, err := request(ctx, client, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	return r.status, string(r.body), nil
}
