package auth

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// DefaultRevocationRefresh is how often an API process re-reads the
// revoked sign-in sessions: the longest a revoked session's access token
// keeps working on a process that has not yet seen the revocation.
const DefaultRevocationRefresh = 5 * time.Second

// revocations is this process's copy of the revoked sign-in sessions
// (identity_revoked_sessions), re-read when older than refresh. The table
// holds only sessions revoked within the access-token lifetime, so the
// copy stays small; the database shares it among every API process.
type revocations struct {
	db      *gorm.DB
	refresh time.Duration

	mu       sync.Mutex
	sessions map[string]struct{}
	loadedAt time.Time
}

// revoked tells whether session was revoked.
func (r *revocations) revoked(ctx context.Context, session string) (bool, error) {
	if session == "" {
		return false, nil // a token without a session (an external provider's)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions == nil || time.Since(r.loadedAt) >= r.refresh {
		var ids []string
		err := r.db.WithContext(ctx).Model(&models.IdentityRevokedSession{}).
			Where("expires_at > ?", models.Now()).Pluck("session_id", &ids).Error
		if err != nil {
			return false, err
		}
		r.sessions = make(map[string]struct{}, len(ids))
		for _, id := range ids {
			r.sessions[id] = struct{}{}
		}
		r.loadedAt = time.Now()
	}
	_, ok := r.sessions[session]
	return ok, nil
}
