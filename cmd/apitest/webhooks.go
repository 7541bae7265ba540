package apitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

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

// WithWebhookEgress makes p the Env's webhook egress policy, for the API's
// checks and the worker's connections alike.
func WithWebhookEgress(p netguard.Policy) Option {
	return func(o *options) { o.webhookEgressPolicy = &p }
}

// webhookEgress is the webhook egress policy of an Env.
func (o *options) webhookEgress() netguard.Policy {
	if o.webhookEgressPolicy != nil {
		return *o.webhookEgressPolicy
	}
	if !o.webhookReceivers {
		return netguard.Policy{}
	}
	return netguard.Policy{PlainHTTP: true,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
}

// WebhookDelivery is one delivery a WebhookReceiver took.
type WebhookDelivery struct {
	ID, Type  string
	Body      []byte
	Header    http.Header
	Signature string
	Object    struct{ ID, Stage, Title string }
	Previous  map[string]any
}

// WebhookReceiver is a webhook endpoint of a test: it verifies every
// delivery's signature with Standard Webhooks' own library and keeps the
// verified ones, in arrival order; Answer, when set, chooses the status
// code.
type WebhookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	secrets  []string
	got      []WebhookDelivery
	refused  []string // why deliveries failed verification
	Answer   func(r WebhookDelivery) int
	requests int
}

// StartWebhookReceiver starts a receiver for the test t.
func StartWebhookReceiver(t *testing.T) *WebhookReceiver {
	rc := &WebhookReceiver{}
	rc.Server = httptest.NewServer(rc.Handler(t))
	t.Cleanup(rc.Close)
	return rc
}

// Handler is the receiver's HTTP side, to serve on an address of the
// test's choosing.
func (rc *WebhookReceiver) Handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.requests++
		var verr error = errors.New("no secret yet")
		for _, s := range rc.secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Errorf("secret %q: %v", s, err)
				continue
			}
			if verr = wh.Verify(body, req.Header); verr == nil {
				break
			}
		}
		if verr != nil {
			rc.refused = append(rc.refused, verr.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r := WebhookDelivery{ID: req.Header.Get("webhook-id"), Body: body, Header: req.Header.Clone(), Signature: req.Header.Get("webhook-signature")}
		var ev struct {
			ID, Type string
			Data     struct {
				Object   json.RawMessage
				Previous map[string]any
			}
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID != r.ID {
			t.Errorf("delivery body %s (webhook-id %s): %v", body, r.ID, err)
		}
		r.Type, r.Previous = ev.Type, ev.Data.Previous
		_ = json.Unmarshal(ev.Data.Object, &r.Object)
		status := http.StatusNoContent
		if rc.Answer != nil {
			status = rc.Answer(r)
		}
		if status < 300 {
			rc.got = append(rc.got, r)
		}
		w.WriteHeader(status)
	})
}

// Trust makes the receiver accept deliveries signed with secret.
func (rc *WebhookReceiver) Trust(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = append(rc.secrets, secret)
}

// Received are the verified deliveries, in arrival order.
func (rc *WebhookReceiver) Received() []WebhookDelivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]WebhookDelivery(nil), rc.got...)
}

// Types are the event types received, in order, of the object id.
func (rc *WebhookReceiver) Types(id string) []string {
	var out []string
	for _, r := range rc.Received() {
		if r.Object.ID == id {
			out = append(out, r.Type)
		}
	}
	return out
}

// Refused are the reasons deliveries failed verification.
func (rc *WebhookReceiver) Refused() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.refused...)
}

// Subscribe adds an endpoint of the organization for events, delivering
// to a new receiver that trusts its secret.
func Subscribe(t *testing.T, e *Env, owner *User, orgID string, events ...string) *WebhookReceiver {
	t.Helper()
	rc := StartWebhookReceiver(t)
	var ep struct{ Secret string }
	e.Do(Request{Method: "POST", Path: "/crm/organization/" + orgID + "/webhooks", Headers: owner.Auth(),
		Body: map[string]any{"url": rc.URL, "events": events}}).Expect(201).JSON(&ep)
	rc.Trust(ep.Secret)
	return rc
}

// Receive waits for n events and returns their types, in order, with the
// object id of each ("contact.created/<id>").
func (rc *WebhookReceiver) Receive(e *Env, n int) []string {
	e.Eventually(func() bool { return len(rc.Received()) >= n }, fmt.Sprintf("%d events", n))
	var got []string
	for _, r := range rc.Received() {
		got = append(got, r.Type+"/"+r.Object.ID)
	}
	return got
}
