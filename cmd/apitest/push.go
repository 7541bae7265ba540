package apitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/business-suite/suite/internal/netguard"
)

// WithPushService lets the Env's API and worker reach web-push services on
// loopback — the ones StartPushService starts. Without it the Env is as
// strict as production: push endpoints must be public https URLs, and the
// worker refuses every other address when it connects.
func WithPushService() Option {
	return func(o *options) { o.pushService = true }
}

// pushEgress is the egress policy of an Env.
func (o *options) pushEgress() netguard.Policy {
	if !o.pushService {
		return netguard.Policy{}
	}
	cert := loopbackCert()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return netguard.Policy{RootCAs: pool,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
}

// StartPushService serves h over https on loopback with a certificate the
// Env's worker trusts when created WithPushService; it stops with the test.
func StartPushService(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{loopbackCert()}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// loopbackCert is a self-signed certificate for 127.0.0.1, ::1 and
// localhost, made once per test binary.
var loopbackCert = sync.OnceValue(func() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "apitest push service"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
})
