package ports

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsAreFreeDistinctAndOutsideTheEphemeralRange: an outgoing
// connection can never be handed one of them while the server is starting.
func TestPortsAreFreeDistinctAndOutsideTheEphemeralRange(t *testing.T) {
	got, err := Free("127.0.0.1", 8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range got {
		if p < lowestPort || p >= ephemeralStart() {
			t.Errorf("port %d is outside [%d, %d)", p, lowestPort, ephemeralStart())
		}
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		_ = l.Close()
	}
}
