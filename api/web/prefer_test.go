package web_test

import (
	"testing"
	"time"

	"github.com/business-suite/suite/api/web"
)

func TestParsePreferWait(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"wait=5", 5 * time.Second, true},
		{"Wait = 12", 12 * time.Second, true},
		{"respond-async, wait=7", 7 * time.Second, true},
		{"handling=lenient; wait=3", 3 * time.Second, true},
		{`wait="4"`, 4 * time.Second, true},
		{"wait=0", 0, true},
		{"wait=120", web.MaxPreferWait, true},
		{"wait=99999999999999", web.MaxPreferWait, true}, // would overflow as a Duration before the cap
		{"wait=-1", 0, false},
		{"wait=soon", 0, false},
		{"return=minimal", 0, false},
	}
	for _, c := range cases {
		got, ok := web.ParsePreferWait(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("Prefer %q: %v, %v; want %v, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}
