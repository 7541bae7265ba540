package telemetry

import (
	"context"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// The request id travels with the work a request causes: the HTTP
// middleware puts it in the request's context, the outbox stores it with
// the workflow start, the relay puts it back into the context of its call
// to Temporal, RequestIDPropagator carries it in the workflow's headers (to
// the workflow, its activities and child workflows), and LogInterceptor
// adds it to every line their loggers write.

type requestIDKey struct{}

// requestIDHeader is the Temporal header that carries the id.
const requestIDHeader = "suite-request-id"

// WithRequestID returns ctx carrying the request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries ("" for none).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestIDPropagator carries the request id from a client's context into
// the headers of the workflows it starts, and from there into their
// workflow and activity contexts. Clients and workers must all have it
// (client.Options.ContextPropagators).
func RequestIDPropagator() workflow.ContextPropagator { return requestIDPropagator{} }

type requestIDPropagator struct{}

func (requestIDPropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return injectRequestID(RequestID(ctx), w)
}

func (requestIDPropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return injectRequestID(id, w)
}

func (requestIDPropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	id, err := extractRequestID(r)
	if err != nil || id == "" {
		return ctx, err
	}
	return context.WithValue(ctx, requestIDKey{}, id), nil
}

func (requestIDPropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	id, err := extractRequestID(r)
	if err != nil || id == "" {
		return ctx, err
	}
	return workflow.WithValue(ctx, requestIDKey{}, id), nil
}

func injectRequestID(id string, w workflow.HeaderWriter) error {
	if id == "" {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(id)
	if err != nil {
		return err
	}
	w.Set(requestIDHeader, p)
	return nil
}

func extractRequestID(r workflow.HeaderReader) (string, error) {
	p, ok := r.Get(requestIDHeader)
	if !ok {
		return "", nil
	}
	var id string
	err := converter.GetDefaultDataConverter().FromPayload(p, &id)
	return id, err
}

// LogInterceptor adds request_id to every line written through
// workflow.GetLogger and activity.GetLogger by work a request caused. Put
// in a client's interceptors, it applies to the workers made from it.
func LogInterceptor() interceptor.Interceptor { return &logInterceptor{} }

type logInterceptor struct{ interceptor.InterceptorBase }

func (*logInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityLogInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

func (*logInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowLogInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type activityLogInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *activityLogInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&activityLogOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type activityLogOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

func (a *activityLogOutbound) GetLogger(ctx context.Context) log.Logger {
	l := a.Next.GetLogger(ctx)
	if id := RequestID(ctx); id != "" {
		return log.With(l, "request_id", id)
	}
	return l
}

type workflowLogInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (w *workflowLogInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(&workflowLogOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type workflowLogOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (w *workflowLogOutbound) GetLogger(ctx workflow.Context) log.Logger {
	l := w.Next.GetLogger(ctx)
	if id, _ := ctx.Value(requestIDKey{}).(string); id != "" {
		return log.With(l, "request_id", id)
	}
	return l
}
