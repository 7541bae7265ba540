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
func HoldTurns(t testing.TB, db *gorm.DB) (release func(), waiting func() int64) {
	t.Helper()
	turns := db.Statement.ConnPool.(*pool).turns
	if err := turns.sem.Acquire(t.Context(), turns.turns); err != nil {
		t.Fatal(err)
	}
	turns.maxWait = time.Hour
	return func() {
			turns.sem.Release(turns.turns)
		}, func() int64 {
			return turns.waiting.Load()
		}
}

// WaitFor polls until cond holds, failing t after ten seconds.
var WaitFor = waitFor
