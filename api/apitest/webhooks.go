package apitest

import (
	"net/netip"

	"github.com/business-suite/suite/internal/netguard"
)

// WithWebhookReceivers lets the Env's webhook endpoints be plain-http
// receivers on loopback (httptest.NewServer), as SUITE_WEBHOOK_ALLOW_HOSTS
// does for local development. Without it the Env is as strict as
// production: endpoints must be public https URLs, and the worker refuses
// every other address when it connects.
func WithWebhookReceivers() Option {
	return func(o *options) { o.webhookReceivers = true }
}

// webhookEgress is the webhook egress policy of an Env.
func (o *options) webhookEgress() netguard.Policy {
	if !o.webhookReceivers {
		return netguard.Policy{}
	}
	return netguard.Policy{PlainHTTP: true,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
}
