// Package dnstest is a DNS server for tests whose answers the test
// changes as it goes — to re-point a name at another address between a
// check and a connection (DNS rebinding) — and a resolver that asks it.
package dnstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server answers A and AAAA questions over UDP from the records Set gave
// it; a name it has no records of does not exist (NXDOMAIN).
type Server struct {
	conn    net.PacketConn
	mu      sync.Mutex
	records map[string][]netip.Addr
}

// Start starts a server on loopback for the test t.
func Start(t *testing.T) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, records: map[string][]netip.Addr{}}
	t.Cleanup(func() { _ = conn.Close() })
	go s.serve()
	return s
}

// Set makes name resolve to addrs from now on.
func (s *Server) Set(name string, addrs ...netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[canonical(name)] = addrs
}

// Resolver is a resolver that asks s alone (not /etc/hosts' names, which
// the Go resolver reads first).
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
	}}
}

func canonical(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) + "." }

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if out, err := s.answer(buf[:n]); err == nil {
			_, _ = s.conn.WriteTo(out, from)
		}
	}
}

// answer is the response to one query message.
func (s *Server) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	addrs, known := s.records[canonical(q.Name.String())]
	s.mu.Unlock()
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
