package web

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
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

// AccessLog says which requests the access log writes
// (SUITE_ACCESS_LOG): every answer of 400 and up and every request slower
// than SlowRequest always, and one in Every of the others (1: all of them,
// 0: none).
type AccessLog struct {
	Every uint64
}

// SlowRequest is the duration from which a request is always logged.
const SlowRequest = time.Second

// The access-log settings by name.
var (
	AccessLogAll    = AccessLog{Every: 1}
	AccessLogErrors = AccessLog{Every: 0}
)

// ParseAccessLog reads SUITE_ACCESS_LOG's forms: "all", "errors" or
// "sample:N" (N ≥ 1: one request in N, and every error).
func ParseAccessLog(s string) (AccessLog, error) {
	switch s {
	case "all":
		return AccessLogAll, nil
	case "errors":
		return AccessLogErrors, nil
	}
	if n, ok := strings.CutPrefix(s, "sample:"); ok {
		if every, err := strconv.ParseUint(n, 10, 32); err == nil && every >= 1 {
			return AccessLog{Every: every}, nil
		}
	}
	return AccessLog{}, fmt.Errorf("%q is not all, errors or sample:N with N a whole number from 1", s)
}

func (a AccessLog) String() string {
	switch a.Every {
	case 0:
		return "errors"
	case 1:
		return "all"
	}
	return "sample:" + strconv.FormatUint(a.Every, 10)
}

// Observe is the outermost middleware: it times the request, turns a
// returned error into its problem response (so the status is known), then
// records metrics and writes one JSON access-log line for the requests
// that policy picks.
func Observe(log *slog.Logger, m *Metrics, policy AccessLog) fiber.Handler {
	var seen atomic.Uint64
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
		if status < 400 && elapsed < SlowRequest && (policy.Every == 0 || seen.Add(1)%policy.Every != 0) {
			return nil
		}
		level := slog.LevelInfo
		// A readiness 503 is the probe's answer — not ready yet, as at
		// every start, or no longer — not a request that failed.
		if status >= 500 && route != "/readyz" {
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
			slog.Int("bytes", responseBytes(c)),
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

// responseBytes is the size of the answer's body: a streamed one (an
// export's file) by its Content-Length, never read into memory to count.
func responseBytes(c *fiber.Ctx) int {
	if c.Response().IsBodyStream() {
		return c.Response().Header.ContentLength()
	}
	return len(c.Response().Body())
}
