package database

import (
	"testing"
	"time"

	"gorm.io/gorm"
)

// HoldTurns takes every turn on db's pool (admission) until release, and
// makes a statement that waits for one wait for good instead of going
// ahead after a while (for the rest of db's life). Waiting tells how many
// statements wait now.
func HoldTurns(t testing.TB, db *gorm.DB) (release func(), waiting func() int) {
	t.Helper()
	turns := db.Statement.ConnPool.(*pool).turns
	turns.mu.Lock()
	held := turns.free
	turns.free = 0
	turns.maxWait = time.Hour
	turns.mu.Unlock()
	return func() {
		for range held {
			turns.leave(true)
		}
	}, turns.waiting
}

// WaitFor polls until cond holds, failing t after ten seconds.
var WaitFor = waitFor
