package auth

import (
	"context"
	"testing"
	"time"

	"github.com/business-suite/suite/models"
)

// epochReads stands in for the database: each read of the epoch waits
// until the test answers it.
type epochReads struct {
	started chan struct{}
	answers chan int64
}

func newEpochReads() *epochReads {
	return &epochReads{started: make(chan struct{}, 8), answers: make(chan int64)}
}

func (e *epochReads) read(ctx context.Context) (int64, error) {
	e.started <- struct{}{}
	select {
	case epoch := <-e.answers:
		return epoch, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// get runs c.get in a goroutine and fails the test if it does not answer
// within ten seconds (it would be waiting for the epoch read).
func getSoon(t *testing.T, c *keyCache, hash string) (models.APIKey, bool, int64) {
	t.Helper()
	type answer struct {
		k     models.APIKey
		ok    bool
		epoch int64
	}
	done := make(chan answer, 1)
	go func() {
		k, ok, epoch := c.get(t.Context(), hash)
		done <- answer{k, ok, epoch}
	}()
	select {
	case a := <-done:
		return a.k, a.ok, a.epoch
	case <-time.After(10 * time.Second):
		t.Fatal("get waited for another request's epoch read")
	}
	return models.APIKey{}, false, 0
}

// While one request re-reads the epoch, the others answer from the cache
// instead of queueing behind its round trip; a revocation in this process
// meanwhile makes that read untrusted, so a key read before the
// revocation is not cached under it.
func TestKeyCacheAnswersWhileTheEpochIsRead(t *testing.T) {
	reads := newEpochReads()
	c := &keyCache{refresh: time.Hour, keys: map[string]cachedKey{}, readEpoch: reads.read}
	key := models.APIKey{ID: "k1", Hash: "h1"}

	first := make(chan int64, 1)
	go func() { _, _, epoch := c.get(t.Context(), key.Hash); first <- epoch }()
	<-reads.started
	reads.answers <- 7
	epoch := <-first
	c.put(key, epoch)
	if _, ok, _ := getSoon(t, c, key.Hash); !ok {
		t.Fatal("the key was not cached")
	}

	c.mu.Lock()
	c.checked = time.Now().Add(-90 * time.Minute) // the next get re-reads the epoch
	c.mu.Unlock()
	refreshed := make(chan bool, 1)
	go func() { _, ok, _ := c.get(t.Context(), key.Hash); refreshed <- ok }()
	<-reads.started
	if _, ok, epoch := getSoon(t, c, key.Hash); !ok || epoch != 7 {
		t.Fatalf("during the epoch read: cached %v, epoch %d", ok, epoch)
	}

	c.forget()         // this process revokes a key while the read is under way
	reads.answers <- 7 // read before the revocation's bump
	<-refreshed
	c.put(key, 7) // a request that read the key's row before the revocation
	next := make(chan bool, 1)
	go func() { _, ok, _ := c.get(t.Context(), key.Hash); next <- ok }()
	select {
	case <-reads.started: // the read begun before forget was not trusted: read again
		reads.answers <- 8
		if <-next {
			t.Fatal("a key read before the revocation was cached")
		}
	case <-next:
		t.Fatal("the epoch read begun before the revocation was trusted")
	}
}

// While an epoch read stalls, the cache is answered from for two refreshes
// at most: past that a get reads the epoch itself, and the stalled read,
// ending later, does not undo what the later read found.
func TestKeyCacheOutlivesNoStalledEpochRead(t *testing.T) {
	reads := make(chan chan int64, 8)
	c := &keyCache{refresh: time.Hour, keys: map[string]cachedKey{}, readEpoch: func(context.Context) (int64, error) {
		answer := make(chan int64)
		reads <- answer
		return <-answer, nil
	}}
	key := models.APIKey{ID: "k1", Hash: "h1"}
	get := func() chan bool {
		done := make(chan bool, 1)
		go func() { _, ok, _ := c.get(t.Context(), key.Hash); done <- ok }()
		return done
	}
	first := get()
	(<-reads) <- 7
	<-first
	c.put(key, 7)

	c.mu.Lock()
	c.checked = time.Now().Add(-90 * time.Minute)
	c.mu.Unlock()
	stalled := get()
	stalledRead := <-reads
	c.mu.Lock()
	c.checked = time.Now().Add(-2 * time.Hour) // two refreshes overdue
	c.mu.Unlock()
	own := get()
	select {
	case read := <-reads:
		read <- 8 // a key was revoked elsewhere
	case <-own:
		t.Fatal("the cache was answered from two refreshes after its last check")
	case <-time.After(10 * time.Second):
		t.Fatal("no epoch read of its own")
	}
	if <-own {
		t.Fatal("the key was answered from the cache after the epoch moved")
	}
	stalledRead <- 7 // the stalled read ends with the older epoch
	<-stalled
	c.put(key, 7) // a request that read the key's row under the older epoch
	if _, ok, epoch := getSoon(t, c, key.Hash); ok || epoch != 8 {
		t.Fatalf("after the stalled read: cached %v under epoch %d, want not cached under 8", ok, epoch)
	}
}
