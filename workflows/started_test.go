package workflows_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// startedActivities records the type of every activity, regular or local,
// that a test workflow starts — mocked or not. Use it for "X never runs":
// env.AssertNotCalled cannot fail for that (the test environment records
// only calls to mocked activities, and in SDK v1.50 AssertNotCalled reports
// nothing to t when it does find a call).
type startedActivities struct {
	mu    sync.Mutex
	names []string
}

// recordStarted starts recording on env; call it before ExecuteWorkflow.
func recordStarted(env *testsuite.TestWorkflowEnvironment) *startedActivities {
	s := &startedActivities{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		s.add(info.ActivityType.Name)
	})
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		s.add(info.ActivityType.Name)
	})
	return s
}

func (s *startedActivities) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, name)
}

// assertNotStarted fails t for each of names that was started.
func (s *startedActivities) assertNotStarted(t *testing.T, names ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.names) == 0 {
		t.Error("no activity started at all: is the recorder attached before ExecuteWorkflow?")
	}
	for _, name := range names {
		if slices.Contains(s.names, name) {
			t.Errorf("activity %s started, want never (started: %v)", name, s.names)
		}
	}
}

// assertOnly fails t unless exactly names were started, in this order.
func (s *startedActivities) assertOnly(t *testing.T, names ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.names, names) {
		t.Errorf("activities started %v, want %v", s.names, names)
	}
}
