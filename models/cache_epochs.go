package models

import (
	"context"

	"gorm.io/gorm"
)

// CacheEpoch counts the changes to a table that processes cache (migration
// 00012): a database trigger bumps it in the same transaction as the
// change, so every process learns that its copy is stale by re-reading one
// small row.
type CacheEpoch struct {
	Name  string `gorm:"primaryKey"`
	Epoch int64
}

// TableName is not GORM's guess ("cache_epoches").
func (CacheEpoch) TableName() string { return "cache_epochs" }

// APIKeysEpoch names the epoch of api_keys: bumped when a key is revoked,
// moved to another organization or service, re-hashed or deleted.
const APIKeysEpoch = "api_keys"

// ReadCacheEpoch returns the current epoch of name.
func ReadCacheEpoch(ctx context.Context, db *gorm.DB, name string) (int64, error) {
	var e CacheEpoch
	err := db.WithContext(ctx).Take(&e, "name = ?", name).Error
	return e.Epoch, err
}
