package models

import (
	"fmt"
	"testing"
	"time"
)

// An endpoint subscribes to types by name, by group or to all; a pattern
// naming no type is refused when the endpoint is saved.
func TestEventPatterns(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{[]string{"deal.won"}, "deal.won", true},
		{[]string{"deal.won"}, "deal.lost", false},
		{[]string{"deal.*"}, "deal.stage_changed", true},
		{[]string{"deal.*"}, "dealer.created", false},
		{[]string{"contact.*", "*"}, "deal.deleted", true},
		{nil, "deal.won", false},
	} {
		if got := EventMatches(tc.patterns, tc.typ); got != tc.want {
			t.Errorf("EventMatches(%v, %s) = %v", tc.patterns, tc.typ, got)
		}
	}
	for p, want := range map[string]bool{"*": true, "deal.*": true, "deal.won": true, "deal.exploded": false,
		"nothing.*": false, "deal": false, "": false, WebhookTestEvent: false, "*.won": false} {
		if got := ValidEventPattern(p); got != want {
			t.Errorf("ValidEventPattern(%q) = %v", p, got)
		}
	}
}

// "previous" holds the changed fields' earlier values, never the
// timestamp every write moves.
func TestPreviousFields(t *testing.T) {
	type view struct {
		Stage     string    `json:"stage"`
		Amount    float64   `json:"amount"`
		Owner     *string   `json:"owner"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	ada := "ada"
	before := view{Stage: "NEW", Amount: 10, UpdatedAt: time.Unix(1, 0)}
	after := view{Stage: "WON", Amount: 10, Owner: &ada, UpdatedAt: time.Unix(2, 0)}
	prev, err := PreviousFields(before, after)
	if err != nil || fmt.Sprint(prev) != "map[owner:<nil> stage:NEW]" {
		t.Fatalf("previous %v, %v", prev, err)
	}
	if prev, _ := PreviousFields(before, before); len(prev) != 0 {
		t.Fatalf("no change: %v", prev)
	}
}

// A rotated-out secret signs beside the new one for its overlap only.
func TestEndpointSecretsAfterARotation(t *testing.T) {
	now := time.Now()
	until := now.Add(time.Hour)
	e := WebhookEndpoint{Secret: "new", PreviousSecret: "old", PreviousSecretUntil: &until}
	if s := e.Secrets(now); len(s) != 2 || s[0] != "new" {
		t.Fatalf("within the overlap: %v", s)
	}
	if s := e.Secrets(until); len(s) != 1 || s[0] != "new" {
		t.Fatalf("after it: %v", s)
	}
}
