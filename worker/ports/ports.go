// Package ports finds free TCP ports for servers started a moment later
// (the embedded Temporal server, test servers), chosen where outgoing
// connections cannot take them in between.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Addr returns host:port for a port nothing listens on, for a server
// that will be started on it a little later.
//
// The port is taken below the kernel's ephemeral range. A port from the
// ephemeral range (what listening on port 0 gives) is free only until the
// next outgoing connection: between its release and the server's start, a
// database connection or a client retrying against that very address can
// be given it as its local port, and the Temporal server then fails to
// listen (seen in CI as a crash of the frontend). Outgoing connections
// never take ports below the range.
func Addr(host string) (string, error) {
	port, err := Port(host)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// Port is Addr's port.
func Port(host string) (int, error) {
	ports, err := Free(host, 1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// lowestPort is the bottom of the range ports are chosen from: above the
// well-known and commonly configured service ports.
const lowestPort = 10000

// Free returns n distinct free ports on host, chosen at random below
// the ephemeral range (see Addr). Where that range starts too low to
// leave room, it falls back to ports from the kernel.
func Free(host string, n int) ([]int, error) {
	high := ephemeralStart()
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempt := 0; len(ports) < n; attempt++ {
		port := 0
		if high-lowestPort >= 1000 && attempt < 200 {
			port = lowestPort + rand.IntN(high-lowestPort)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if port == 0 {
				return nil, fmt.Errorf("reserve a port: %w", err)
			}
			continue // taken: draw another
		}
		listeners = append(listeners, l) // held until all n are drawn, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux;
// elsewhere the IANA default 49152).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 49152
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 49152
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 49152
	}
	return low
}
