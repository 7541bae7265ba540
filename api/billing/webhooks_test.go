package billing_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// subscriptionEvent is a subscription.changed delivery as a receiver
// reads it.
type subscriptionEvent struct {
	Type string
	Data struct {
		Object   map[string]any
		Previous map[string]any
	}
}

// A workspace's endpoints hear of its subscription: subscription.changed
// when a change of plan applies (the plan, and the Stripe subscription it
// took) and when Stripe says the subscription moved — here, deleted,
// which returns the workspace to free. A failed payment changes neither
// and tells nothing. The object is GET /helpdesk/payments/subscription.
func TestWebhooksTellSubscriptionChanges(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st)
		rc := apitest.Subscribe(t, e, b.owner, b.org, models.EventSubscriptionChanged)

		declined := b.order(models.PlanStarter)
		b.deliver("invoice.payment_failed", map[string]any{"id": declined.StripeInvoiceID, "object": "invoice", "customer": declined.StripeCustomerID,
			"subscription": declined.StripeSubscriptionID, "status": "open"})
		b.waitStatus(declined.ID, models.ChangeFailed)
		c := b.order(models.PlanBusiness)
		b.deliver("invoice.paid", map[string]any{"id": c.StripeInvoiceID, "object": "invoice", "customer": c.StripeCustomerID,
			"subscription": c.StripeSubscriptionID, "status": "paid"})
		// The run ends by reading the subscription back from Stripe
		// (SyncSubscription); stripe-mock, which keeps no state, would
		// still call it active after the deletion below.
		if err := e.Temporal.GetWorkflow(t.Context(), names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()), "").Get(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		b.deliver("customer.subscription.deleted", map[string]any{"id": c.StripeSubscriptionID, "object": "subscription",
			"customer": c.StripeCustomerID, "status": "canceled"})

		var events []subscriptionEvent
		e.Eventually(func() bool {
			events = events[:0]
			for _, r := range rc.Received() {
				var ev subscriptionEvent
				if err := json.Unmarshal(r.Body, &ev); err != nil {
					t.Fatal(err)
				}
				events = append(events, ev)
			}
			return len(events) > 0 && events[len(events)-1].Data.Object["plan"] == models.PlanFree
		}, "the deleted subscription told")

		subscription := func(ev subscriptionEvent) map[string]any {
			s, _ := ev.Data.Object["subscription"].(map[string]any)
			return s
		}
		first, last := events[0], events[len(events)-1]
		if first.Data.Previous["plan"] != models.PlanFree || first.Data.Object["plan"] != models.PlanBusiness ||
			subscription(first)["subscriptionId"] != c.StripeSubscriptionID || subscription(first)["status"] != "active" {
			t.Errorf("the first event is not the plan applied: %+v", first.Data)
		}
		if last.Data.Previous["plan"] != models.PlanBusiness || subscription(last)["status"] != "canceled" {
			t.Errorf("the last event is not the deletion: %+v", last.Data)
		}
		for _, ev := range events {
			if ev.Type != models.EventSubscriptionChanged || ev.Data.Object["workspaceId"] != b.org || ev.Data.Object["plan"] == models.PlanStarter ||
				len(ev.Data.Previous) == 0 {
				t.Errorf("event %+v", ev)
			}
		}
		var now map[string]any
		b.Do(apitest.Request{Method: "GET", Path: "/helpdesk/payments/subscription",
			Headers: map[string]string{"Authorization": "Bearer " + b.owner.Token, "X-Workspace-Id": b.org}}).Expect(200).JSON(&now)
		if !reflect.DeepEqual(now, last.Data.Object) {
			t.Errorf("the event's object %v is not what the API shows: %v", last.Data.Object, now)
		}
	}, apitest.WithBilling(st.Config()), apitest.WithWebhookReceivers())
}
