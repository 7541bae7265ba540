package crm_test

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/internal/netguard/dnstest"
)

// DNS rebinding: a name that resolved to a public address when the
// endpoint was registered, and resolves to loopback when the worker
// connects, is refused at the connection. The receiver behind it — whose
// certificate, for example.com, the worker trusts, so nothing but the
// address check stands in the way — never sees a request, and the
// delivery log says why the attempt failed.
func TestWebhookDeliveryRefusesANameRepointedInside(t *testing.T) {
	var hits atomic.Int32
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	trusted := x509.NewCertPool()
	trusted.AddCert(receiver.Certificate())
	u, _ := url.Parse(receiver.URL)
	hook := "https://example.com:" + u.Port() + "/hooks"
	dns := dnstest.Start(t)

	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		base := "/crm/organization/" + o.id + "/webhooks"
		register := func() *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: base, Headers: o.owner.Auth(),
				Body: map[string]any{"url": hook, "events": []string{"deal.*"}}})
		}
		dns.Set("example.com", netip.MustParseAddr("127.0.0.1"))
		if m := register().ExpectProblem(422, "validation_failed"); !strings.Contains(fmt.Sprint(m["errors"]), "not_public") {
			t.Fatalf("loopback by name at registration: %v", m["errors"])
		}

		dns.Set("example.com", netip.MustParseAddr("93.184.215.14"))
		var ep webhook
		register().Expect(201).JSON(&ep)
		dns.Set("example.com", netip.MustParseAddr("127.0.0.1"))
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: o.owner.Auth(),
			Body: map[string]any{"orgId": o.id, "title": "Rebound"}}).Expect(201)

		var failed delivery
		e.Eventually(func() bool {
			var log struct{ Data []delivery }
			e.Do(apitest.Request{Method: "GET", Path: base + "/" + ep.ID + "/deliveries", Headers: o.owner.Auth()}).Expect(200).JSON(&log)
			if len(log.Data) == 1 && log.Data[0].Attempts > 0 {
				failed = log.Data[0]
				return true
			}
			return false
		}, "the delivery's first attempt")
		if failed.Status != "pending" || failed.LastStatusCode == nil || *failed.LastStatusCode != 0 || !strings.Contains(failed.LastError, netguard.ErrForbiddenAddress.Error()) {
			t.Errorf("the attempt to loopback: %+v", failed)
		}
		if n := hits.Load(); n != 0 {
			t.Fatalf("the receiver on loopback got %d requests", n)
		}
	}, apitest.WithWebhookEgress(netguard.Policy{Resolver: dns.Resolver(), RootCAs: trusted}))
}
