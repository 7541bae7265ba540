// Package stripeconfig holds the suite's Stripe configuration (the STRIPE_*
// variables) and builds the Stripe client from it. The API reads it to
// verify webhook events and to tell whether billing is configured, the
// billing activities to call Stripe with the plans' prices; it lives here,
// apart from both, so that neither imports the other.
package stripeconfig

import (
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
)

// Config is the Stripe configuration (STRIPE_* variables).
type Config struct {
	SecretKey     string
	WebhookSecret string
	// APIBase replaces https://api.stripe.com (stripe-mock in tests).
	APIBase string
	// Prices maps PriceKey(plan, interval) to a Stripe price id; a missing
	// entry is looked up by the price's lookup key (PriceLookupKey).
	Prices map[string]string
	// HTTPTimeout bounds one Stripe request (default 20 s).
	HTTPTimeout time.Duration
}

// Configured tells whether billing can run: without a secret key every
// payments route answers 503 billing_not_configured.
func (c Config) Configured() bool { return c.SecretKey != "" }

// WebhookConfigured tells whether Stripe events can be verified.
func (c Config) WebhookConfigured() bool { return c.Configured() && c.WebhookSecret != "" }

// PriceKey is the key of Config.Prices for a plan and interval.
func PriceKey(plan, interval string) string { return plan + "/" + interval }

// PriceLookupKey is the Stripe lookup key searched when no price id is
// configured: starter_monthly, business_yearly, …
func PriceLookupKey(plan, interval string) string { return plan + "_" + interval + "ly" }

// NewClient builds the Stripe client: bounded requests, and no retries of
// its own — Temporal retries each step with backoff and the same
// idempotency key, visibly in the workflow history. Nil when billing is not
// configured.
func (c Config) NewClient() *client.API {
	if !c.Configured() {
		return nil
	}
	timeout := c.HTTPTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: timeout},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if c.APIBase != "" {
		cfg.URL = stripe.String(c.APIBase)
	}
	return client.New(c.SecretKey, &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, cfg),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, cfg),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, cfg),
	})
}
