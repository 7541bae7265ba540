package web

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Metrics holds the HTTP metrics of one app.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "suite_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "suite_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// Observe is the outermost middleware: it times the request, turns a
// returned error into its problem response (so the status is known), then
// records metrics and writes one JSON access-log line.
func Observe(log *slog.Logger, m *Metrics) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		if err := c.Next(); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				return herr
			}
		}
		elapsed := time.Since(start)
		status := c.Response().StatusCode()
		route := c.Route().Path
		if status == fiber.StatusNotFound && route == "/" {
			route = "unmatched" // keep label cardinality bounded
		}
		// Fiber's strings point into fasthttp buffers that the next request
		// on the connection overwrites: labels and log fields outlive this
		// request (Prometheus keeps label values, log handlers may buffer),
		// so they get strings of their own.
		method := Method(c)
		if m != nil {
			m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		ctx := c.UserContext()
		if !log.Enabled(ctx, level) {
			return nil
		}
		// The record is made here and handed to the handler, as log.LogAttrs
		// would, but without the runtime.Callers that LogAttrs spends on a
		// source location the handler does not write (1 % of a list
		// request's CPU).
		r := slog.NewRecord(start.Add(elapsed), level, "http request", 0)
		r.AddAttrs(slog.String("request_id", RequestID(c)))
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
		}
		r.AddAttrs(
			slog.String("method", method),
			slog.String("path", strings.Clone(c.Path())),
			slog.String("route", route),
			slog.Int("status", status),
			// An integer: slog writes a float through json.Marshal (1 % of
			// a list request's CPU).
			slog.Int64("duration_us", elapsed.Microseconds()),
			slog.Int("bytes", len(c.Response().Body())),
			slog.String("ip", ClientIP(c)),
		)
		_ = log.Handler().Handle(ctx, r) // as Logger's methods, a handler's error is dropped
		return nil
	}
}

// methods are the request methods as constants; Method returns one of them.
var methods = []string{
	fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch,
	fiber.MethodDelete, fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace,
}

// Method is the request's method as a string that stays valid after the
// request (c.Method() points into a reused fasthttp buffer). Known methods
// cost no allocation; anything else is copied.
func Method(c *fiber.Ctx) string {
	m := c.Method()
	for _, known := range methods {
		if m == known {
			return known
		}
	}
	return strings.Clone(m)
}
