package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"
)

// stripeWebhookSecret signs the events the e2e posts in Stripe's place.
const stripeWebhookSecret = "whsec_e2e"

// billingAndAI: the Business plan is ordered through api1 (stripe-mock plays
// Stripe's API), Stripe's signed invoice.paid arrives at api2's webhook,
// and the plan applies (read back through api1 and api2). Then an ai_ key
// made through api2 runs an analysis job through api1 with the built-in
// provider, read back through api2.
func (t *e2e) billingAndAI(ctx context.Context) error {
	began := time.Now()
	pay := append(t.bearer(), "x-workspace-id", t.orgID)
	var order struct {
		ID, Status string
		Stripe     struct{ InvoiceID, SubscriptionID, CustomerID string }
	}
	if err := expect(ctx, t.http, http.StatusAccepted, &order, "POST", t.base(0)+"/helpdesk/payments/create-order",
		map[string]string{"plan": "business", "interval": "month"},
		append(pay, "Prefer", "wait=20", "Idempotency-Key", "e2e-order-"+t.orgID)...); err != nil {
		return err
	}
	if order.Stripe.InvoiceID == "" {
		return fmt.Errorf("the order %s is %q without a Stripe invoice after Prefer: wait=20", order.ID, order.Status)
	}
	t.step("Business plan ordered on api1: change %s %s (Stripe invoice %s)", order.ID, order.Status, order.Stripe.InvoiceID)

	event, err := json.Marshal(map[string]any{
		"id": fmt.Sprintf("evt_e2e_%d", time.Now().UnixNano()), "object": "event", "type": "invoice.paid",
		"created": time.Now().Unix(), "api_version": "2023-10-16",
		"data": map[string]any{"object": map[string]any{"id": order.Stripe.InvoiceID, "object": "invoice",
			"subscription": order.Stripe.SubscriptionID, "customer": order.Stripe.CustomerID}},
	})
	if err != nil {
		return err
	}
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: event, Secret: stripeWebhookSecret, Timestamp: time.Now()})
	if err := expect(ctx, t.http, http.StatusOK, nil, "POST", t.base(1)+"/helpdesk/payments/webhook", json.RawMessage(event),
		"Stripe-Signature", signed.Header); err != nil {
		return fmt.Errorf("the signed invoice.paid from Stripe on api2: %w", err)
	}
	for {
		var change struct{ Status, Step string }
		if err := expect(ctx, t.http, http.StatusOK, &change, "GET", t.base(0)+"/helpdesk/payments/changes/"+order.ID, nil, pay...); err != nil {
			return err
		}
		if change.Status == "applied" {
			break
		}
		if time.Since(began) > time.Minute {
			return fmt.Errorf("the change %s is still %s (step %s) a minute after the order", order.ID, change.Status, change.Step)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	var sub struct{ Plan string }
	if err := expect(ctx, t.http, http.StatusOK, &sub, "GET", t.base(1)+"/helpdesk/payments/subscription", nil, pay...); err != nil {
		return err
	}
	if sub.Plan != "business" {
		return fmt.Errorf("after the paid invoice api2 shows plan %q, want business", sub.Plan)
	}
	t.figure("billing: Business ordered on api1, Stripe's signed invoice.paid on api2, plan applied after %s", time.Since(began).Round(100*time.Millisecond))

	var key struct{ Key string }
	if err := expect(ctx, t.http, http.StatusCreated, &key, "POST", t.base(1)+"/crm/organization/"+t.orgID+"/apikeys",
		map[string]string{"name": "e2e ai", "service": "ai"}, t.bearer()...); err != nil {
		return err
	}
	ai := []string{"Authorization", "Bearer " + key.Key}
	began = time.Now()
	var job struct{ ID, Status string }
	if err := expect(ctx, t.http, http.StatusOK, &job, "POST", t.base(0)+"/v1/ai/analyze",
		map[string]string{"data": "month,revenue\n2026-01,100\n2026-02,150\n2026-03,210\n", "question": "Is revenue growing?"},
		append(ai, "Prefer", "wait=20")...); err != nil {
		return fmt.Errorf("an analysis on api1 with Prefer: wait=20: %w", err)
	}
	var again struct{ Status string }
	if err := expect(ctx, t.http, http.StatusOK, &again, "GET", t.base(1)+"/v1/ai/jobs/"+job.ID, nil, ai...); err != nil {
		return err
	}
	if job.Status != "succeeded" || again.Status != "succeeded" {
		return fmt.Errorf("AI job %s: %q on api1, %q on api2", job.ID, job.Status, again.Status)
	}
	t.figure("AI: an ai_ key made on api2 ran an analysis job on api1 (%s, read back on api2)", time.Since(began).Round(100*time.Millisecond))
	return nil
}
