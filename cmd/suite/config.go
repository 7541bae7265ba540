package main

import (
	"context"
	"fmt"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/activities/ai/openaicompat"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// Config is every setting of every subcommand, read once from the
// environment in main. Fields tagged secret are masked when logged.
type Config struct {
	HTTPAddr       string `env:"SUITE_HTTP_ADDR" envDefault:":8080"`
	DataDir        string `env:"SUITE_DATA_DIR" envDefault:"./.data"`
	DatabaseURL    string `env:"DATABASE_URL" secret:"url"`
	DBMaxOpenConns int    `env:"SUITE_DB_MAX_OPEN_CONNS" envDefault:"20"`
	// DBMaxActive bounds the reads run at once outside transactions (the
	// rest wait their turn in arrival order); 0 lets the mode choose
	// (DBMaxActiveFor).
	DBMaxActive    int      `env:"SUITE_DB_MAX_ACTIVE"`
	LogLevel       string   `env:"SUITE_LOG_LEVEL" envDefault:"info"`
	TrustedProxies []string `env:"SUITE_TRUSTED_PROXIES" envSeparator:","`

	// TemporalAddress is the Temporal frontend clients dial; a list
	// separated by commas names the frontends of a cluster's nodes, dialled
	// in turn (a node that stops answering is left out until it answers).
	// `suite temporal` listens on it (one address).
	TemporalAddress string `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	// TemporalDBURL, for `suite temporal`, keeps its state in PostgreSQL:
	// the process is then a node of a cluster on that database.
	TemporalDBURL string `env:"TEMPORAL_DB_URL" secret:"url"`
	// TemporalHistoryShards is the cluster's number of history shards,
	// fixed when it is first created (TEMPORAL_DB_URL only; a node given
	// another number keeps the stored one).
	TemporalHistoryShards int32 `env:"TEMPORAL_HISTORY_SHARDS" envDefault:"4"`
	// TemporalDBMaxConns bounds each of a cluster node's connection pools
	// to its database (TEMPORAL_DB_URL only; devserver.PostgresStore).
	TemporalDBMaxConns int `env:"TEMPORAL_DB_MAX_CONNS" envDefault:"10"`

	TemporalNamespace     string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	TemporalAPIKey        string `env:"TEMPORAL_API_KEY" secret:"true"`
	TemporalTLSCert       string `env:"TEMPORAL_TLS_CERT"`
	TemporalTLSKey        string `env:"TEMPORAL_TLS_KEY"`
	TemporalTLSCA         string `env:"TEMPORAL_TLS_CA"`
	TemporalTLSServerName string `env:"TEMPORAL_TLS_SERVER_NAME"`
	// TemporalUIAddr serves the embedded Temporal UI in dev mode; empty disables it.
	TemporalUIAddr string `env:"SUITE_TEMPORAL_UI_ADDR" envDefault:"127.0.0.1:8233"`
	// TemporalUIURL is where operators open the Temporal Web UI; AI jobs
	// link to their workflow there (dev mode: the embedded UI).
	TemporalUIURL string `env:"SUITE_TEMPORAL_UI_URL"`

	// WorkerHealthAddr is where `suite worker` serves /healthz, /readyz, /metrics.
	WorkerHealthAddr string `env:"SUITE_WORKER_HEALTH_ADDR" envDefault:":8081"`
	// PprofAddr serves Go's runtime profiles (net/http/pprof) on a listener
	// of its own; empty (the default) serves none. Bind it to a private
	// address: profiles show the program's internals.
	PprofAddr       string        `env:"SUITE_PPROF_ADDR"`
	ShutdownTimeout time.Duration `env:"SUITE_SHUTDOWN_TIMEOUT" envDefault:"25s"`

	// ConsoleIdleTimeout signs a staff console session (/ops/) out after
	// this long without a request; ConsoleSessionLifetime ends it however
	// busy.
	ConsoleIdleTimeout     time.Duration `env:"SUITE_CONSOLE_IDLE_TIMEOUT" envDefault:"15m"`
	ConsoleSessionLifetime time.Duration `env:"SUITE_CONSOLE_SESSION_LIFETIME" envDefault:"8h"`

	// TicketAutoCloseAfter closes a solved ticket after this long.
	TicketAutoCloseAfter time.Duration `env:"SUITE_TICKET_AUTOCLOSE_AFTER" envDefault:"96h"`
	// Traces are exported over OTLP/gRPC when either endpoint is set (the
	// other OTEL_EXPORTER_OTLP_* variables configure the exporter).
	OTLPEndpoint       string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	OTLPTracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`

	// WebhookKeyRate is how many lead intakes a minute one crm_ key may send,
	// counted across every API process (anonymous forms have fixed per-IP
	// limits).
	WebhookKeyRate int `env:"SUITE_WEBHOOK_KEY_RATE" envDefault:"6000"`
	// OutboxConcurrency is how many workflow starts the outbox relay has in
	// flight at once; 0 lets the mode choose (OutboxConcurrencyFor).
	OutboxConcurrency int `env:"SUITE_OUTBOX_CONCURRENCY"`
	// OutboxYieldRate is how many workflow starts a second the relay keeps
	// to while the API has more requests in flight than the process has
	// cores; 0 never holds the relay back, unset lets the mode choose
	// (OutboxYieldRateFor).
	OutboxYieldRate *int `env:"SUITE_OUTBOX_YIELD_RATE"`
	// MaxInFlight is how many requests the API serves at once; the rest
	// wait their turn (web.NewInFlight). 0 lets the mode choose
	// (MaxInFlightFor); -1 admits every request at once.
	MaxInFlight int `env:"SUITE_MAX_IN_FLIGHT"`

	// AccessLog picks the requests the access log writes: all, errors
	// (400 and up, and slow requests) or sample:N (one in N besides
	// those); unset lets the mode choose (AccessLogFor).
	AccessLog string `env:"SUITE_ACCESS_LOG"`

	// Demo seeds the demo organization; defaults to true under `suite dev`.
	Demo *bool `env:"SUITE_DEMO"`

	// IdentityURL is the identity service's base URL; empty means the
	// service this API process serves itself at /identity.
	IdentityURL          string `env:"IDENTITY_URL"`
	IdentityServiceToken string `env:"IDENTITY_SERVICE_TOKEN" secret:"true"`
	// IdentityIssuer and IdentityJWKSURL let an external OIDC provider issue
	// user tokens (defaults: IDENTITY_URL and its /.well-known/jwks.json).
	IdentityIssuer   string `env:"IDENTITY_ISSUER"`
	IdentityJWKSURL  string `env:"IDENTITY_JWKS_URL"`
	IdentityAudience string `env:"IDENTITY_AUDIENCE" envDefault:"business-suite"`
	// IdentitySigningKey is a base64 Ed25519 seed; empty: generated once
	// and kept in the database.
	IdentitySigningKey string `env:"IDENTITY_SIGNING_KEY" secret:"true"`

	// Billing (Stripe). Without STRIPE_SECRET_KEY billing is off: the
	// payments routes answer 503 and operators use `suite admin set-plan`.
	StripeSecretKey     string `env:"STRIPE_SECRET_KEY" secret:"true"`
	StripeWebhookSecret string `env:"STRIPE_WEBHOOK_SECRET" secret:"true"`
	// StripeAPIBase replaces https://api.stripe.com (stripe-mock in tests).
	StripeAPIBase string `env:"STRIPE_API_BASE"`
	// The Stripe price id of each paid plan, billed monthly and yearly. An
	// empty one is looked up in Stripe by the lookup key <plan>_monthly or
	// <plan>_yearly (e.g. business_yearly).
	StripePriceStarter          string `env:"STRIPE_PRICE_STARTER"`
	StripePriceBusiness         string `env:"STRIPE_PRICE_BUSINESS"`
	StripePriceEnterprise       string `env:"STRIPE_PRICE_ENTERPRISE"`
	StripePriceStarterYearly    string `env:"STRIPE_PRICE_STARTER_YEARLY"`
	StripePriceBusinessYearly   string `env:"STRIPE_PRICE_BUSINESS_YEARLY"`
	StripePriceEnterpriseYearly string `env:"STRIPE_PRICE_ENTERPRISE_YEARLY"`

	OpenAIAPIKey  string `env:"OPENAI_API_KEY" secret:"true"`
	OpenAIBaseURL string `env:"OPENAI_BASE_URL"`
	OpenAIModel   string `env:"OPENAI_MODEL" envDefault:"gpt-4o-mini"`
	// OpenAITimeout bounds one model call; OpenAIChunkTokens is the most
	// document tokens sent in one call (longer documents are split).
	OpenAITimeout     time.Duration `env:"OPENAI_TIMEOUT" envDefault:"60s"`
	OpenAIChunkTokens int           `env:"OPENAI_CHUNK_TOKENS" envDefault:"3000"`

	// VAPIDPublicKey and VAPIDPrivateKey are the web-push key pair (P-256,
	// base64url); both empty: generated once and kept in the database.
	VAPIDPublicKey  string `env:"VAPID_PUBLIC_KEY"`
	VAPIDPrivateKey string `env:"VAPID_PRIVATE_KEY" secret:"true"`
	// VAPIDSubject is the contact push services may reach the operator at.
	VAPIDSubject string `env:"VAPID_SUBJECT" envDefault:"mailto:admin@business-suite.local"`

	// SMTPURL is the mail server invitations are sent through
	// (smtp://user:pass@host:587 with STARTTLS, smtps://… for implicit
	// TLS, smtp://host:25?tls=none for a plain local relay). Empty: no
	// e-mail (the inviter still sees the token once); `suite dev` then runs
	// its own mail sink.
	SMTPURL  string `env:"SMTP_URL" secret:"url"`
	SMTPFrom string `env:"SMTP_FROM" envDefault:"Business Suite <no-reply@business-suite.local>"`
	// DevSMTPAddr is where `suite dev`'s mail sink listens when SMTP_URL is
	// empty; messages are kept in SUITE_DATA_DIR/mail.
	DevSMTPAddr string `env:"SUITE_DEV_SMTP_ADDR" envDefault:"127.0.0.1:1025"`
	// PublicURL is the API's public base URL, used in e-mails (the accept
	// call of an invitation); `suite dev` defaults it to its own address.
	PublicURL string `env:"SUITE_PUBLIC_URL"`
	// InviteURL is a front-end link template for invitations, with {token}
	// where the token goes (e.g. https://app.example.com/join?token={token}).
	InviteURL string `env:"SUITE_INVITE_URL"`

	// The Helpdesk's e-mail channel. MailDomain is the domain of the
	// workspaces' addresses (ws-<workspace>@<domain>); empty turns the
	// channel off (`suite dev`: suite.localhost). SMTPAddr is where the SMTP
	// listener takes inbound mail; empty: no listener (`suite dev`:
	// 127.0.0.1:2525). It offers STARTTLS with the certificate and key
	// files SMTPTLSCert and SMTPTLSKey, when set.
	MailDomain   string `env:"SUITE_MAIL_DOMAIN"`
	SMTPAddr     string `env:"SUITE_SMTP_ADDR"`
	MailMaxBytes int64  `env:"SUITE_MAIL_MAX_BYTES" envDefault:"26214400"`
	// SMTPClientRate is how many messages one client address may hand the
	// listener in a minute (451 beyond).
	SMTPClientRate int    `env:"SUITE_SMTP_CLIENT_RATE" envDefault:"600"`
	SMTPTLSCert    string `env:"SUITE_SMTP_TLS_CERT"`
	SMTPTLSKey     string `env:"SUITE_SMTP_TLS_KEY"`

	// WebhookAllowHosts lists the hosts (addresses, CIDR prefixes or
	// names, comma-separated) that outbound webhook endpoints may use
	// although they are not on the public internet, over plain http too:
	// local receivers in development and tests. Empty in production.
	WebhookAllowHosts string `env:"SUITE_WEBHOOK_ALLOW_HOSTS"`
}

// WebhookEgress is the policy of outbound webhook URLs: public https
// URLs, and the hosts of SUITE_WEBHOOK_ALLOW_HOSTS (which LoadConfig has
// checked) over http or https.
func (c Config) WebhookEgress() netguard.Policy {
	allow, _ := netguard.ParseHosts(context.Background(), c.WebhookAllowHosts)
	return netguard.Policy{Allow: allow, PlainHTTP: len(allow) > 0}
}

// LoadConfig reads the environment.
func LoadConfig() (Config, error) {
	var cfg Config
	if err := env.Parse(&cfg); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	// An explicitly empty SUITE_TEMPORAL_UI_ADDR disables the embedded UI
	// (the env library would otherwise apply the default to "").
	if v, ok := os.LookupEnv("SUITE_TEMPORAL_UI_ADDR"); ok && strings.TrimSpace(v) == "" {
		cfg.TemporalUIAddr = ""
	}
	if cfg.TemporalDBURL != "" && strings.Contains(cfg.TemporalAddress, ",") {
		return cfg, fmt.Errorf("configuration: a node of a Temporal cluster (TEMPORAL_DB_URL) listens on one TEMPORAL_ADDRESS, not a list")
	}
	if cfg.TemporalDBMaxConns < 1 {
		return cfg, fmt.Errorf("configuration: TEMPORAL_DB_MAX_CONNS must be at least 1")
	}
	if cfg.TemporalHistoryShards < 1 {
		return cfg, fmt.Errorf("configuration: TEMPORAL_HISTORY_SHARDS must be at least 1")
	}
	if cfg.OpenAIChunkTokens < 100 {
		return cfg, fmt.Errorf("configuration: OPENAI_CHUNK_TOKENS must be at least 100")
	}
	if cfg.OpenAITimeout <= 0 {
		return cfg, fmt.Errorf("configuration: OPENAI_TIMEOUT must be positive")
	}
	if cfg.OutboxConcurrency < 0 {
		return cfg, fmt.Errorf("configuration: SUITE_OUTBOX_CONCURRENCY must be at least 1 (or 0 for the mode's default)")
	}
	if cfg.OutboxYieldRate != nil && *cfg.OutboxYieldRate < 0 {
		return cfg, fmt.Errorf("configuration: SUITE_OUTBOX_YIELD_RATE must be at least 0 (0: the relay never yields)")
	}
	if cfg.MaxInFlight < -1 {
		return cfg, fmt.Errorf("configuration: SUITE_MAX_IN_FLIGHT must be at least 1 (0: the mode's default, -1: no limit)")
	}
	if cfg.AccessLog != "" {
		if _, err := web.ParseAccessLog(cfg.AccessLog); err != nil {
			return cfg, fmt.Errorf("configuration: SUITE_ACCESS_LOG: %w", err)
		}
	}
	if cfg.ConsoleIdleTimeout < time.Minute || cfg.ConsoleSessionLifetime < cfg.ConsoleIdleTimeout {
		return cfg, fmt.Errorf("configuration: SUITE_CONSOLE_IDLE_TIMEOUT must be at least 1m, and SUITE_CONSOLE_SESSION_LIFETIME at least as long")
	}
	if cfg.DBMaxOpenConns < 1 {
		return cfg, fmt.Errorf("configuration: SUITE_DB_MAX_OPEN_CONNS must be at least 1")
	}
	if cfg.DBMaxActive < 0 || cfg.DBMaxActive > cfg.DBMaxOpenConns {
		return cfg, fmt.Errorf("configuration: SUITE_DB_MAX_ACTIVE must be from 1 to SUITE_DB_MAX_OPEN_CONNS (%d), or 0 for the mode's default", cfg.DBMaxOpenConns)
	}
	if err := activities.CheckSMTP(cfg.smtp()); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	if cfg.InviteURL != "" && !strings.Contains(cfg.InviteURL, "{token}") {
		return cfg, fmt.Errorf("configuration: SUITE_INVITE_URL must contain {token}")
	}
	if _, err := web.ParseProxies(cfg.TrustedProxies); err != nil {
		return cfg, fmt.Errorf("configuration: SUITE_TRUSTED_PROXIES: %w", err)
	}
	if cfg.MailMaxBytes < 1024 {
		return cfg, fmt.Errorf("configuration: SUITE_MAIL_MAX_BYTES must be at least 1024")
	}
	if cfg.SMTPClientRate < 1 {
		return cfg, fmt.Errorf("configuration: SUITE_SMTP_CLIENT_RATE must be at least 1")
	}
	if (cfg.SMTPTLSCert == "") != (cfg.SMTPTLSKey == "") {
		return cfg, fmt.Errorf("configuration: set both SUITE_SMTP_TLS_CERT and SUITE_SMTP_TLS_KEY, or neither")
	}
	if _, err := netguard.ParseHosts(context.Background(), cfg.WebhookAllowHosts); err != nil {
		return cfg, fmt.Errorf("configuration: SUITE_WEBHOOK_ALLOW_HOSTS: %w", err)
	}
	if cfg.MailDomain != "" && !validDomain(cfg.MailDomain) {
		return cfg, fmt.Errorf("configuration: SUITE_MAIL_DOMAIN must be a domain name (e.g. mail.example.com)")
	}
	return cfg, nil
}

// validDomain tells whether d is a domain name an e-mail address can end in.
func validDomain(d string) bool {
	_, err := mail.ParseAddress("x@" + d)
	return err == nil && !strings.ContainsAny(d, " @<>")
}

// Proxies are the trusted proxies (SUITE_TRUSTED_PROXIES), which
// LoadConfig has checked.
func (c Config) Proxies() web.Proxies {
	p, _ := web.ParseProxies(c.TrustedProxies)
	return p
}

// AIProvider is the provider AI jobs use: the OpenAI-compatible one when
// OPENAI_API_KEY is set, else the built-in local one.
func (c Config) AIProvider() ai.Provider {
	if c.OpenAIAPIKey == "" {
		return ai.NewLocal()
	}
	return openaicompat.New(openaicompat.Config{APIKey: c.OpenAIAPIKey, BaseURL: c.OpenAIBaseURL, Model: c.OpenAIModel,
		Timeout: c.OpenAITimeout, ChunkTokens: c.OpenAIChunkTokens})
}

// smtp is the mail server configuration.
func (c Config) smtp() activities.SMTP { return activities.SMTP{URL: c.SMTPURL, From: c.SMTPFrom} }

// DatabaseDSN is DATABASE_URL, or the embedded SQLite file in the data dir.
func (c Config) DatabaseDSN() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return filepath.Join(c.DataDir, "suite.db")
}

// Billing is the Stripe configuration the billing core needs.
func (c Config) Billing() stripeconfig.Config {
	prices := map[string]string{}
	for key, id := range map[string]string{
		stripeconfig.PriceKey(models.PlanStarter, models.IntervalMonth):    c.StripePriceStarter,
		stripeconfig.PriceKey(models.PlanBusiness, models.IntervalMonth):   c.StripePriceBusiness,
		stripeconfig.PriceKey(models.PlanEnterprise, models.IntervalMonth): c.StripePriceEnterprise,
		stripeconfig.PriceKey(models.PlanStarter, models.IntervalYear):     c.StripePriceStarterYearly,
		stripeconfig.PriceKey(models.PlanBusiness, models.IntervalYear):    c.StripePriceBusinessYearly,
		stripeconfig.PriceKey(models.PlanEnterprise, models.IntervalYear):  c.StripePriceEnterpriseYearly,
	} {
		if id = strings.TrimSpace(id); id != "" {
			prices[key] = id
		}
	}
	return stripeconfig.Config{SecretKey: c.StripeSecretKey, WebhookSecret: c.StripeWebhookSecret, APIBase: c.StripeAPIBase, Prices: prices}
}
