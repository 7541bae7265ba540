package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/worker/ports"
)

// freeAddr is an address for a server the test starts later (see
// ports.Addr for why not port 0).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := ports.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return addr
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
	out := &syncBuffer{}
	stdout = out
	t.Setenv("SUITE_LOG_LEVEL", "info")
	t.Setenv("OPENAI_API_KEY", "sk-dev-secret")
	t.Setenv("SUITE_SMTP_ADDR", freeAddr(t)) // not dev's 2525: a `make run` here may hold it
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr, cfg.TemporalAddress, cfg.TemporalUIAddr = freeAddr(t), freeAddr(t), freeAddr(t)
	cfg.DevSMTPAddr, cfg.SMTPURL = freeAddr(t), ""
	base := "http://" + cfg.HTTPAddr

	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runDev(ctx, cfg) }()
		waitStatus(t, base+"/readyz", 200, 30*time.Second)
		// The banner and the demo credentials follow readiness.
		waitOutputCount(t, out, "Demo organization", round)
		waitStatus(t, "http://"+cfg.TemporalUIAddr+"/", 200, 5*time.Second)
		resp, err := http.Get(base + "/crm/contacts")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("round %d: /crm/contacts without credentials: %d", round, resp.StatusCode)
		}
		// The demo organization was seeded (round 1) and kept (round 2); the
		// printed key works, as the printed curl examples promise.
		var demo demoCredentials
		deadline := time.Now().Add(15 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(cfg.DataDir, "demo.json"))
			if err == nil && json.Unmarshal(b, &demo) == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: demo credentials: %v", round, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		req, _ := http.NewRequest("GET", base+"/crm/organization/"+demo.OrgID, nil)
		req.Header.Set("Authorization", "Bearer "+demo.Keys["crm"])
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var org struct{ Status, Plan string }
		_ = json.NewDecoder(resp.Body).Decode(&org)
		resp.Body.Close()
		if resp.StatusCode != 200 || org.Status != "active" || org.Plan != "business" {
			t.Fatalf("round %d: demo organization: %d %+v", round, resp.StatusCode, org)
		}
		if round == 1 {
			devInvitationIsMailed(t, cfg, base, demo)
			sdkMetricsAreExported(t, base)
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
	// The configuration is logged at start, at info level, secrets masked.
	if strings.Count(out.String(), `"level":"INFO","msg":"starting"`) != 2 ||
		!strings.Contains(out.String(), `"SUITE_DATA_DIR":"`+cfg.DataDir+`"`) ||
		!strings.Contains(out.String(), `"OPENAI_API_KEY":"****"`) || strings.Contains(out.String(), "sk-dev-secret") {
		t.Errorf("configuration not logged at start with secrets masked:\n%s", out.String())
	}
	if strings.Count(out.String(), "Demo organization") != 2 {
		t.Errorf("demo credentials not printed on both starts:\n%s", out.String())
	}
	for _, want := range []string{"Temporal UI", "API reference", "/docs", cfg.TemporalAddress, "curl -s", filepath.Join(cfg.DataDir, "mail")} {
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

// devInvitationIsMailed invites someone as the demo owner: `suite dev`'s
// mail sink keeps the invitation e-mail, with the token the inviter was
// shown, under SUITE_DATA_DIR/mail.
func devInvitationIsMailed(t *testing.T, cfg Config, base string, demo demoCredentials) {
	t.Helper()
	post := func(path, token string, body any, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	post("/identity/v1/token", "", map[string]string{"grant_type": "password", "email": demo.Email, "password": demo.Password}, &tok)
	var inv struct{ Invitation struct{ Token string } }
	post("/crm/organization/"+demo.OrgID+"/members", tok.AccessToken, map[string]string{"email": "new-hire@example.com", "role": "AGENT"}, &inv)
	deadline := time.Now().Add(20 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(cfg.DataDir, "mail", "*.eml"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "new-hire@example.com") &&
				strings.Contains(strings.ReplaceAll(string(b), "=\r\n", ""), inv.Invitation.Token) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no invitation e-mail with the token in %s", filepath.Join(cfg.DataDir, "mail"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sdkMetricsAreExported: /metrics carries the Temporal SDK's metrics next
// to the HTTP ones (the demo organization's registration has completed).
func sdkMetricsAreExported(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"temporal_workflow_completed", "temporal_activity_execution_latency", "suite_http_requests_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s:\n%.2000s", want, body)
		}
	}
}

func TestConfigMasksSecrets(t *testing.T) {
	t.Setenv("SMTP_URL", "smtps://mailer:smtp-hunter3@mail.example.com")
	t.Setenv("DATABASE_URL", "postgres://app:hunter2@db:5432/suite")
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_123")
	t.Setenv("TEMPORAL_API_KEY", "tmprl-secret")
	t.Setenv("TEMPORAL_DB_URL", "postgres://temporal:tmprl-db-pw@db:5432/temporal")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	logged := fmt.Sprint(cfg.LogAttrs()...)
	for _, secret := range []string{"hunter2", "sk_test_123", "tmprl-secret", "smtp-hunter3", "tmprl-db-pw"} {
		if strings.Contains(logged, secret) {
			t.Fatalf("secret %q logged: %s", secret, logged)
		}
	}
	if !strings.Contains(logged, "DATABASE_URL=postgres://app:xxxxx@db:5432/suite") {
		t.Fatalf("database URL not shown redacted: %s", logged)
	}
}

// A Temporal cluster node's settings: the node listens on one address, and
// the shards and pool bounds are positive.
func TestTemporalNodeConfig(t *testing.T) {
	t.Setenv("TEMPORAL_DB_URL", "postgres://postgres@127.0.0.1:5432/temporal")
	for env, bad := range map[string]string{
		"TEMPORAL_ADDRESS":        "127.0.0.1:7233,127.0.0.1:7243",
		"TEMPORAL_HISTORY_SHARDS": "0",
		"TEMPORAL_DB_MAX_CONNS":   "0",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, bad)
			if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("%s=%s: %v, want a configuration error naming it", env, bad, err)
			}
		})
	}
	cfg, err := LoadConfig()
	if err != nil || cfg.TemporalHistoryShards != 4 || cfg.TemporalDBMaxConns != 10 {
		t.Fatalf("defaults: shards %d, max conns %d, %v", cfg.TemporalHistoryShards, cfg.TemporalDBMaxConns, err)
	}
}

// The long-running processes collect garbage at defaultGCPercent unless
// GOGC says otherwise.
func TestGCPercentUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GC percent %d without GOGC, want %d", got, defaultGCPercent)
	}
	t.Setenv("GOGC", "100")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC=100, want 100", got)
	}
}

// And with a soft memory limit of defaultMemoryLimit unless GOMEMLIMIT
// says otherwise.
func TestMemoryLimitUnlessGOMEMLIMITIsSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	setGCPercent()
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Fatalf("memory limit %d without GOMEMLIMIT, want %d", got, defaultMemoryLimit)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "2GiB")
	setGCPercent()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit %d with GOMEMLIMIT set, want the runtime's own (%d)", got, int64(math.MaxInt64))
	}
}

// loadWithout is the configuration with the variable name unset (it is
// restored after the test).
func loadWithout(t *testing.T, name string) Config {
	t.Helper()
	t.Setenv(name, "")
	os.Unsetenv(name)
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestOutboxConcurrencyByMode(t *testing.T) {
	cfg := loadWithout(t, "SUITE_OUTBOX_CONCURRENCY")
	if dev, cluster := cfg.OutboxConcurrencyFor(true), cfg.OutboxConcurrencyFor(false); dev != devOutboxConcurrency || cluster != clusterOutboxConcurrency {
		t.Fatalf("defaults: dev %d, cluster %d", dev, cluster)
	}
	t.Setenv("SUITE_OUTBOX_CONCURRENCY", "5")
	if cfg, err := LoadConfig(); err != nil || cfg.OutboxConcurrencyFor(true) != 5 || cfg.OutboxConcurrencyFor(false) != 5 {
		t.Fatalf("SUITE_OUTBOX_CONCURRENCY=5: %v, %+v", err, cfg.OutboxConcurrency)
	}
	t.Setenv("SUITE_OUTBOX_CONCURRENCY", "-1")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_OUTBOX_CONCURRENCY") {
		t.Fatalf("a negative concurrency was accepted: %v", err)
	}
}

func TestOutboxYieldRateByMode(t *testing.T) {
	cfg := loadWithout(t, "SUITE_OUTBOX_YIELD_RATE")
	if dev, cluster := cfg.OutboxYieldRateFor(true), cfg.OutboxYieldRateFor(false); dev != devOutboxYieldRate || cluster != 0 {
		t.Fatalf("defaults: dev %d, cluster %d", dev, cluster)
	}
	for value, want := range map[string]int{"0": 0, "12": 12} {
		t.Setenv("SUITE_OUTBOX_YIELD_RATE", value)
		if cfg, err := LoadConfig(); err != nil || cfg.OutboxYieldRateFor(true) != want || cfg.OutboxYieldRateFor(false) != want {
			t.Fatalf("SUITE_OUTBOX_YIELD_RATE=%s: %v, %v", value, err, cfg.OutboxYieldRate)
		}
	}
	t.Setenv("SUITE_OUTBOX_YIELD_RATE", "-1")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_OUTBOX_YIELD_RATE") {
		t.Fatalf("a negative rate was accepted: %v", err)
	}
}

func TestMaxInFlightByMode(t *testing.T) {
	cfg := loadWithout(t, "SUITE_MAX_IN_FLIGHT")
	if dev, cluster := cfg.MaxInFlightFor(true, 2), cfg.MaxInFlightFor(false, 2); dev != 2*devInFlightPerCore || cluster != 0 {
		t.Fatalf("defaults on 2 cores: dev %d, cluster %d", dev, cluster)
	}
	for value, want := range map[string]int{"-1": 0, "12": 12} {
		t.Setenv("SUITE_MAX_IN_FLIGHT", value)
		if cfg, err := LoadConfig(); err != nil || cfg.MaxInFlightFor(true, 2) != want || cfg.MaxInFlightFor(false, 2) != want {
			t.Fatalf("SUITE_MAX_IN_FLIGHT=%s: %v, %v", value, err, cfg.MaxInFlight)
		}
	}
	t.Setenv("SUITE_MAX_IN_FLIGHT", "-2")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_MAX_IN_FLIGHT") {
		t.Fatalf("a limit below -1 was accepted: %v", err)
	}
}

func TestAccessLogByMode(t *testing.T) {
	cfg := loadWithout(t, "SUITE_ACCESS_LOG")
	if dev, cluster := cfg.AccessLogFor(true), cfg.AccessLogFor(false); dev != web.AccessLogAll || cluster != clusterAccessLog {
		t.Fatalf("defaults: dev %s, cluster %s", dev, cluster)
	}
	for _, value := range []string{"all", "errors", "sample:100"} {
		t.Setenv("SUITE_ACCESS_LOG", value)
		if cfg, err := LoadConfig(); err != nil || cfg.AccessLogFor(true).String() != value || cfg.AccessLogFor(false).String() != value {
			t.Fatalf("SUITE_ACCESS_LOG=%s: %v, %v", value, err, cfg.AccessLogFor(true))
		}
	}
	t.Setenv("SUITE_ACCESS_LOG", "sample:0")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_ACCESS_LOG") {
		t.Fatalf("sample:0 was accepted: %v", err)
	}
}

func TestDBMaxActiveByMode(t *testing.T) {
	cfg := loadWithout(t, "SUITE_DB_MAX_ACTIVE")
	if dev, cluster := cfg.DBMaxActiveFor(true), cfg.DBMaxActiveFor(false); dev != min(2*runtime.GOMAXPROCS(0), cfg.DBMaxOpenConns) || cluster != cfg.DBMaxOpenConns {
		t.Fatalf("defaults: dev %d, cluster %d (pool %d)", dev, cluster, cfg.DBMaxOpenConns)
	}
	t.Setenv("SUITE_DB_MAX_OPEN_CONNS", "12")
	t.Setenv("SUITE_DB_MAX_ACTIVE", "3")
	if cfg, err := LoadConfig(); err != nil || cfg.DBMaxActiveFor(true) != 3 || cfg.DBMaxActiveFor(false) != 3 {
		t.Fatalf("SUITE_DB_MAX_ACTIVE=3: %v, %d", err, cfg.DBMaxActive)
	}
	for _, bad := range []string{"-1", "13"} {
		t.Setenv("SUITE_DB_MAX_ACTIVE", bad)
		if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_DB_MAX_ACTIVE") {
			t.Fatalf("SUITE_DB_MAX_ACTIVE=%s was accepted: %v", bad, err)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Setenv("SUITE_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Proxies(); !p.Trusts(netip.MustParseAddr("10.4.5.6")) || !p.Trusts(netip.MustParseAddr("192.0.2.7")) || p.Trusts(netip.MustParseAddr("192.0.2.8")) {
		t.Fatalf("SUITE_TRUSTED_PROXIES read as %+v", p)
	}
	t.Setenv("SUITE_TRUSTED_PROXIES", "10.0.0.0/8,lb.internal")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "SUITE_TRUSTED_PROXIES") {
		t.Fatalf("a host name was accepted: %v", err)
	}
}

func TestBillingConfig(t *testing.T) {
	if cfg, err := LoadConfig(); err != nil || cfg.Billing().Configured() {
		t.Fatalf("billing must be off without STRIPE_SECRET_KEY: %v", err)
	}
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_123")
	t.Setenv("STRIPE_API_BASE", "http://127.0.0.1:12111")
	t.Setenv("STRIPE_PRICE_BUSINESS", "price_b_m")
	t.Setenv("STRIPE_PRICE_ENTERPRISE_YEARLY", " price_e_y ")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Billing()
	want := map[string]string{"business/month": "price_b_m", "enterprise/year": "price_e_y"}
	if !b.Configured() || b.WebhookConfigured() || b.APIBase != "http://127.0.0.1:12111" || fmt.Sprint(b.Prices) != fmt.Sprint(want) {
		t.Fatalf("billing config %+v", b)
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

// adminDB is a migrated scratch SQLite database under a fresh
// SUITE_DATA_DIR, the one the `suite admin` commands under test open.
func adminDB(t *testing.T) *gorm.DB {
	t.Helper()
	t.Setenv("SUITE_DATA_DIR", t.TempDir())
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := runMigrate(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(t.Context(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = database.Close(db) })
	return db
}

func TestAdminSetPlanAndCreateKey(t *testing.T) {
	var out bytes.Buffer
	stdout = &out
	ctx := context.Background()
	db := adminDB(t)
	org := models.Organization{ID: models.NewID(), Name: "Ops", Status: models.OrgActive, Plan: models.PlanFree, CreatedBy: models.NewID(),
		CreatedAt: models.Now(), UpdatedAt: models.Now()}
	if err := db.Create(&org).Error; err != nil {
		t.Fatal(err)
	}

	if err := run(ctx, []string{"admin", "set-plan", org.ID, "enterprise"}); err != nil {
		t.Fatal(err)
	}
	got, _ := models.FindOrg(ctx, db, org.ID)
	if got.Plan != models.PlanEnterprise {
		t.Fatalf("plan %s", got.Plan)
	}
	if err := run(ctx, []string{"admin", "set-plan", org.ID, "platinum"}); err == nil || !strings.Contains(err.Error(), "Unknown plan") {
		t.Fatalf("unknown plan: %v", err)
	}
	if err := run(ctx, []string{"admin", "set-plan", models.NewID(), "free"}); err == nil || !strings.Contains(err.Error(), "no organization") {
		t.Fatalf("unknown org: %v", err)
	}

	out.Reset()
	if err := run(ctx, []string{"admin", "create-key", org.ID, "helpdesk", "ops key"}); err != nil {
		t.Fatal(err)
	}
	secret := strings.SplitN(out.String(), "\n", 2)[0]
	var k models.APIKey
	if !strings.HasPrefix(secret, "hd_") || db.Take(&k, "hash = ?", models.HashKey(secret)).Error != nil || k.OrgID != org.ID || k.Name != "ops key" {
		t.Fatalf("created key %q: %+v", secret, k)
	}
	if err := run(ctx, []string{"admin", "create-key", org.ID, "payroll"}); err == nil {
		t.Fatal("unknown service accepted")
	}
	if err := run(ctx, []string{"admin"}); err == nil {
		t.Fatal("admin without a task accepted")
	}
}
