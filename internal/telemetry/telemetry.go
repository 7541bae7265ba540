// Package telemetry carries one trace from an HTTP request through the
// outbox into the workflow it starts and the workflow's activities, and
// puts the Temporal SDK's own metrics on a process's /metrics.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then spans go to that
// collector over OTLP/gRPC, configured by the standard OTEL_* variables.
// Off, the global tracer provider is OpenTelemetry's no-op one and the
// request, outbox and Temporal hooks below cost next to nothing.
package telemetry

import (
	"context"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// propagator is the W3C trace context: what the outbox stores and what the
// HTTP middleware reads from an incoming traceparent header.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Setup installs the process's tracer provider: with export on, spans go
// over OTLP/gRPC to the collector the OTEL_EXPORTER_OTLP_* variables name;
// off, none are recorded. The returned function flushes and stops the
// exporter.
func Setup(ctx context.Context, export bool, service, version string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagator)
	if !export {
		return func(context.Context) error { return nil }, nil
	}
	exporter, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// Interceptor is the Temporal client interceptor (workers made from the
// client inherit it) that continues the caller's trace into the workflow
// start, the workflow, its activities and signals. It reads the global
// tracer provider when a span starts, so Setup may run before or after.
func Interceptor() (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: lazyTracer{}, TextMapPropagator: propagator,
	})
}

// lazyTracer resolves the global provider on every span, so that a
// provider installed after the client was built (tests, Setup order) is
// the one used.
type lazyTracer struct{ trace.Tracer }

func (lazyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return otel.Tracer("temporal-sdk-go").Start(ctx, name, opts...)
}

// Middleware starts a server span for each request, continuing a trace
// the caller sent in traceparent, and makes it the request's context
// (c.UserContext()), which handlers pass to the outbox. The span carries
// the request's id (requestID), which the context carries too: the outbox
// stores it with the work it starts, and the work's log lines carry it
// (RequestIDPropagator, LogInterceptor).
func Middleware(requestID func(c *fiber.Ctx) string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx := c.UserContext()
		if tp := c.Get("traceparent"); tp != "" {
			ctx = propagator.Extract(ctx, propagation.MapCarrier{
				"traceparent": strings.Clone(tp), "tracestate": strings.Clone(c.Get("tracestate"))})
		}
		id := strings.Clone(requestID(c))
		// The provider is looked up per request, like lazyTracer's.
		ctx, span := otel.Tracer("business-suite/http").Start(ctx, "HTTP", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetUserContext(WithRequestID(ctx, id))
		// With tracing off (the no-op provider, or a span not sampled) the
		// span records nothing: its name and attributes, a few copies and
		// allocations a request, are made only for a span that keeps them.
		// They are set after Start, which the samplers the OTEL_TRACES_SAMPLER
		// variable offers never consult.
		var method string
		if span.IsRecording() {
			method = strings.Clone(c.Method())
			span.SetName(method)
			span.SetAttributes(attribute.String("http.request.method", method),
				attribute.String("url.path", strings.Clone(c.Path())), attribute.String("request.id", id))
		}
		err := c.Next()
		if !span.IsRecording() {
			return err
		}
		// The route is known once routing has run; copy it, Fiber reuses it.
		route := strings.Clone(c.Route().Path)
		span.SetName(method + " " + route)
		// The status is final: web.Observe, inside this middleware, has
		// already written a returned error as its problem response.
		status := c.Response().StatusCode()
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 || err != nil {
			span.SetStatus(codes.Error, "")
		}
		return err
	}
}

// Inject is the W3C trace context of ctx's span, to store with work that
// starts later (the outbox row); "" when ctx carries no sampled span.
func Inject(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// Extract returns ctx continuing the trace Inject stored.
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// SDKMetrics is a Temporal metrics handler whose metrics (workflow and
// activity latencies, failures, poll and schedule-to-start latency, slots
// in use) are collected by reg, next to the process's own.
func SDKMetrics(reg prometheus.Registerer) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(error) {}, // a metric must never take the worker down
	}), nil
}
