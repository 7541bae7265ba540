package devserver

import (
	"fmt"
	"net"
)

// checkFree fails when something already listens on addr.
func checkFree(addr string) error {
	if addr == "" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s is already in use (is another `suite dev` or Temporal running?): %w", addr, err)
	}
	return l.Close()
}
