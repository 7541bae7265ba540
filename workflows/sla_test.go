package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// slaEnv is a test environment (its clock skips ahead) in which the SLA
// activities answer plans in turn (a firing answers the next one, as the
// ticket's timers after it) and record when timers fire; each
// notification's delivery is a child workflow that records its id.
type slaEnv struct {
	env    *testsuite.TestWorkflowEnvironment
	start  time.Time
	plans  []activities.SLAPlan // the timers SLATimers, and FireSLATimer after firing, answer, in turn
	fired  []models.SLATimer
	at     []time.Time
	pushed []string
	// local says how the run takes its steps (TicketSLAInput.LocalSteps);
	// steps counts them by kind: "local" and "activity".
	local bool
	steps map[string]int
}

func newSLAEnv(t *testing.T, local bool) *slaEnv {
	var s testsuite.WorkflowTestSuite
	e := &slaEnv{env: s.NewTestWorkflowEnvironment(), local: local, steps: map[string]int{}}
	e.start = e.env.Now()
	e.env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { e.steps["activity"]++ })
	e.env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { e.steps["local"]++ })
	e.env.RegisterActivity(&activities.SLA{})
	e.env.RegisterWorkflowWithOptions(func(_ workflow.Context, in models.NotificationDeliveryInput) (activities.DeliveryResult, error) {
		e.pushed = append(e.pushed, in.NotificationID)
		return activities.DeliveryResult{}, nil
	}, workflow.RegisterOptions{Name: names.NotificationDeliveryWorkflow})
	var a *activities.SLA
	reads := 0
	next := func() activities.SLAPlan {
		if reads >= len(e.plans) {
			t.Fatalf("read %d times, %d plans", reads+1, len(e.plans))
		}
		reads++
		return e.plans[reads-1]
	}
	e.env.OnActivity(a.SLATimers, mock.Anything, "t-1").Return(func(context.Context, string) (activities.SLAPlan, error) {
		return next(), nil
	})
	e.env.OnActivity(a.FireSLATimer, mock.Anything, "t-1", mock.Anything).Return(func(_ context.Context, _ string, timer models.SLATimer) (activities.SLAFired, error) {
		e.fired = append(e.fired, timer)
		e.at = append(e.at, e.env.Now())
		out := activities.SLAFired{Plan: next()}
		if timer.Fire == models.SLABreachTimer {
			out.Push = []string{"n-" + timer.Kind}
		}
		return out, nil
	})
	return e
}

func (e *slaEnv) run(t *testing.T) {
	t.Helper()
	e.env.ExecuteWorkflow(workflows.TicketSLA, models.TicketSLAInput{TicketID: "t-1", OrgID: "o-1", LocalSteps: e.local})
	if !e.env.IsWorkflowCompleted() || e.env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", e.env.IsWorkflowCompleted(), e.env.GetWorkflowError())
	}
	want, not := "local", "activity"
	if !e.local {
		want, not = not, want
	}
	if e.steps[want] == 0 || e.steps[not] != 0 {
		t.Fatalf("LocalSteps %v: steps taken %v", e.local, e.steps)
	}
}

// eachWay runs test with the steps as local activities, as every run
// since TicketSLAInput.LocalSteps takes them, and as activities, as the
// runs started before do.
func eachWay(t *testing.T, test func(t *testing.T, local bool)) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "local", false: "activities"}[local], func(t *testing.T) { test(t, local) })
	}
}

func timer(kind, fire string, at time.Time) models.SLATimer {
	return models.SLATimer{Kind: kind, Fire: fire, At: at}
}

// The timers fire at their times, in order — the warning, then the
// breach, whose notification is pushed by its own workflow — and the
// workflow ends when the ticket has no clock left.
func TestTicketSLAFiresItsTimersInOrder(t *testing.T) { eachWay(t, ticketSLAFiresItsTimersInOrder) }

func ticketSLAFiresItsTimersInOrder(t *testing.T, local bool) {
	e := newSLAEnv(t, local)
	warn, breach := e.start.Add(45*time.Minute), e.start.Add(time.Hour)
	e.plans = []activities.SLAPlan{
		{Live: true, Timers: []models.SLATimer{timer(models.SLAFirstResponse, models.SLAWarningTimer, warn),
			timer(models.SLAFirstResponse, models.SLABreachTimer, breach)}},
		{Live: true, Timers: []models.SLATimer{timer(models.SLAFirstResponse, models.SLABreachTimer, breach)}},
		{Live: true}, // breached, the resolution paused: it waits for a change
		{Live: false},
	}
	e.env.RegisterDelayedCallback(func() { e.env.SignalWorkflow(names.SignalTicketSLAWake, nil) }, 5*time.Hour)
	e.run(t)
	if len(e.fired) != 2 || e.fired[0].Fire != models.SLAWarningTimer || e.fired[1].Fire != models.SLABreachTimer {
		t.Fatalf("fired %+v", e.fired)
	}
	if e.at[0].Before(warn) || e.at[1].Before(breach) || e.at[1].After(breach.Add(time.Minute)) {
		t.Fatalf("fired at %v, due %v and %v", e.at, warn, breach)
	}
	if len(e.pushed) != 1 || e.pushed[0] != "n-"+models.SLAFirstResponse {
		t.Fatalf("pushed %v", e.pushed)
	}
}

// A change while it waits is read at once: the due time moved earlier (a
// higher priority) fires at the new time, and the old time fires nothing.
func TestTicketSLAReadsItsTimersAgainWhenWoken(t *testing.T) {
	eachWay(t, ticketSLAReadsItsTimersAgainWhenWoken)
}

func ticketSLAReadsItsTimersAgainWhenWoken(t *testing.T, local bool) {
	e := newSLAEnv(t, local)
	late, early := e.start.Add(4*time.Hour), e.start.Add(90*time.Minute)
	e.plans = []activities.SLAPlan{
		{Live: true, Timers: []models.SLATimer{timer(models.SLAResolution, models.SLABreachTimer, late)}},
		{Live: true, Timers: []models.SLATimer{timer(models.SLAResolution, models.SLABreachTimer, early)}},
		{Live: false},
	}
	e.env.RegisterDelayedCallback(func() { e.env.SignalWorkflow(names.SignalTicketSLAWake, nil) }, 30*time.Minute)
	e.run(t)
	if len(e.fired) != 1 || !e.fired[0].At.Equal(early) || e.at[0].Before(early) || !e.at[0].Before(late) {
		t.Fatalf("fired %+v at %v", e.fired, e.at)
	}
}
