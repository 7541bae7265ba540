package database

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// waitFor polls until cond holds (each statement under test reports that
// it waits through the admission's own counter, not a sleep).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Statements that wait get their turns in the order they arrived — the
// fairness database/sql's pool, which hands a freed connection to a random
// waiter, lacks.
func TestAdmissionAdmitsInArrivalOrder(t *testing.T) {
	a := newAdmission(1)
	first, err := a.enter(t.Context())
	if err != nil || !first {
		t.Fatalf("a free turn: %v, %v", first, err)
	}
	const n = 20
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			admitted, err := a.enter(context.Background())
			if err != nil || !admitted {
				t.Errorf("statement %d: admitted %v, %v", i, admitted, err)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			a.leave(admitted)
		})
		waitFor(t, "the statement waits", func() bool { return a.waiting() == i+1 })
	}
	a.leave(first)
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("turns in the order %v, want arrival order", order)
		}
	}
}

// A statement that has waited maxWait goes ahead without a turn, so that
// nothing can stall on the turns for longer; one whose context ends stops
// waiting with its error.
func TestAdmissionGoesAheadAfterMaxWait(t *testing.T) {
	a := newAdmission(1)
	a.maxWait = 20 * time.Millisecond
	held, _ := a.enter(t.Context())
	admitted, err := a.enter(t.Context())
	if err != nil || admitted {
		t.Fatalf("after maxWait: admitted %v, %v; want it to go ahead without a turn", admitted, err)
	}
	a.leave(admitted) // gives back nothing: the turn is still held
	if a.free != 0 {
		t.Fatal("leaving without a turn freed the held one")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.enter(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	a.leave(held)
	if again, err := a.enter(t.Context()); err != nil || !again {
		t.Fatalf("after the turn was given back: %v, %v", again, err)
	}
}
