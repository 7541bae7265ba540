package auth

import (
	"context"
	"testing"
	"time"
)

// heldRevocations is a copy whose every read waits for the test to answer
// it on reads, and revoked asks it in a goroutine of its own.
func heldRevocations(t *testing.T) (reads chan chan []string, revoked func(session string) chan bool, r *revocations) {
	reads = make(chan chan []string, 8)
	r = &revocations{refresh: time.Hour, load: func(ctx context.Context) ([]string, error) {
		answer := make(chan []string)
		reads <- answer
		select {
		case ids := <-answer:
			return ids, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	revoked = func(session string) chan bool {
		done := make(chan bool, 1)
		go func() {
			ok, err := r.revoked(t.Context(), session)
			if err != nil {
				t.Error(err)
			}
			done <- ok
		}()
		return done
	}
	return reads, revoked, r
}

// While one request re-reads the revoked sessions, the others answer from
// the copy instead of queueing behind its round trip; the read's answer
// then replaces the copy.
func TestRevocationsAnswerWhileReread(t *testing.T) {
	reads, revoked, r := heldRevocations(t)
	first := revoked("s1")
	(<-reads) <- []string{"s1"} // the first read: nothing to answer from
	if !<-first {
		t.Fatal("s1 was not revoked")
	}

	r.mu.Lock()
	r.loadedAt = time.Now().Add(-90 * time.Minute) // the next request re-reads
	r.mu.Unlock()
	rereading := revoked("s2")
	read := <-reads
	select {
	case ok := <-revoked("s1"):
		if !ok {
			t.Fatal("during the re-read, s1 was not revoked")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request waited for another request's re-read")
	}
	read <- []string{"s1", "s2"}
	if !<-rereading {
		t.Fatal("s2, revoked in the re-read, was not")
	}
	if ok := <-revoked("s2"); !ok {
		t.Fatal("the re-read did not replace the copy")
	}
}

// A copy whose re-read stalls is answered from for two refreshes at most:
// past that, a request reads the sessions itself, and a read that ends
// late does not replace the copy a later read made.
func TestRevocationsOutliveNoStalledReread(t *testing.T) {
	reads, revoked, r := heldRevocations(t)
	first := revoked("s1")
	(<-reads) <- nil
	if <-first {
		t.Fatal("s1 revoked in an empty table")
	}
	r.mu.Lock()
	r.loadedAt = time.Now().Add(-90 * time.Minute)
	r.mu.Unlock()
	stalled := revoked("s1")
	stalledRead := <-reads
	r.mu.Lock()
	r.loadedAt = time.Now().Add(-2 * time.Hour) // the copy is now two refreshes old
	r.mu.Unlock()
	own := revoked("s1")
	select {
	case read := <-reads:
		read <- []string{"s1"}
	case <-own:
		t.Fatal("a copy two refreshes old was answered from while its re-read stalled")
	case <-time.After(10 * time.Second):
		t.Fatal("no read of its own")
	}
	if !<-own {
		t.Fatal("s1, revoked in the request's own read, was not")
	}
	stalledRead <- nil // the stalled read ends, older than the copy
	if <-stalled {
		t.Fatal("the stalled read answered from the newer copy")
	}
	if !<-revoked("s1") {
		t.Fatal("the stalled read's older answer replaced the newer copy")
	}
}
