package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The SMTP listener's configuration: with a certificate it offers
// STARTTLS; a port already taken, a certificate that does not load or a
// listener without a mail domain fails the start, as the HTTP listener's
// port does, instead of leaving the suite up without its mail.
func TestMailListenerOffersSTARTTLSOrFailsTheStart(t *testing.T) {
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // for a certificate and its key
	defer certSrv.Close()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := x509.MarshalPKCS8PrivateKey(certSrv.TLS.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{MailDomain: "mail.test", SMTPAddr: freeAddr(t), SMTPTLSCert: certFile, SMTPTLSKey: keyFile, SMTPClientRate: 600}

	m, err := listenMail(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveMail(cfg, m, nil, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	c, err := smtp.Dial(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); !ok {
		t.Fatal("no STARTTLS offered with a certificate")
	}
	pool := x509.NewCertPool()
	pool.AddCert(certSrv.Certificate())
	if err := c.StartTLS(&tls.Config{ServerName: "example.com", RootCAs: pool}); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for name, bad := range map[string]Config{
		"a port taken":             {MailDomain: "mail.test", SMTPAddr: taken.Addr().String()},
		"a missing key":            {MailDomain: "mail.test", SMTPAddr: freeAddr(t), SMTPTLSCert: certFile, SMTPTLSKey: filepath.Join(dir, "none.pem")},
		"no mail domain":           {SMTPAddr: freeAddr(t)},
		"a key as the certificate": {MailDomain: "mail.test", SMTPAddr: freeAddr(t), SMTPTLSCert: keyFile, SMTPTLSKey: keyFile},
	} {
		if m, err := listenMail(bad); err == nil || !strings.Contains(err.Error(), "SUITE_") {
			if m != nil {
				_ = m.ln.Close()
			}
			t.Errorf("%s: %v, want an error naming the setting", name, err)
		}
	}
	// Without SUITE_SMTP_ADDR there is no listener, and nothing to fail.
	if m, err := listenMail(Config{MailDomain: "mail.test"}); m != nil || err != nil {
		t.Fatalf("no address: %v %v", m, err)
	}
}
