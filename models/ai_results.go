package models

import (
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// AIResult is a cached output: the same content, operation, options,
// provider and model reuse it instead of calling the model again.
type AIResult struct {
	OrgID            string `gorm:"primaryKey"`
	CacheKey         string `gorm:"primaryKey"`
	JobID            string
	Kind             string
	Provider         string
	Model            string
	Result           string
	PromptTokens     int64
	CompletionTokens int64
	CreatedAt        time.Time
}

// TableName is ai_results.
func (AIResult) TableName() string { return "ai_results" }

// FindAIResult returns the cached output for key in orgID, or nil.
func FindAIResult(tx *gorm.DB, orgID, key string) (*AIResult, error) {
	var r AIResult
	err := tx.Take(&r, "org_id = ? AND cache_key = ?", orgID, key).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &r, err
}

// StoreAIResult caches an output; a newer result for the same key (a
// refresh) replaces the older.
func StoreAIResult(tx *gorm.DB, r *AIResult) error {
	return tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "org_id"}, {Name: "cache_key"}},
		DoUpdates: clause.AssignmentColumns([]string{"job_id", "kind", "provider", "model", "result", "prompt_tokens", "completion_tokens", "created_at"}),
	}).Create(r).Error
}
