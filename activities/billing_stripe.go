package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/models"
)

// How the billing activities talk to Stripe: the client (nil when billing
// is not configured), the common request parameters, and how a Stripe
// failure becomes an activity error (StripeFailure).

// StripeFailure is why Stripe refused a request or a payment failed, as
// recorded on the change (last error code and message).
type StripeFailure struct {
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (a *Billing) stripe() (*client.API, error) {
	if a.Stripe == nil {
		return nil, temporal.NewNonRetryableApplicationError("Billing is not configured (STRIPE_SECRET_KEY is empty).", ErrTypeBillingNotConfigured, nil)
	}
	return a.Stripe, nil
}

// params prepares the common request parameters: the activity's context
// (its deadline bounds the request) and, for writes, the idempotency key.
func params(ctx context.Context, p *stripe.Params, key string, meta map[string]string) {
	p.Context = ctx
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	for k, v := range meta {
		p.AddMetadata(k, v)
	}
}

func metadata(c *models.SubscriptionChange) map[string]string {
	return map[string]string{"orgId": c.OrgID, "changeId": c.ID}
}

// stripeError turns a Stripe failure into an activity error: 4xx (other
// than 408, 409 and 429, which Stripe asks to retry) will not succeed by
// retrying, so it is non-retryable and carries Stripe's code and message;
// 5xx and network errors are retried by the activity's retry policy.
func stripeError(op string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		status := se.HTTPStatusCode
		if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusConflict && status != http.StatusTooManyRequests {
			f := StripeFailure{Status: status, Code: string(se.Code), Message: se.Msg}
			if se.DeclineCode != "" {
				f.Code = string(se.DeclineCode)
			}
			if f.Code == "" {
				f.Code = string(se.Type)
			}
			if f.Message == "" {
				f.Message = "Stripe answered " + strconv.Itoa(status) + "."
			}
			return temporal.NewNonRetryableApplicationError("Stripe refused to "+op+": "+f.Message, ErrTypeStripeRejected, err, f)
		}
		return fmt.Errorf("stripe: %s: %d %s: %w", op, status, se.Type, err)
	}
	return fmt.Errorf("stripe: %s: %w", op, err)
}
