package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// A run's database steps are local activities, as LeadIntake's are: they
// run inside the workflow task on the worker that holds the run, recorded
// as markers, instead of each going through the Temporal server's
// activity queue — a round trip and its persistence writes fewer per step,
// which is most of the time from a change to its rule's first step.

// stepOptions: a step retries like any database step, up to ten times
// (about twenty minutes); a step that still fails fails the run, which is
// recorded and emitted as automation.run.failed. A step whose object is
// gone, or that is refused, fails at once.
var stepOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    30 * time.Second,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute, MaximumAttempts: 10,
		NonRetryableErrorTypes: []string{activities.ErrTypeNotFound, activities.ErrTypeBadPayload, activities.ErrTypeStepRefused},
	},
}

// automationRun is one run's state while its workflow goes through the
// steps: the pass (a rule that runs on every match starts over when it
// matches again: each start is a pass) and whether it was cancelled.
type automationRun struct {
	in        models.AutomationRunInput
	pass      int
	restarted bool
	cancelled bool
	// finished: the last step's transaction recorded the run completed.
	finished bool
	restart  workflow.ReceiveChannel
	cancel   workflow.ReceiveChannel
	events   workflow.ReceiveChannel
	a        *activities.Automations
	actx     workflow.Context
}

// AutomationRun carries out one match of an automation rule: its steps in
// order, each action an activity in its own transaction (done once, its
// outcome recorded with it), each delay a durable timer, each wait_for a
// wait for a change of the object (signalled by the change's transaction)
// with a timeout. After every delay and wait it reads the object again
// and stops, recorded, when the rule's conditions no longer hold. An
// every_match rule that matches the object again while its run is going
// makes the run start over; an administrator's cancel (or the rule's
// disabling or deletion) ends it where it stands. It returns the run's
// final status, recorded with the last step when that is an action
// (FinishWithLastStep), else by one more local activity.
func AutomationRun(ctx workflow.Context, in models.AutomationRunInput) (string, error) {
	r := &automationRun{in: in,
		restart: workflow.GetSignalChannel(ctx, names.SignalAutomationRestart),
		cancel:  workflow.GetSignalChannel(ctx, names.SignalAutomationCancel),
		events:  workflow.GetSignalChannel(ctx, names.SignalAutomationEvent),
		actx:    workflow.WithLocalActivityOptions(ctx, localDBOptions),
	}
	status, reason, err := r.steps(ctx)
	if err != nil {
		if ferr := workflow.ExecuteLocalActivity(r.actx, r.a.FailRun, models.AutomationFailure{Run: in, Error: err.Error()}).Get(ctx, nil); ferr != nil {
			return "", ferr
		}
		return models.RunFailed, nil
	}
	if status == models.RunCancelled {
		return status, nil // recorded by whoever cancelled it
	}
	if r.finished {
		return status, nil // recorded with the last step
	}
	return status, r.setState(ctx, status, "", reason)
}

// steps goes through the rule's steps, from the first again whenever the
// rule matched again (restart); it returns the run's final status and why.
func (r *automationRun) steps(ctx workflow.Context) (status, reason string, err error) {
	for i := 0; i < len(r.in.Steps); i++ {
		r.drain(ctx)
		switch {
		case r.cancelled:
			return models.RunCancelled, "", nil
		case r.restarted:
			r.restarted, r.pass, i = false, r.pass+1, -1
			continue
		}
		step := r.in.Steps[i]
		var waited bool
		switch step.Action {
		case models.StepDelay:
			waited, err = r.delay(ctx, i, step)
		case models.StepWaitFor:
			var stop bool
			if waited, stop, err = r.waitFor(ctx, i, step); err == nil && stop {
				return models.RunStopped, "wait_for " + step.Event + " timed out after " + step.Timeout + " (onTimeout: stop).", nil
			}
		case models.StepSummarize:
			err = r.summarize(ctx, i)
		default:
			in := models.AutomationStepInput{Run: r.in, Index: i, Pass: r.pass, Finish: r.in.FinishWithLastStep && i == len(r.in.Steps)-1}
			sctx := workflow.WithLocalActivityOptions(ctx, stepOptions)
			if err = workflow.ExecuteLocalActivity(sctx, r.a.ApplyStep, in).Get(ctx, nil); err == nil {
				r.finished = in.Finish
			}
		}
		if err != nil {
			return "", "", err
		}
		if !waited {
			continue
		}
		if r.cancelled || r.restarted {
			i-- // handled at the top of the loop
			continue
		}
		var holds bool
		if err := workflow.ExecuteLocalActivity(r.actx, r.a.Recheck, r.in).Get(ctx, &holds); err != nil {
			return "", "", err
		}
		if !holds {
			return models.RunStopped, "The rule's conditions no longer held after step " + models.Itoa(i+1) + " (" + step.Action + ").", nil
		}
	}
	return models.RunCompleted, "", nil
}

// summarize carries out step i, ai_summarize: it stores the AI job
// (StartSummary), runs the job's AIJob workflow as its child — found in
// the Temporal UI under the run, cancelled with it — and records the
// summary (ApplyStep). A job that fails fails the run.
func (r *automationRun) summarize(ctx workflow.Context, i int) error {
	in := models.AutomationStepInput{Run: r.in, Index: i, Pass: r.pass}
	sctx := workflow.WithLocalActivityOptions(ctx, stepOptions)
	var job string
	if err := workflow.ExecuteLocalActivity(sctx, r.a.StartSummary, in).Get(ctx, &job); err != nil || job == "" {
		return err
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            names.AIJobID(job),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: names.SearchAttributes(r.in.OrgID, names.KindAIJob),
	})
	var res AIJobResult
	if err := workflow.ExecuteChildWorkflow(cctx, names.AIJobWorkflow, AIJobInput{JobID: job, OrgID: r.in.OrgID}).Get(ctx, &res); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(sctx, r.a.ApplyStep, in).Get(ctx, nil)
}

// drain takes the signals that came in meanwhile: a restart, a cancel.
func (r *automationRun) drain(ctx workflow.Context) {
	var ev models.AutomationEvent
	for r.restart.ReceiveAsync(&ev) {
		r.restarted = true
	}
	for r.cancel.ReceiveAsync(nil) {
		r.cancelled = true
	}
}

// delay waits out step i, a delay (in business hours when it says so),
// unless the run is cancelled or restarted meanwhile; waited is false only
// then.
func (r *automationRun) delay(ctx workflow.Context, i int, step models.AutomationStep) (waited bool, err error) {
	var wake time.Time
	err = workflow.ExecuteLocalActivity(r.actx, r.a.WakeAt, activities.WakeAtInput{OrgID: r.in.OrgID, Duration: step.Duration,
		BusinessHours: step.BusinessHours, From: workflow.Now(ctx)}).Get(ctx, &wake)
	if err != nil {
		return false, err
	}
	if err := r.setState(ctx, models.RunWaiting, "", ""); err != nil {
		return false, err
	}
	tctx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	timer := workflow.NewTimer(tctx, wake.Sub(workflow.Now(ctx)))
	fired := false
	for !fired && !r.cancelled && !r.restarted {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		r.listen(ctx, sel)
		sel.Select(ctx)
	}
	if !fired {
		return false, nil
	}
	if err := r.setState(ctx, models.RunRunning, "", ""); err != nil {
		return false, err
	}
	return true, r.stepDone(ctx, i, step, "waited", "until "+wake.UTC().Format(time.RFC3339))
}

// waitFor waits, for at most the step's timeout, for a change of the
// object of the step's trigger whose where-conditions hold. stop is true
// when it timed out and the step says to stop then.
func (r *automationRun) waitFor(ctx workflow.Context, i int, step models.AutomationStep) (waited, stop bool, err error) {
	timeout, err := models.ParseISODuration(step.Timeout)
	if err != nil {
		return false, false, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeBadPayload, err)
	}
	if err := r.setState(ctx, models.RunWaiting, step.Event, ""); err != nil {
		return false, false, err
	}
	tctx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	timer := workflow.NewTimer(tctx, timeout)
	matched, timedOut := false, false
	for !matched && !timedOut && !r.cancelled && !r.restarted {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.AddReceive(r.events, func(c workflow.ReceiveChannel, _ bool) {
			var ev models.AutomationEvent
			c.Receive(ctx, &ev)
			if ev.Trigger != step.Event {
				return
			}
			where := models.Conditions{}
			if step.Where != nil {
				where = *step.Where
			}
			matched, _ = where.Evaluate(ev.Subject, ev.Previous, workflow.Now(ctx))
		})
		r.listen(ctx, sel)
		sel.Select(ctx)
	}
	if !matched && !timedOut {
		return false, false, nil
	}
	if err := r.setState(ctx, models.RunRunning, "", ""); err != nil {
		return false, false, err
	}
	outcome := "waited"
	if timedOut {
		outcome = "timed_out"
	}
	if err := r.stepDone(ctx, i, step, outcome, step.Event); err != nil {
		return false, false, err
	}
	return true, timedOut && step.OnTimeout == "stop", nil
}

// listen adds the restart and cancel signals to a wait's selector.
func (r *automationRun) listen(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(r.restart, func(c workflow.ReceiveChannel, _ bool) {
		var ev models.AutomationEvent
		c.Receive(ctx, &ev)
		r.restarted = true
	})
	sel.AddReceive(r.cancel, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		r.cancelled = true
	})
}

// stepDone records a delay's or a wait's outcome on the run.
func (r *automationRun) stepDone(ctx workflow.Context, i int, step models.AutomationStep, outcome, detail string) error {
	return workflow.ExecuteLocalActivity(r.actx, r.a.RecordOutcome, models.AutomationOutcomeInput{Run: r.in, Outcome: models.AutomationStepOutcome{
		Index: i, Pass: r.pass, Action: step.Action, At: workflow.Now(ctx), Outcome: outcome, Detail: detail}}).Get(ctx, nil)
}

// setState records where the run stands (running, waiting for an event,
// or finished with reason).
func (r *automationRun) setState(ctx workflow.Context, status, waitingFor, reason string) error {
	return workflow.ExecuteLocalActivity(r.actx, r.a.SetRunState, activities.RunStateInput{OrgID: r.in.OrgID, RunID: r.in.RunID,
		Status: status, WaitingFor: waitingFor, Reason: reason}).Get(ctx, nil)
}
