package harness

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// AwaitReady waits for a 200, quotes the last answer past its timeout,
// and names an exited process at once.
func TestAwaitReady(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/never" || asked.Add(1) < 3 {
			http.Error(w, "temporal: unavailable", http.StatusServiceUnavailable)
			return
		}
	}))
	defer srv.Close()
	running := func() error { return nil }

	if _, err := AwaitReady(t.Context(), srv.Client(), srv.URL+"/readyz", time.Minute, running); err != nil || asked.Load() != 3 {
		t.Fatalf("ready on the third answer: %v after %d", err, asked.Load())
	}
	_, err := AwaitReady(t.Context(), srv.Client(), srv.URL+"/never", 300*time.Millisecond, running)
	if !errors.Is(err, ErrNotReady) || err.Error() != "was not ready after 300ms (last /readyz: 503 temporal: unavailable)" {
		t.Fatalf("never ready: %v", err)
	}
	gone := errors.New("exit status 1")
	_, err = AwaitReady(t.Context(), srv.Client(), srv.URL+"/never", time.Minute, func() error { return gone })
	if err != gone {
		t.Fatalf("exited: %v", err)
	}
}
