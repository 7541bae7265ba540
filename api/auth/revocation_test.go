package auth

import (
	"context"
	"testing"
	"time"
)

// While one request re-reads the revoked sessions, the others answer from
// the copy instead of queueing behind its round trip; the read's answer
// then replaces the copy.
func TestRevocationsAnswerWhileReread(t *testing.T) {
	reads := make(chan chan []string, 8)
	r := &revocations{refresh: time.Hour, load: func(ctx context.Context) ([]string, error) {
		answer := make(chan []string)
		reads <- answer
		select {
		case ids := <-answer:
			return ids, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	revoked := func(session string) chan bool {
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
	first := revoked("s1")
	(<-reads) <- []string{"s1"} // the first read: nothing to answer from
	if !<-first {
		t.Fatal("s1 was not revoked")
	}

	r.mu.Lock()
	r.loadedAt = time.Now().Add(-2 * time.Hour) // the next request re-reads
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
