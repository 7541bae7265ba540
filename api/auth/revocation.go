package auth

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// DefaultRevocationRefresh is how often an API process re-reads the
// revoked sign-in sessions: with that read's round trip (at most twice
// this in all), the longest a revoked session's access token keeps working
// on a process that has not yet seen the revocation.
const DefaultRevocationRefresh = 5 * time.Second

// revocations is this process's copy of the revoked sign-in sessions
// (identity_revoked_sessions), re-read when older than refresh. The table
// holds only sessions revoked within the access-token lifetime, so the
// copy stays small; the database shares it among every API process.
//
// One request re-reads it; the others answer from the copy meanwhile
// rather than queue behind that round trip (under load, every signed-in
// request stalled behind it every refresh), so a revocation is seen
// within refresh plus one read, and within two refreshes however long that
// read takes: no request answers from an older copy.
type revocations struct {
	refresh time.Duration
	// load reads the sessions revoked and not yet expired.
	load func(context.Context) ([]string, error)

	mu       sync.Mutex
	sessions map[string]struct{} // nil until first read
	loadedAt time.Time           // when the read that made sessions began
	reading  int                 // requests reading, without holding mu
}

func newRevocations(db *gorm.DB) *revocations {
	return &revocations{refresh: DefaultRevocationRefresh, load: func(ctx context.Context) ([]string, error) {
		var ids []string
		err := db.WithContext(ctx).Model(&models.IdentityRevokedSession{}).
			Where("expires_at > ?", models.Now()).Pluck("session_id", &ids).Error
		return ids, err
	}}
}

// revoked tells whether session was revoked.
func (r *revocations) revoked(ctx context.Context, session string) (bool, error) {
	if session == "" {
		return false, nil // a token without a session (an external provider's)
	}
	r.mu.Lock()
	sessions, age := r.sessions, time.Since(r.loadedAt)
	// The copy is answered from while one request re-reads it, but not once
	// it is two refreshes old: a re-read that stalls must not stretch how
	// long a revoked session keeps working.
	read := sessions == nil || age >= 2*r.refresh || (age >= r.refresh && r.reading == 0)
	if read {
		r.reading++
	}
	r.mu.Unlock()
	if read {
		start := time.Now()
		ids, err := r.load(ctx)
		if err == nil {
			sessions = make(map[string]struct{}, len(ids))
			for _, id := range ids {
				sessions[id] = struct{}{}
			}
		}
		r.mu.Lock()
		r.reading--
		if err == nil && start.After(r.loadedAt) { // not over a read begun later
			r.sessions, r.loadedAt = sessions, start
		}
		r.mu.Unlock()
		if err != nil {
			return false, err
		}
	}
	_, ok := sessions[session]
	return ok, nil
}
