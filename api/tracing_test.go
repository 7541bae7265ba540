package api_test

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
)

// TestOneTraceFromRequestToActivity: the request that creates an
// organization, the relay's start of its registration workflow (from the
// outbox, on another goroutine, after the request has answered), the
// workflow and its activities are one trace, each span the child of the one
// before — what an operator follows from a slow request to the activity
// that made it slow.
func TestOneTraceFromRequestToActivity(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	t.Cleanup(func() { otel.SetTracerProvider(previous) })

	e := apitest.New(t, database.SQLite)
	owner := e.SignUp(apitest.UniqueEmail("trace"))
	orgID := e.CreateOrg(owner, "Traced Co")
	e.WaitOrgStatus(orgID, "active")

	byName := func() map[string]sdktrace.ReadOnlySpan {
		spans := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range recorder.Ended() {
			spans[s.Name()] = s
		}
		return spans
	}
	request := "POST /crm/organization"
	var spans map[string]sdktrace.ReadOnlySpan
	var activity sdktrace.ReadOnlySpan
	e.Eventually(func() bool {
		spans = byName()
		for name, s := range spans {
			if strings.HasPrefix(name, "RunActivity:") && spans[request] != nil &&
				s.SpanContext().TraceID() == spans[request].SpanContext().TraceID() {
				activity = s
				return spans["RunWorkflow:OrgRegistration"] != nil
			}
		}
		return false
	}, "spans of the request, its workflow and an activity (have %v)", ended{recorder})

	root := spans[request]
	if root.Parent().IsValid() {
		t.Fatalf("the request span has a parent: %v", root.Parent())
	}
	chain := []sdktrace.ReadOnlySpan{root, spans["StartWorkflow:OrgRegistration"], spans["RunWorkflow:OrgRegistration"]}
	for i, s := range chain {
		if s == nil {
			t.Fatalf("span %d of the chain is missing; have %v", i, spanNames(recorder.Ended()))
		}
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Fatalf("%s is in trace %s, the request in %s", s.Name(), s.SpanContext().TraceID(), root.SpanContext().TraceID())
		}
		if i > 0 && s.Parent().SpanID() != chain[i-1].SpanContext().SpanID() {
			t.Fatalf("%s's parent is %s, want %s", s.Name(), nameOf(recorder.Ended(), s.Parent()), chain[i-1].Name())
		}
	}
	// The activity descends from the workflow (through its StartActivity span).
	for s := activity; ; {
		parent := find(recorder.Ended(), s.Parent())
		if parent == nil {
			t.Fatalf("%s does not descend from RunWorkflow:OrgRegistration", activity.Name())
		}
		if parent.Name() == "RunWorkflow:OrgRegistration" {
			break
		}
		s = parent
	}
	if got := root.Attributes(); !hasAttr(got, "http.route", "/crm/organization") || !hasAttr(got, "request.id", "") {
		t.Fatalf("request span attributes %v", got)
	}
}

func find(spans []sdktrace.ReadOnlySpan, sc trace.SpanContext) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.SpanContext().SpanID() == sc.SpanID() {
			return s
		}
	}
	return nil
}

func nameOf(spans []sdktrace.ReadOnlySpan, sc trace.SpanContext) string {
	if s := find(spans, sc); s != nil {
		return s.Name()
	}
	return fmt.Sprintf("unknown span %s", sc.SpanID())
}

// ended lists the ended spans' names when printed (at failure time).
type ended struct{ r *tracetest.SpanRecorder }

func (e ended) String() string { return fmt.Sprint(spanNames(e.r.Ended())) }

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// hasAttr: attrs has key with value ("" : any non-empty value).
func hasAttr(attrs []attribute.KeyValue, key, value string) bool {
	for _, a := range attrs {
		if string(a.Key) == key && (a.Value.String() == value || value == "" && a.Value.String() != "") {
			return true
		}
	}
	return false
}
