package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// pushOptions: one attempt serves every subscription of the member, each
// request bounded by the activity's HTTP timeout. A push service that is
// down is retried with backoff for about an hour and a half; after that a
// notification is stale as a push (it stays listed in the API), so the
// workflow gives up and fails visibly.
var pushOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        5 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        10 * time.Minute,
		MaximumAttempts:        12,
		NonRetryableErrorTypes: []string{activities.ErrTypePushNotConfigured},
	},
}

// NotificationDelivery pushes one notification to its member's browsers.
// It is started, in the transaction that stores the notification, by
// record.Tx.Notify.
func NotificationDelivery(ctx workflow.Context, in models.NotificationDeliveryInput) (activities.DeliveryResult, error) {
	var a *activities.Push
	ctx = workflow.WithActivityOptions(ctx, pushOptions)
	var out activities.DeliveryResult
	err := workflow.ExecuteActivity(ctx, a.Deliver, in.NotificationID).Get(ctx, &out)
	return out, err
}
