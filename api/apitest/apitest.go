// Package apitest is the harness for API tests: a real Temporal server
// in-process (temporaltest), a fresh migrated database per environment
// (SQLite always, PostgreSQL when available), the real Fiber app with all its
// middleware, and a worker running the suite's workflows. Every request and
// response made through Env.Do is validated against docs/openapi.yaml, so a
// handler that drifts from the specification fails its test.
package apitest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/worker"
)

// Env is one complete, isolated suite: database, Temporal, worker, app.
type Env struct {
	T        *testing.T
	Dialect  models.Dialect
	DB       *gorm.DB
	Temporal client.Client
	Worker   sdkworker.Worker
	Starter  *outbox.Starter
	App      *fiber.App
	Log      *slog.Logger
}

// Option adjusts an Env before it starts.
type Option func(*options)

type options struct {
	register []func(sdkworker.Registry)
}

// WithRegistered registers extra workflows or activities on the worker
// (test-only workflows).
func WithRegistered(fn func(r sdkworker.Registry)) Option {
	return func(o *options) { o.register = append(o.register, fn) }
}

// Each runs fn once per available dialect, each with its own Env.
func Each(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	t.Helper()
	for _, d := range dbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { fn(t, New(t, d, opts...)) })
	}
}

// New starts an Env on dialect d; everything stops when the test ends.
func New(t *testing.T, d models.Dialect, opts ...Option) *Env {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	e := &Env{T: t, Dialect: d, DB: dbtest.Open(t, d), Log: log}

	// One Temporal server per Env: two Envs never share a task queue, so a
	// workflow of one test can never run against another test's database.
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	e.Temporal = ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := worker.EnsureSearchAttributes(ctx, e.Temporal, ts.GetDefaultNamespace()); err != nil {
		t.Fatalf("search attributes: %v", err)
	}
	e.Worker = worker.New(e.Temporal, worker.Deps{DB: e.DB}, sdkworker.Options{})
	for _, fn := range o.register {
		fn(e.Worker)
	}
	if err := e.Worker.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(e.Worker.Stop)

	e.Starter = outbox.New(e.DB, e.Temporal, log, nil)
	e.Starter.PollInterval = 50 * time.Millisecond
	relayCtx, stopRelay := context.WithCancel(context.Background())
	go e.Starter.Run(relayCtx)
	t.Cleanup(stopRelay)

	e.App = api.New(api.Deps{DB: e.DB, Temporal: e.Temporal, Starter: e.Starter, Log: log,
		Metrics: prometheus.NewRegistry(), Version: "test"})
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
