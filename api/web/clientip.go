package web

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies are the reverse proxies (load balancers) in front of the API
// whose X-Forwarded-For is believed (SUITE_TRUSTED_PROXIES).
type Proxies struct{ nets []netip.Prefix }

// ParseProxies reads a list of addresses and CIDR ranges ("10.0.0.7",
// "10.0.0.0/8", "fd00::/8").
func ParseProxies(list []string) (Proxies, error) {
	var p Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return Proxies{}, fmt.Errorf("%q is neither an IP address nor a CIDR range", s)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.nets = append(p.nets, prefix.Masked())
	}
	return p, nil
}

// Any tells whether any proxy is configured.
func (p Proxies) Any() bool { return len(p.nets) > 0 }

// Trusts tells whether addr is one of the proxies.
func (p Proxies) Trusts(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, n := range p.nets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

type clientIPKey struct{}

// Middleware finds each request's client address (ClientIP) when proxies
// are configured; without any, ClientIP is the connection's peer and this
// middleware is not needed.
//
// Behind a trusted proxy the client is the rightmost address in
// X-Forwarded-For that is not itself a trusted proxy. Every hop appends the
// address it received the request from, so the addresses right of the
// client's were written by proxies we trust; those left of it were sent by
// the client and are ignored: the leftmost address, which a client can
// write anything into, would let it pick a new rate-limit bucket for every
// request.
func (p Proxies) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Locals(clientIPKey{}, p.client(c))
		return c.Next()
	}
}

func (p Proxies) client(c *fiber.Ctx) string {
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok || !p.Trusts(peer) {
		return c.Context().RemoteIP().String()
	}
	client := peer.Unmap()
	// Header lines in order, each a comma-separated list: read from the end.
	lines := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for len(line) > 0 {
			var entry []byte
			if comma := bytes.LastIndexByte(line, ','); comma >= 0 {
				entry, line = line[comma+1:], line[:comma]
			} else {
				entry, line = line, nil
			}
			addr, err := netip.ParseAddr(string(bytes.TrimSpace(entry)))
			if err != nil {
				// Not an address: nothing left of it can be believed; the
				// last proxy that handed it on stands for the client.
				return client.String()
			}
			client = addr.Unmap()
			if !p.Trusts(client) {
				return client.String()
			}
		}
	}
	return client.String()
}

// ClientIP is the request's client address: the connection's peer, or
// behind trusted proxies the address Proxies.Middleware found. It is a
// string of its own (not in a fasthttp buffer), safe to keep.
func ClientIP(c *fiber.Ctx) string {
	if ip, ok := c.Locals(clientIPKey{}).(string); ok {
		return ip
	}
	return c.Context().RemoteIP().String()
}
