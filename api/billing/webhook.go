package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/business-suite/suite/models"
)

// Webhook errors (both a 400 to Stripe, which then retries the delivery).
var (
	// ErrBadSignature: the Stripe-Signature header is missing, malformed,
	// signed with another secret, or older than the tolerance (5 minutes).
	ErrBadSignature = errors.New("invalid Stripe-Signature")
	// ErrBadPayload: correctly signed, but not a Stripe event.
	ErrBadPayload = errors.New("unreadable Stripe event")
)

// SignatureTolerance is how old a signed delivery may be (a replay of a
// captured request after that is refused).
const SignatureTolerance = webhook.DefaultTolerance

// ParseEvent verifies payload against its Stripe-Signature header with the
// webhook secret (stripe-go's webhook package: HMAC-SHA256 over timestamp
// and body, timestamp within SignatureTolerance) and reads what the suite
// needs from the event. It is pure: nothing is stored.
//
// The event's API version may differ from stripe-go's (it is the webhook
// endpoint's): only ids, statuses, the period end and metadata are read,
// which every recent version carries alike.
func ParseEvent(payload []byte, header, secret string) (models.StripeEventData, error) {
	if header == "" {
		return models.StripeEventData{}, fmt.Errorf("%w: the header is missing", ErrBadSignature)
	}
	ev, err := webhook.ConstructEventWithOptions(payload, header, secret, webhook.ConstructEventOptions{
		Tolerance: SignatureTolerance, IgnoreAPIVersionMismatch: true})
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader),
		errors.Is(err, webhook.ErrNoValidSignature), errors.Is(err, webhook.ErrTooOld):
		return models.StripeEventData{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	case err != nil:
		return models.StripeEventData{}, fmt.Errorf("%w: %v", ErrBadPayload, err)
	case ev.ID == "" || ev.Type == "" || ev.Data == nil:
		return models.StripeEventData{}, fmt.Errorf("%w: no id, type or data", ErrBadPayload)
	}
	out := models.StripeEventData{ID: ev.ID, Type: string(ev.Type), Created: time.Unix(ev.Created, 0).UTC(), Payload: string(payload)}
	switch ev.Data.Object["object"] {
	case "invoice":
		var inv stripe.Invoice
		if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
			return models.StripeEventData{}, fmt.Errorf("%w: invoice: %v", ErrBadPayload, err)
		}
		out.InvoiceID = inv.ID
		if inv.Customer != nil {
			out.CustomerID = inv.Customer.ID
		}
		if inv.Subscription != nil {
			out.SubscriptionID = inv.Subscription.ID
		}
		if inv.PaymentIntent != nil {
			out.PaymentIntentID = inv.PaymentIntent.ID
		}
		meta := inv.Metadata
		if inv.SubscriptionDetails != nil && len(inv.SubscriptionDetails.Metadata) > 0 {
			meta = inv.SubscriptionDetails.Metadata
		}
		out.MetaOrgID, out.MetaChangeID = meta["orgId"], meta["changeId"]
	case "subscription":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return models.StripeEventData{}, fmt.Errorf("%w: subscription: %v", ErrBadPayload, err)
		}
		out.SubscriptionID, out.SubscriptionStatus, out.CancelAtPeriodEnd = sub.ID, string(sub.Status), sub.CancelAtPeriodEnd
		if sub.Customer != nil {
			out.CustomerID = sub.Customer.ID
		}
		if sub.CurrentPeriodEnd > 0 {
			end := time.Unix(sub.CurrentPeriodEnd, 0).UTC()
			out.CurrentPeriodEnd = &end
		}
		out.MetaOrgID, out.MetaChangeID = sub.Metadata["orgId"], sub.Metadata["changeId"]
	}
	return out, nil
}
