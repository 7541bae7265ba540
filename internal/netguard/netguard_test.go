package netguard_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/business-suite/suite/internal/netguard"
)

func TestCheckURL(t *testing.T) {
	loopback := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	cases := []struct {
		url    string
		policy netguard.Policy
		want   error
	}{
		{"http://push.example.com/x", netguard.Policy{}, netguard.ErrNotHTTPS},
		{"https://user:pw@push.example.com/x", netguard.Policy{}, netguard.ErrNotHTTPS},
		{"not a url", netguard.Policy{}, netguard.ErrNotHTTPS},
		{"https:///path", netguard.Policy{}, netguard.ErrNotHTTPS},
		{"https://127.0.0.1:8443/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://[::1]/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://[::ffff:127.0.0.1]/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://10.1.2.3/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://192.168.0.10/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://172.16.5.4/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://169.254.169.254/latest/meta-data", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://[fe80::1]/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://[fd00::1]/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://0.0.0.0/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://100.64.0.1/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://224.0.0.1/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://[64:ff9b::7f00:1]/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://localhost:9/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://push.localhost/x", netguard.Policy{}, netguard.ErrForbiddenAddress},
		{"https://8.8.8.8/x", netguard.Policy{}, nil},
		{"https://[2001:4860:4860::8888]/x", netguard.Policy{}, nil},
		{"https://127.0.0.1:8443/x", loopback, nil},
		{"https://localhost:8443/x", loopback, nil},
	}
	for _, c := range cases {
		err := c.policy.CheckURL(t.Context(), c.url)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("CheckURL(%q) = %v, want %v", c.url, err, c.want)
		}
	}
}

// Every connection is checked on the address actually dialled: a push
// service on loopback is unreachable by name or by address unless the
// policy allows it, and the server never sees the request.
func TestHTTPClientRefusesNonPublicAddressesAtDialTime(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	byName := "https://localhost:" + u.Port() + "/push"
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	post := func(p netguard.Policy, target string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		resp, err := p.HTTPClient(5 * time.Second).Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, target := range []string{srv.URL + "/push", byName} {
		if _, err := post(netguard.Policy{RootCAs: pool}, target); !errors.Is(err, netguard.ErrForbiddenAddress) {
			t.Fatalf("%s: %v, want ErrForbiddenAddress", target, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", hits.Load())
	}
	allowed := netguard.Policy{RootCAs: pool, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}}
	if status, err := post(allowed, srv.URL+"/push"); err != nil || status != http.StatusCreated {
		t.Fatalf("allowed loopback: %d %v", status, err)
	}
	// Plain http is refused too, even where the address is allowed: the
	// client only follows https redirects, and CheckURL refuses http.
	if err := allowed.CheckURL(t.Context(), "http://127.0.0.1:"+u.Port()); !errors.Is(err, netguard.ErrNotHTTPS) {
		t.Fatalf("http: %v", err)
	}
}

// SUITE_WEBHOOK_ALLOW_HOSTS: addresses, prefixes and names become the
// allow-list; plain http is accepted for those hosts only.
func TestAllowedHostsAndPlainHTTP(t *testing.T) {
	allow, err := netguard.ParseHosts(context.Background(), "127.0.0.1, 10.0.0.0/8,::1,,localhost")
	if err != nil || len(allow) < 3 {
		t.Fatalf("ParseHosts: %v, %v", allow, err)
	}
	for _, bad := range []string{"10.0.0.0/99", "no-such-host.invalid"} {
		if _, err := netguard.ParseHosts(context.Background(), bad); err == nil {
			t.Errorf("ParseHosts(%q) accepted", bad)
		}
	}
	local := netguard.Policy{PlainHTTP: true, Allow: allow}
	for raw, want := range map[string]error{
		"http://127.0.0.1:9099/hooks": nil,
		"https://127.0.0.1/hooks":     nil,
		"http://10.1.2.3/hooks":       nil,
		"http://[::1]:80/":            nil,
		"http://192.168.1.1/hooks":    netguard.ErrNotHTTPS, // not listed: https only, and not public
		"http://93.184.216.34/hooks":  netguard.ErrNotHTTPS, // public, but http
		"ftp://127.0.0.1/":            netguard.ErrNotHTTPS,
	} {
		if err := local.CheckURL(context.Background(), raw); !errors.Is(err, want) {
			t.Errorf("CheckURL(%s) = %v, want %v", raw, err, want)
		}
	}
	if err := (netguard.Policy{Allow: allow}).CheckURL(context.Background(), "http://127.0.0.1/"); !errors.Is(err, netguard.ErrNotHTTPS) {
		t.Errorf("without PlainHTTP: %v", err)
	}
}
