package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitStatus(t *testing.T, url string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %d within %s (last: %v)", url, want, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevRunsEverythingAndRestarts drives `suite dev` in-process: it comes
// up ready with the Temporal UI, stops cleanly on cancellation, and starts
// again on the same data directory.
func TestDevRunsEverythingAndRestarts(t *testing.T) {
	var out bytes.Buffer
	stdout = &out
	t.Setenv("SUITE_LOG_LEVEL", "error")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr, cfg.TemporalAddress, cfg.TemporalUIAddr = freeAddr(t), freeAddr(t), freeAddr(t)
	base := "http://" + cfg.HTTPAddr

	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runDev(ctx, cfg) }()
		waitStatus(t, base+"/readyz", 200, 30*time.Second)
		waitStatus(t, "http://"+cfg.TemporalUIAddr+"/", 200, 5*time.Second)
		resp, err := http.Get(base + "/crm/contacts")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("round %d: /crm/contacts without credentials: %d", round, resp.StatusCode)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: dev stopped with %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: dev did not stop", round)
		}
	}
	for _, want := range []string{"Temporal UI", "API reference", "/docs", cfg.TemporalAddress} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := runMigrate(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "database is current") {
		t.Fatalf("migrate after dev: %s", out.String())
	}
}

func TestConfigMasksSecrets(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://app:hunter2@db:5432/suite")
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_123")
	t.Setenv("TEMPORAL_API_KEY", "tmprl-secret")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	logged := fmt.Sprint(cfg.LogAttrs()...)
	for _, secret := range []string{"hunter2", "sk_test_123", "tmprl-secret"} {
		if strings.Contains(logged, secret) {
			t.Fatalf("secret %q logged: %s", secret, logged)
		}
	}
	if !strings.Contains(logged, "DATABASE_URL=postgres://app:xxxxx@db:5432/suite") {
		t.Fatalf("database URL not shown redacted: %s", logged)
	}
}

func TestRunRejectsUnknownCommands(t *testing.T) {
	if err := run(context.Background(), []string{"frobnicate"}); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(context.Background(), nil); err == nil {
		t.Fatal("no command accepted")
	}
}
