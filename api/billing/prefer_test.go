package billing

import (
	"testing"
	"time"
)

func TestPreferWaitIsCappedWithoutOverflow(t *testing.T) {
	for header, want := range map[string]time.Duration{
		"wait=5":                    5 * time.Second,
		"wait=31":                   MaxWait,
		"wait=99999999999999":       MaxWait, // would overflow as a Duration before the cap
		"respond-async, wait=\"7\"": 7 * time.Second,
	} {
		got, ok := preferWait(header)
		if !ok || got != want {
			t.Errorf("%q: %v %v, want %v", header, got, ok, want)
		}
	}
	if _, ok := preferWait("wait=-1"); ok {
		t.Error("a negative wait was honoured")
	}
}
