// Package billing is the billing core that the payments routes, the
// operator API and `suite admin billing` call, so that each of them only
// binds its input and shapes its output:
//
//   - Open and Retry record a subscription change (or its retry) and the
//     start of its SubscriptionChange workflow in one transaction, through
//     the outbox: the change is never recorded without its workflow, and the
//     workflow starts even if Temporal is down at that moment;
//   - ReceiveEvent verifies a Stripe webhook delivery (ParseEvent), stores
//     the event once, applies what it means for the organization and, in the
//     same transaction, records the signal to the change's workflow;
//   - Wait holds an answer until the workflow has created the Stripe objects.
//
// The rules live in models (OpenSubscriptionChange, RetrySubscriptionChange,
// RecordStripeEvent); the Stripe calls in activities.Billing.
package billing

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// ErrNotConfigured is the 503 billing_not_configured every payments route
// answers without STRIPE_SECRET_KEY (or, for the webhook, without
// STRIPE_WEBHOOK_SECRET).
var ErrNotConfigured = models.Err(models.ErrUnavailable, "billing_not_configured",
	"Billing is not configured on this server; operators change plans with `suite admin set-plan`.")

// Service is the billing core. Config decides whether billing is on.
type Service struct {
	DB      *gorm.DB
	Starter *outbox.Starter
	Config  stripeconfig.Config
}

// Configured tells whether billing is on (a Stripe secret key is set).
func (s *Service) Configured() bool { return s.Config.Configured() }

// start is the outbox start of the change's current run.
func start(c *models.SubscriptionChange) record.Start {
	return record.Start{
		WorkflowID: names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()),
		Workflow:   names.SubscriptionChangeWorkflow,
		Input:      workflows.SubscriptionChangeInput{ChangeID: c.ID, OrgID: c.OrgID, Retry: c.Retry()},
		OrgID:      c.OrgID,
		Kind:       names.KindSubscriptionChange,
	}
}

// Open records a change of plan (models.OpenSubscriptionChange: its rules
// and errors) and its workflow start in tx. It is a 503
// billing_not_configured when billing is off.
func (s *Service) Open(tx *record.Tx, req models.OpenChange) (*models.SubscriptionChange, error) {
	if !s.Configured() {
		return nil, ErrNotConfigured
	}
	change, err := models.OpenSubscriptionChange(tx.DB, req)
	if err != nil {
		return nil, err
	}
	return change, tx.Start(start(change))
}

// Retry re-runs a failed change from the step that failed
// (models.RetrySubscriptionChange: its rules, e.g. 409 change_applied),
// recording who asked, and starts the retry's workflow run
// (subscription/<org>/<change>/retry-<n>), in tx. by names the
// billing-staff user (or "suite-admin" from the shell).
func (s *Service) Retry(tx *record.Tx, changeID, by string) (*models.SubscriptionChange, *models.SubscriptionChangeRetry, error) {
	if !s.Configured() {
		return nil, nil, ErrNotConfigured
	}
	change, retry, err := models.RetrySubscriptionChange(tx.DB, changeID, by)
	if err != nil {
		return nil, nil, err
	}
	return change, retry, tx.Start(start(change))
}

// ReceiveEvent handles one webhook delivery: the Stripe-Signature header
// is verified (ErrBadSignature or ErrBadPayload: a 400, nothing recorded),
// the event is stored once (a replay returns Duplicate and does nothing),
// and what it means is done in tx: the organization's subscription state
// (a deleted subscription returns it to free) and the signal to the change
// it concerns, delivered by the outbox relay — also when Temporal is down
// right now. tx is begun only for a verified event.
func (s *Service) ReceiveEvent(tx func() *record.Tx, payload []byte, signature string) (*models.EventRoute, error) {
	if !s.Config.WebhookConfigured() {
		return nil, ErrNotConfigured
	}
	ev, err := ParseEvent(payload, signature, s.Config.WebhookSecret)
	if err != nil {
		return nil, err
	}
	otx := tx()
	route, err := models.RecordStripeEvent(otx.DB, ev)
	if err != nil {
		return nil, err
	}
	if route.BillingBefore != nil {
		events, err := views.SubscriptionChangedEvents(route.BillingBefore, route.BillingAfter)
		if err != nil {
			return nil, err
		}
		if err := otx.Emit(events...); err != nil {
			return nil, err
		}
	}
	if route.Change == nil {
		return route, nil
	}
	st := start(route.Change)
	return route, otx.Signal(record.Signal{
		WorkflowID: st.WorkflowID,
		Name:       names.SignalStripeEvent,
		Input: workflows.StripeEventSignal{EventID: ev.ID, Type: ev.Type, SubscriptionID: ev.SubscriptionID,
			InvoiceID: ev.InvoiceID, SubscriptionStatus: ev.SubscriptionStatus},
		// The change's own start may still wait in the outbox.
		Start: &st,
	})
}

// Wait returns the change once its workflow has moved past pending —
// created the Stripe objects (awaiting_payment with the client secret and
// hosted invoice URL, or scheduled with effectiveAt), or ended — or when d
// (at most 30 s) or ctx runs out, whichever comes first. It reads the
// database, so it also answers while Temporal is down. Another
// organization's change is not found.
func (s *Service) Wait(ctx context.Context, orgID, changeID string, d time.Duration) (*models.SubscriptionChange, error) {
	return web.Await(ctx, min(d, web.MaxPreferWait),
		func(ctx context.Context) (*models.SubscriptionChange, error) {
			return models.FindSubscriptionChange(ctx, s.DB, orgID, changeID)
		},
		func(c *models.SubscriptionChange) bool { return c.Status != models.ChangePending })
}

// IsBadWebhook tells whether ReceiveEvent's error is the sender's fault —
// a 400: a bad, missing or stale signature, or an unreadable event.
func IsBadWebhook(err error) bool {
	return errors.Is(err, ErrBadSignature) || errors.Is(err, ErrBadPayload)
}
