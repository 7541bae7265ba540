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
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select { // accepts, never answers
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		if r.URL.Path == "/never" || asked.Add(1) < 3 {
			http.Error(w, "temporal: unavailable", http.StatusServiceUnavailable)
			return
		}
	}))
	defer srv.Close()
	defer close(stop) // before the server closes: a hung handler returns
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

	// A /readyz that never answers is not waited on past the timeout (the
	// ten seconds only keep a broken AwaitReady from hanging the test).
	hung := make(chan error, 1)
	go func() {
		_, err := AwaitReady(t.Context(), srv.Client(), srv.URL+"/hang", 300*time.Millisecond, running)
		hung <- err
	}()
	select {
	case err := <-hung:
		if !errors.Is(err, ErrNotReady) {
			t.Fatalf("a hung /readyz: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitReady waited on a /readyz that never answers")
	}
}
