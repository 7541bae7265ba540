package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows/names"
)

// WebhookEndpointInput names the endpoint a WebhookEndpoint workflow
// delivers to.
type WebhookEndpointInput struct {
	OrgID      string `json:"orgId"`
	EndpointID string `json:"endpointId"`
}

// webhookDeliverOptions: a batch (DeliverWebhooks) is bounded by the
// HTTP timeout of each of its deliveries, with a heartbeat after each, so a
// worker that dies mid-batch is noticed in seconds; failed attempts are
// retried with exponential backoff (activities.WebhookRetry) for
// activities.WebhookGiveUpAfter, each retry resuming at the delivery that
// failed.
var webhookDeliverOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    activities.WebhookBatchSize * (activities.WebhookTimeout + 5*time.Second),
	HeartbeatTimeout:       activities.WebhookTimeout + 20*time.Second,
	ScheduleToCloseTimeout: activities.WebhookGiveUpAfter,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    activities.WebhookRetry.Initial,
		BackoffCoefficient: 2,
		MaximumInterval:    activities.WebhookRetry.Max,
		// The schedule-to-close timeout ends the retries (about 80 attempts
		// in 3 days); this bound is above it, and stated because the SDK's
		// test environment caps an unlimited policy at 10.
		MaximumAttempts:        200,
		NonRetryableErrorTypes: []string{activities.ErrTypeWebhookSecret},
	},
}

// webhookRunDeliveries is how many deliveries one run of WebhookEndpoint
// makes before it continues as new, keeping its history short (about ten
// events per batch of activities.WebhookBatchSize).
const webhookRunDeliveries = 5000

// WebhookEndpoint delivers an endpoint's events, one at a time and in the
// order they were recorded, for as long as the endpoint exists: so a
// receiver gets each object's events in the order they happened, and one
// slow or dead endpoint delays only itself. It is started with the
// endpoint and woken (SignalWebhookWake, through the outbox) by every
// request that records deliveries for it; it reads the pending deliveries
// itself, so a wake-up lost or early loses nothing. A delivery that fails
// is retried for activities.WebhookGiveUpAfter, then the endpoint is
// disabled and its organization's admins notified; a disabled endpoint
// keeps its pending deliveries until it is enabled again. It continues as
// new every 5,000 deliveries.
func WebhookEndpoint(ctx workflow.Context, in WebhookEndpointInput) error {
	var a *activities.Webhooks
	wake := workflow.GetSignalChannel(ctx, names.SignalWebhookWake)
	lctx := workflow.WithLocalActivityOptions(ctx, localDBOptions)
	dctx := workflow.WithActivityOptions(ctx, webhookDeliverOptions)
	delivered := 0
	for {
		var batch activities.WebhookBatch
		if err := workflow.ExecuteLocalActivity(lctx, a.NextWebhookDeliveries, in.EndpointID).Get(ctx, &batch); err != nil {
			return err
		}
		if batch.Status == "" {
			return nil // the endpoint was deleted, with its deliveries
		}
		if len(batch.DeliveryIDs) == 0 {
			if delivered > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				return workflow.NewContinueAsNewError(ctx, names.WebhookEndpointWorkflow, in)
			}
			wake.Receive(ctx, nil)
			for wake.ReceiveAsync(nil) {
				// one look at the queue answers every wake-up so far
			}
			continue
		}
		var out activities.DeliveryOutcome
		if err := workflow.ExecuteActivity(dctx, a.DeliverWebhooks, batch.DeliveryIDs).Get(ctx, &out); err != nil {
			workflow.GetLogger(ctx).Warn("webhook delivery given up; disabling the endpoint", "endpointId", in.EndpointID, "error", err)
			if err := workflow.ExecuteLocalActivity(lctx, a.GiveUpWebhook, in.EndpointID).Get(ctx, nil); err != nil {
				return err
			}
			continue // the endpoint is disabled: read its status again
		}
		if out == activities.DeliveryDone || out == activities.DeliveryProgress && countsProgress(ctx) {
			delivered += len(batch.DeliveryIDs) // a batch cut short counts whole: it continues as new a little early
		}
		if delivered >= webhookRunDeliveries {
			return workflow.NewContinueAsNewError(ctx, names.WebhookEndpointWorkflow, in)
		}
	}
}

// countsProgress is the version change that counts a batch ended by
// DeliveryProgress toward continuing as new, so that a stream of them
// keeps the history short too. Executions that got one before it replay
// as DefaultVersion, without counting.
func countsProgress(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "webhook-progress-counts", workflow.DefaultVersion, 1) == 1
}
