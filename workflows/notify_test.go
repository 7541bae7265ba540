package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
)

const notificationID = "01a1fec5-0000-7000-8000-00000000dddd"

func notifyEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Push{})
	return env
}

func TestNotificationDeliveryPushes(t *testing.T) {
	env := notifyEnv()
	var a *activities.Push
	want := activities.DeliveryResult{Subscriptions: 2, Sent: 1, Removed: 1}
	env.OnActivity(a.Deliver, mock.Anything, notificationID).Return(want, nil).Once()
	env.ExecuteWorkflow(workflows.NotificationDelivery, models.NotificationDeliveryInput{NotificationID: notificationID})
	var out activities.DeliveryResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Fatalf("result %+v, want %+v", out, want)
	}
	env.AssertExpectations(t)
}

// A push service that fails (5xx, unreachable) fails the attempt; Temporal
// retries it with backoff until it succeeds.
func TestNotificationDeliveryRetriesTransientFailures(t *testing.T) {
	env := notifyEnv()
	var a *activities.Push
	transient := temporal.NewApplicationError("1 of 1 push subscriptions could not be served", activities.ErrTypePushTransient)
	env.OnActivity(a.Deliver, mock.Anything, notificationID).Return(activities.DeliveryResult{}, transient).Twice()
	env.OnActivity(a.Deliver, mock.Anything, notificationID).Return(activities.DeliveryResult{Subscriptions: 1, Sent: 1}, nil).Once()
	env.ExecuteWorkflow(workflows.NotificationDelivery, models.NotificationDeliveryInput{NotificationID: notificationID})
	var out activities.DeliveryResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Sent != 1 {
		t.Fatalf("result %+v", out)
	}
	env.AssertExpectations(t)
}

// Retries stop after the policy's attempts: the workflow fails visibly.
func TestNotificationDeliveryGivesUp(t *testing.T) {
	env := notifyEnv()
	var a *activities.Push
	calls := 0
	env.OnActivity(a.Deliver, mock.Anything, notificationID).Return(func(context.Context, string) (activities.DeliveryResult, error) {
		calls++
		return activities.DeliveryResult{}, temporal.NewApplicationError("push service answered 503", activities.ErrTypePushTransient)
	})
	env.ExecuteWorkflow(workflows.NotificationDelivery, models.NotificationDeliveryInput{NotificationID: notificationID})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypePushTransient {
		t.Fatalf("workflow error %v, want the transient push failure", err)
	}
	if calls != 12 {
		t.Fatalf("%d attempts, want 12", calls)
	}
}

// A worker without a VAPID key fails at once: retrying cannot help.
func TestNotificationDeliveryNotConfiguredIsNotRetried(t *testing.T) {
	env := notifyEnv()
	var a *activities.Push
	env.OnActivity(a.Deliver, mock.Anything, notificationID).Return(activities.DeliveryResult{},
		temporal.NewNonRetryableApplicationError("no VAPID key", activities.ErrTypePushNotConfigured, nil)).Once()
	env.ExecuteWorkflow(workflows.NotificationDelivery, models.NotificationDeliveryInput{NotificationID: notificationID})
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("workflow succeeded, want the configuration error")
	}
	env.AssertExpectations(t)
}
