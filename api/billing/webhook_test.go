package billing_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/api/billing"
)

const secret = stripetest.WebhookSecret

func invoiceObject(id, sub string, meta map[string]string) map[string]any {
	return map[string]any{"id": id, "object": "invoice", "customer": "cus_1", "subscription": sub, "payment_intent": "pi_1",
		"status": "paid", "subscription_details": map[string]any{"metadata": meta}}
}

func TestParseEventVerifiesTheSignature(t *testing.T) {
	payload := stripetest.Event("invoice.paid", invoiceObject("in_1", "sub_1", map[string]string{"orgId": "org-1", "changeId": "chg-1"}))
	now := time.Now()
	tampered := strings.Replace(string(payload), `"in_1"`, `"in_2"`, 1)
	cases := []struct {
		name    string
		payload []byte
		header  string
		want    error
	}{
		{"valid", payload, stripetest.Sign(payload, secret, now), nil},
		{"missing header", payload, "", billing.ErrBadSignature},
		{"malformed header", payload, "t=abc,v1=", billing.ErrBadSignature},
		{"wrong secret", payload, stripetest.Sign(payload, "whsec_other", now), billing.ErrBadSignature},
		{"tampered body", []byte(tampered), stripetest.Sign(payload, secret, now), billing.ErrBadSignature},
		{"stale timestamp", payload, stripetest.Sign(payload, secret, now.Add(-billing.SignatureTolerance-time.Minute)), billing.ErrBadSignature},
		{"signed, but not an event", []byte(`[1,2]`), stripetest.Sign([]byte(`[1,2]`), secret, now), billing.ErrBadPayload},
		{"signed, no id", []byte(`{"type":"invoice.paid"}`), stripetest.Sign([]byte(`{"type":"invoice.paid"}`), secret, now), billing.ErrBadPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := billing.ParseEvent(tc.payload, tc.header, secret)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type != "invoice.paid" || ev.InvoiceID != "in_1" || ev.SubscriptionID != "sub_1" || ev.CustomerID != "cus_1" ||
					ev.PaymentIntentID != "pi_1" || ev.MetaOrgID != "org-1" || ev.MetaChangeID != "chg-1" || ev.Payload != string(payload) ||
					!strings.HasPrefix(ev.ID, "evt_") || time.Since(ev.Created) > time.Minute {
					t.Fatalf("parsed %+v", ev)
				}
				return
			}
			if !errors.Is(err, tc.want) || !billing.IsBadWebhook(err) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseSubscriptionEvent(t *testing.T) {
	end := time.Now().Add(30 * 24 * time.Hour).Unix()
	payload := stripetest.Event("customer.subscription.updated", map[string]any{"id": "sub_9", "object": "subscription", "customer": "cus_9",
		"status": "past_due", "current_period_end": end, "cancel_at_period_end": true, "metadata": map[string]string{"orgId": "org-9", "changeId": "chg-9"}})
	ev, err := billing.ParseEvent(payload, stripetest.Sign(payload, secret, time.Now()), secret)
	if err != nil {
		t.Fatal(err)
	}
	if ev.SubscriptionID != "sub_9" || ev.CustomerID != "cus_9" || ev.SubscriptionStatus != "past_due" || !ev.CancelAtPeriodEnd ||
		ev.CurrentPeriodEnd == nil || ev.CurrentPeriodEnd.Unix() != end || ev.MetaOrgID != "org-9" || ev.MetaChangeID != "chg-9" {
		t.Fatalf("parsed %+v", ev)
	}
	// Another API version than stripe-go's is read all the same.
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	m["api_version"] = "2020-08-27"
	other, _ := json.Marshal(m)
	if _, err := billing.ParseEvent(other, stripetest.Sign(other, secret, time.Now()), secret); err != nil {
		t.Fatalf("older API version: %v", err)
	}
}
