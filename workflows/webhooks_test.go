package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

var endpointInput = workflows.WebhookEndpointInput{OrgID: "01a1fec5-0000-7000-8000-0000000000aa", EndpointID: "01a1fec5-0000-7000-8000-0000000000bb"}

func webhookEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Webhooks{})
	return env
}

// batches answers NextWebhookDeliveries with each of them in turn, then
// with the endpoint gone (the workflow ends).
func batches(env *testsuite.TestWorkflowEnvironment, list ...activities.WebhookBatch) {
	var a *activities.Webhooks
	n := 0
	env.OnActivity(a.NextWebhookDeliveries, mock.Anything, endpointInput.EndpointID).Return(func(context.Context, string) (activities.WebhookBatch, error) {
		if n < len(list) {
			n++
			return list[n-1], nil
		}
		return activities.WebhookBatch{}, nil
	})
}

// fullBatches is n batches of activities.WebhookBatchSize deliveries, d0
// onwards.
func fullBatches(n int) []activities.WebhookBatch {
	var list []activities.WebhookBatch
	for b := range n {
		ids := make([]string, activities.WebhookBatchSize)
		for i := range ids {
			ids[i] = fmt.Sprint("d", b*activities.WebhookBatchSize+i)
		}
		list = append(list, activities.WebhookBatch{Status: "enabled", DeliveryIDs: ids})
	}
	return list
}

// A delivery that keeps failing is retried with growing waits, at most an
// hour apart, for three days; then the endpoint is given up on — once —
// and the deliveries behind it wait for it to be enabled.
func TestWebhookEndpointGivesUpAfterThreeDays(t *testing.T) {
	env := webhookEnv()
	var a *activities.Webhooks
	batches(env,
		activities.WebhookBatch{Status: "enabled", DeliveryIDs: []string{"d1", "d2"}},
		activities.WebhookBatch{Status: "disabled"})
	var attempts []time.Time
	env.OnActivity(a.DeliverWebhooks, mock.Anything, []string{"d1", "d2"}).Return(func(context.Context, []string) (activities.DeliveryOutcome, error) {
		attempts = append(attempts, env.Now())
		return "", errors.New("d1: answered 503")
	})
	var gaveUp []time.Time
	env.OnActivity(a.GiveUpWebhook, mock.Anything, endpointInput.EndpointID).Return(func(context.Context, string) error {
		gaveUp = append(gaveUp, env.Now())
		return nil
	})
	// Disabled, the workflow waits; a wake-up (the endpoint deleted
	// meanwhile) ends it.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(names.SignalWebhookWake, nil) }, 100*time.Hour)
	env.ExecuteWorkflow(workflows.WebhookEndpoint, endpointInput)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(gaveUp) != 1 {
		t.Fatalf("gave up %d times", len(gaveUp))
	}
	if span := gaveUp[0].Sub(attempts[0]); span < activities.WebhookGiveUpAfter-time.Hour || span > activities.WebhookGiveUpAfter+time.Hour {
		t.Fatalf("gave up %s after the first attempt", span)
	}
	if len(attempts) < 3 || attempts[2].Sub(attempts[1]) != 2*attempts[1].Sub(attempts[0]) {
		t.Fatalf("attempts at %v: the waits do not double", attempts[:min(3, len(attempts))])
	}
	longest := time.Duration(0)
	for i := 1; i < len(attempts); i++ {
		longest = max(longest, attempts[i].Sub(attempts[i-1]))
	}
	if longest > activities.WebhookRetry.Max {
		t.Fatalf("%d attempts, %s apart at most", len(attempts), longest)
	}
}

// Batches go out in the queue's order, one after the other; after 5,000
// deliveries the workflow continues as new.
func TestWebhookEndpointDeliversInOrderAndContinuesAsNew(t *testing.T) {
	env := webhookEnv()
	var a *activities.Webhooks
	batches(env, fullBatches(60)...)
	var sent []string
	env.OnActivity(a.DeliverWebhooks, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) (activities.DeliveryOutcome, error) {
		sent = append(sent, ids...)
		return activities.DeliveryDone, nil
	})
	env.ExecuteWorkflow(workflows.WebhookEndpoint, endpointInput)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if len(sent) != 5000 {
		t.Fatalf("%d sent before continuing as new", len(sent))
	}
	for i, id := range sent {
		if id != fmt.Sprint("d", i) {
			t.Fatalf("delivery %d was %s", i, id)
		}
	}
}

// A batch cut short by a failure after some deliveries (DeliveryProgress)
// is followed by a batch read afresh, whose retries start again; it
// counts toward continuing as new.
func TestWebhookEndpointReadsAgainAfterProgress(t *testing.T) {
	env := webhookEnv()
	var a *activities.Webhooks
	batches(env, fullBatches(20)...)
	calls := 0
	env.OnActivity(a.DeliverWebhooks, mock.Anything, mock.Anything).Return(func(context.Context, []string) (activities.DeliveryOutcome, error) {
		calls++
		return activities.DeliveryProgress, nil
	})
	env.ExecuteWorkflow(workflows.WebhookEndpoint, endpointInput)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if want := 5000 / activities.WebhookBatchSize; calls != want {
		t.Fatalf("%d batches before continuing as new, want %d", calls, want)
	}
}
