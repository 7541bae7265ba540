package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/ready"
	"github.com/business-suite/suite/worker"
	"github.com/business-suite/suite/workflows/names"
)

// startWorker registers the suite's workflows and activities and starts
// polling the task queue under identity (what /readyz looks for among the
// task queue's pollers, and what the Temporal UI shows).
func startWorker(cfg Config, db *gorm.DB, tc client.Client, id *identityWiring, vapid activities.VAPID, identity string,
	reg prometheus.Registerer) (sdkworker.Worker, error) {
	w := worker.New(tc, worker.Deps{DB: db, Identity: id.client, VAPID: vapid, AI: cfg.AIProvider(), Billing: cfg.Billing(),
		Mail: cfg.smtp(), PublicURL: cfg.PublicURL, InviteURL: cfg.InviteURL, MailDomain: cfg.MailDomain,
		WebhookEgress: cfg.WebhookEgress(), TicketAutoCloseAfter: cfg.TicketAutoCloseAfter, Metrics: reg},
		sdkworker.Options{WorkerStopTimeout: cfg.ShutdownTimeout, Identity: identity})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return w, nil
}

// runWorker is `suite worker`: the production Temporal worker, with a small
// HTTP listener for probes and metrics.
func runWorker(ctx context.Context, cfg Config) error {
	log, reg, stop := startProcess(ctx, cfg, "worker")
	defer stop()
	db, err := openDB(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, cfg, log, reg, "Temporal at "+cfg.TemporalAddress)
	if err != nil {
		return err
	}
	defer tc.Close()
	if cfg.IdentityURL == "" {
		return fmt.Errorf("IDENTITY_URL is required: the base URL of the identity service (e.g. http://suite-api:8080/identity)")
	}
	id, err := wireIdentity(ctx, cfg, db, "", false, false, log)
	if err != nil {
		return err
	}
	vapid, err := loadVAPID(ctx, cfg, db)
	if err != nil {
		return err
	}
	saCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := worker.EnsureSearchAttributes(saCtx, tc, cfg.TemporalNamespace); err != nil {
		// Not fatal: starts that carry them wait in the outbox, retried,
		// until an operator registers them (outbox.unregisteredSearchAttribute).
		log.Warn("custom search attributes are not registered", "error", err)
	}
	cancel()
	identity := ready.Identity("worker")
	w, err := startWorker(cfg, db, tc, id, vapid, identity, reg)
	if err != nil {
		return err
	}
	defer w.Stop()

	checker := ready.New(ready.Options{DB: db, Temporal: tc, Namespace: cfg.TemporalNamespace, WorkerIdentity: identity, TaskQueue: names.TaskQueue})
	health, err := serveWorkerHealth(cfg.WorkerHealthAddr, checker, reg)
	if err != nil {
		return err
	}
	defer func() { _ = health.Close() }()
	log.Info("worker polling", "task_queue", "suite", "health", cfg.WorkerHealthAddr)
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// serveWorkerHealth serves /healthz, /readyz (the database answers and this
// worker polls the suite task queue; see package internal/ready) and /metrics
// for the worker process.
func serveWorkerHealth(addr string, checker *ready.Checker, reg *prometheus.Registry) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		report := checker.Check(r.Context())
		body := map[string]any{"status": "ready", "checks": report.Checks}
		w.Header().Set("Content-Type", "application/json")
		if !report.Ready {
			body["status"] = "unavailable"
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on SUITE_WORKER_HEALTH_ADDR %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}
