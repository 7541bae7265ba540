// Package netguard keeps the suite's requests to URLs that users supply
// (web-push endpoints, outbound webhooks) on the public internet: https
// only, and never to a loopback, private, link-local, multicast,
// unspecified or otherwise reserved address (IANA special-purpose
// registries, via code.dny.dev/ssrf), unless a Policy allows it. URLs are
// checked when they are registered, and every connection is checked again
// after DNS resolution, by the dialer itself — a name that resolved to a
// public address at registration and to an internal one later (DNS
// rebinding) is refused all the same.
package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Errors of the checks.
var (
	// ErrNotHTTPS: the URL is not an https URL with a host.
	ErrNotHTTPS = errors.New("not an https URL")
	// ErrForbiddenAddress: the host is, or resolves to, an address that
	// is not on the public internet.
	ErrForbiddenAddress = errors.New("not a public internet address")
)

// Policy decides which destinations are allowed.
type Policy struct {
	// Allow lists non-public prefixes that may be reached all the same.
	// Empty in production; tests set it (e.g. 127.0.0.1/32) to reach a
	// push service of their own. Never settable through the API.
	Allow []netip.Prefix
	// RootCAs, when set, are the certificate authorities trusted instead of
	// the system's (tests' own push services).
	RootCAs *x509.CertPool
	// PlainHTTP lets CheckURL accept an http:// URL whose host is in Allow
	// (local receivers in development and tests); https is required of
	// every other host.
	PlainHTTP bool
	// Resolver, when set, resolves names instead of net.DefaultResolver,
	// for the checks and for the connections alike (tests' own DNS).
	Resolver *net.Resolver
}

func (p Policy) resolver() *net.Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

// ParseHosts reads a comma-separated list of hosts — addresses, CIDR
// prefixes, or names resolved once, now (localhost) — as prefixes for
// Policy.Allow.
func ParseHosts(ctx context.Context, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
			continue
		case strings.Contains(h, "/"):
			p, err := netip.ParsePrefix(h)
			if err != nil {
				return nil, fmt.Errorf("%q is no CIDR prefix: %w", h, err)
			}
			out = append(out, p.Masked())
		default:
			addrs := []netip.Addr{}
			if a, err := netip.ParseAddr(h); err == nil {
				addrs = append(addrs, a)
			} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", h); err != nil || len(addrs) == 0 {
				return nil, fmt.Errorf("host %q does not resolve: %v", h, err)
			}
			for _, a := range addrs {
				out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			}
		}
	}
	return out, nil
}

// allowedHost tells whether host — an address or a name — is in Allow,
// with every address the name resolves to.
func (p Policy) allowedHost(ctx context.Context, host string) bool {
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a.Unmap())
	} else {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resolved, err := p.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil {
			return false
		}
		addrs = resolved
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(p.Allow, func(pre netip.Prefix) bool { return pre.Contains(a.Unmap()) }) {
			return false
		}
	}
	return len(addrs) > 0
}

func (p Policy) guardian() *ssrf.Guardian {
	var v4, v6 []netip.Prefix
	for _, pre := range p.Allow {
		if pre.Addr().Is4() {
			v4 = append(v4, pre)
		} else {
			v6 = append(v6, pre)
		}
	}
	return ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...))
}

// CheckAddr fails with ErrForbiddenAddress unless a may be reached.
func (p Policy) CheckAddr(a netip.Addr) error {
	if err := p.guardian().SafeAddr(a.Unmap()); err != nil {
		return fmt.Errorf("%w: %v", ErrForbiddenAddress, err)
	}
	return nil
}

// CheckURL checks a URL when it is registered: an https URL whose host is
// a public address or a name resolving only to public addresses. A name
// that does not resolve now is accepted (DNS may be down, or not yet set
// up); every connection is checked at dial time anyway.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || u.User != nil {
		return ErrNotHTTPS
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.PlainHTTP && p.allowedHost(ctx, host):
		return nil
	default:
		return ErrNotHTTPS
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(a)
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return p.checkNamed(ctx, host) // reserved for loopback (RFC 6761)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			return err
		}
	}
	return nil
}

// checkNamed refuses a loopback name unless its addresses are allowed.
func (p Policy) checkNamed(ctx context.Context, host string) error {
	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("%w: %s is a loopback name", ErrForbiddenAddress, host)
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			return err
		}
	}
	return nil
}

// control is the dialer's Control: it runs for every connection attempt,
// on the address actually dialled (after DNS resolution).
func (p Policy) control(g *ssrf.Guardian) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
		}
		if err := g.SafeAddr(ap.Addr().Unmap()); err != nil {
			return fmt.Errorf("%w: %v", ErrForbiddenAddress, err)
		}
		return nil
	}
}

// HTTPClient is a client for requests to user-supplied URLs: every
// connection is checked by the dialer, no proxy is used (a proxy would
// dial for us, unchecked), redirects must stay on https, and each request
// is bounded by timeout.
func (p Policy) HTTPClient(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: p.control(p.guardian()), Resolver: p.Resolver}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.RootCAs},
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect to %s", ErrNotHTTPS, req.URL.Scheme)
			}
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
}
