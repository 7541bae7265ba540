package main

import (
	"flag"
	"testing"
	"time"
)

func TestQuickLeavesTheFlagsGivenAlone(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	rounds := fs.Int("rounds", 3, "")
	duration := fs.Duration("duration", 10*time.Second, "")
	fs.Int("burst", 5000, "")
	fs.Duration("intake-for", time.Minute, "")
	fs.Duration("mixed-for", 30*time.Second, "")
	if err := fs.Parse([]string{"-rounds", "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := applyQuick(fs); err != nil {
		t.Fatal(err)
	}
	if *rounds != 2 || *duration != 3*time.Second {
		t.Errorf("rounds %d, duration %v; want 2 (given), 3s (quick)", *rounds, *duration)
	}
}
