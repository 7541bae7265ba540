package ai

import "testing"

func TestPreferWait(t *testing.T) {
	cases := []struct {
		header string
		want   int
		ok     bool
	}{
		{"", 0, false},
		{"wait=5", 5, true},
		{"Wait = 12", 12, true},
		{"respond-async, wait=7", 7, true},
		{"handling=lenient; wait=3", 3, true},
		{`wait="4"`, 4, true},
		{"wait=0", 0, true},
		{"wait=120", MaxWait, true},
		{"wait=-1", 0, false},
		{"wait=soon", 0, false},
		{"return=minimal", 0, false},
	}
	for _, c := range cases {
		got, ok := preferWait(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("Prefer %q: %d, %v; want %d, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}
