package auth

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// Key cache bounds.
const (
	// DefaultKeyEpochRefresh is how often a process re-reads the api_keys
	// epoch: with that read's round trip (at most twice this in all), the
	// longest a key revoked through another process (or by SQL) keeps
	// working here.
	DefaultKeyEpochRefresh = time.Second
	// keyCacheTTL is the longest a cached key is trusted even when the
	// epoch does not move (a safety net, not the revocation path).
	keyCacheTTL = time.Minute
	// keyCacheMax bounds the cache; past it, the cache starts over.
	keyCacheMax = 10_000
)

// keyCache keeps valid API keys by hash, so that a request with a key
// costs no database round trip. The database stays the source of truth:
// every change that can invalidate a key bumps the api_keys epoch
// (a trigger, migration 00012), and the cache empties itself when it sees
// the epoch move, which it checks at most once per refresh. Unknown and
// revoked keys are never cached.
type keyCache struct {
	refresh time.Duration
	// readEpoch reads the api_keys epoch (models.ReadCacheEpoch).
	readEpoch func(context.Context) (int64, error)

	mu      sync.Mutex
	keys    map[string]cachedKey
	epoch   int64
	checked time.Time
	// refreshing counts the gets reading the epoch, without holding mu.
	refreshing int
	// forgotten counts forget calls: an epoch read begun before one may
	// predate the revocation that called it, and is not trusted.
	forgotten uint64
}

type cachedKey struct {
	key models.APIKey
	at  time.Time
}

func newKeyCache(db *gorm.DB) *keyCache {
	return &keyCache{refresh: DefaultKeyEpochRefresh, keys: map[string]cachedKey{},
		readEpoch: func(ctx context.Context) (int64, error) { return models.ReadCacheEpoch(ctx, db, models.APIKeysEpoch) }}
}

// get returns a copy of the key with hash, or false when it is not cached,
// and the epoch this answer is valid for (to hand back to put). When the
// epoch cannot be read, nothing is cached and the caller reads the table.
func (c *keyCache) get(ctx context.Context, hash string) (models.APIKey, bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	// While one get reads the epoch, the others answer from the cache, but
	// not once the check is a whole refresh overdue: a read that stalls must
	// not stretch how long a revoked key keeps working here.
	overdue := now.Sub(c.checked)
	if overdue >= c.refresh && (c.refreshing == 0 || overdue >= 2*c.refresh) && !c.checkEpoch(ctx, now) {
		return models.APIKey{}, false, -1
	}
	k, ok := c.keys[hash]
	if !ok || now.Sub(k.at) >= keyCacheTTL {
		return models.APIKey{}, false, c.epoch
	}
	return k.key, true, c.epoch
}

// checkEpoch re-reads the epoch, emptying the cache when it has moved; it
// reports false when the epoch could not be read (the cache is then empty
// and unchecked). It is called with mu held and returns with it held, but
// reads without it: the other requests go on answering from the cache
// meanwhile, as they would a moment before the check was due, instead of
// queueing behind one request's round trip — a stall every second for
// every request with a key, longer when the database was busy.
func (c *keyCache) checkEpoch(ctx context.Context, now time.Time) bool {
	c.refreshing++
	forgotten := c.forgotten
	c.mu.Unlock()
	epoch, err := c.readEpoch(ctx)
	c.mu.Lock()
	c.refreshing--
	switch {
	case err == nil && now.Before(c.checked):
		return true // a read begun later has been applied: this one is older news
	case err != nil:
		c.keys = map[string]cachedKey{}
		c.checked = time.Time{}
		return false
	case forgotten != c.forgotten:
		return true // unchecked still: the next get reads the epoch again
	}
	if epoch != c.epoch {
		c.keys = map[string]cachedKey{}
		c.epoch = epoch
	}
	c.checked = now
	return true
}

// put caches a valid key read from the table after get answered epoch. If
// the epoch has moved since, the row may predate a revocation and is not
// kept; if it moves later, the next check drops it with the rest.
func (c *keyCache) put(k models.APIKey, epoch int64) {
	if k.RevokedAt != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch || c.checked.IsZero() {
		return
	}
	if len(c.keys) >= keyCacheMax {
		c.keys = map[string]cachedKey{}
	}
	c.keys[k.Hash] = cachedKey{key: k, at: time.Now()}
}

// forget drops every cached key at once (this process revoked one; the
// others see the epoch move).
func (c *keyCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = map[string]cachedKey{}
	c.checked = time.Time{}
	c.forgotten++
}
