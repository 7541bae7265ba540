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
	// epoch: the longest a key revoked through another process (or by SQL)
	// keeps working here.
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
	db      *gorm.DB
	refresh time.Duration

	mu      sync.Mutex
	keys    map[string]cachedKey
	epoch   int64
	checked time.Time
}

type cachedKey struct {
	key models.APIKey
	at  time.Time
}

func newKeyCache(db *gorm.DB) *keyCache {
	return &keyCache{db: db, refresh: DefaultKeyEpochRefresh, keys: map[string]cachedKey{}}
}

// get returns a copy of the key with hash, or false when it is not cached,
// and the epoch this answer is valid for (to hand back to put). When the
// epoch cannot be read, nothing is cached and the caller reads the table.
func (c *keyCache) get(ctx context.Context, hash string) (models.APIKey, bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.checked) >= c.refresh {
		epoch, err := models.ReadCacheEpoch(ctx, c.db, models.APIKeysEpoch)
		if err != nil {
			c.keys = map[string]cachedKey{}
			c.checked = time.Time{}
			return models.APIKey{}, false, -1
		}
		if epoch != c.epoch {
			c.keys = map[string]cachedKey{}
			c.epoch = epoch
		}
		c.checked = now
	}
	k, ok := c.keys[hash]
	if !ok || now.Sub(k.at) >= keyCacheTTL {
		return models.APIKey{}, false, c.epoch
	}
	return k.key, true, c.epoch
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
}
