package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// erasureOptions: a step is one transaction, seconds for most people,
// minutes for one with thousands of tickets; it is retried for as long as
// the database takes to come back.
var erasureOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeNotFound}},
}

// Erasure erases a person's data (GDPR article 17) once its OWNER has
// confirmed it: the steps of models.ErasureSteps in order, each one
// transaction (what points at the person, then the Helpdesk's, then the
// CRM's), then the erasure's end, which forgets the address. Every step
// is idempotent and retried for as long as the database takes to come
// back (erasureOptions): an erasure, once confirmed, always finishes.
func Erasure(ctx workflow.Context, in models.ErasureInput) error {
	var a *activities.Erasures
	actx := workflow.WithActivityOptions(ctx, erasureOptions)
	erased := map[string]int64{}
	for _, step := range models.ErasureSteps {
		var out map[string]int64
		if err := workflow.ExecuteActivity(actx, a.EraseStep, in, step).Get(ctx, &out); err != nil {
			return err
		}
		// A sum, the same in any order: the map's random iteration
		// order changes nothing a replay could see.
		//workflowcheck:ignore
		for kind, n := range out {
			erased[kind] += n
		}
	}
	return workflow.ExecuteActivity(actx, a.FinishErasure, in, erased).Get(ctx, nil)
}
