package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
)

// openDB connects to the configured database; dev tells whether this is
// `suite dev` (Config.DBMaxActiveFor).
func openDB(ctx context.Context, cfg Config, dev bool) (*gorm.DB, error) {
	return database.Open(ctx, cfg.DatabaseDSN(), database.Options{MaxOpenConns: cfg.DBMaxOpenConns,
		MaxActive: cfg.DBMaxActiveFor(dev), ConnMaxLifetime: 30 * time.Minute})
}

// requireCurrentSchema refuses to serve on a schema older than the code.
func requireCurrentSchema(ctx context.Context, db *gorm.DB) error {
	pending, err := models.PendingMigrations(ctx, db)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if pending {
		return errors.New("the database schema is behind this version: run `suite migrate` first")
	}
	return nil
}

// dialTemporal connects to the Temporal server cfg names (temporalOptions;
// server names it in the error), giving up after 30 seconds.
func dialTemporal(ctx context.Context, cfg Config, log *slog.Logger, reg *prometheus.Registry, server string) (client.Client, error) {
	opts, err := temporalOptions(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tc, err := client.DialContext(dialCtx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", server, err)
	}
	return tc, nil
}

// temporalOptions builds client options from the configuration: address,
// namespace, and either an API key (Temporal Cloud) or mTLS files. The
// client (and workers made from it) continue request traces into
// workflows and report the SDK's metrics into reg.
func temporalOptions(cfg Config, log *slog.Logger, reg *prometheus.Registry) (client.Options, error) {
	tracing, err := telemetry.Interceptor()
	if err != nil {
		return client.Options{}, err
	}
	sdkMetrics, err := telemetry.SDKMetrics(reg)
	if err != nil {
		return client.Options{}, err
	}
	opts := client.Options{
		HostPort:     cfg.TemporalAddress,
		Namespace:    cfg.TemporalNamespace,
		Logger:       sdklog.NewStructuredLogger(log.With("component", "temporal-client")),
		Interceptors: []interceptor.ClientInterceptor{tracing, telemetry.LogInterceptor()},
		// The request id travels in the workflows' headers.
		ContextPropagators: []workflow.ContextPropagator{telemetry.RequestIDPropagator()},
		MetricsHandler:     sdkMetrics,
	}
	if frontends := strings.Split(cfg.TemporalAddress, ","); len(frontends) > 1 {
		// A cluster's nodes with no balancer in front: a resolver that
		// knows them all, and the SDK's round-robin balancing sends each
		// call to a node whose connection is up.
		nodes := manual.NewBuilderWithScheme("suite-temporal")
		var state resolver.State
		for _, addr := range frontends {
			state.Addresses = append(state.Addresses, resolver.Address{Addr: strings.TrimSpace(addr)})
		}
		nodes.InitialState(state)
		opts.HostPort = "suite-temporal:///cluster"
		opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithResolvers(nodes))
	}
	if cfg.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.TemporalAPIKey)
		opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.TemporalTLSCert != "" || cfg.TemporalTLSKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TemporalTLSCert, cfg.TemporalTLSKey)
		if err != nil {
			return opts, fmt.Errorf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: %w", err)
		}
		tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ServerName: cfg.TemporalTLSServerName}
		if cfg.TemporalTLSCA != "" {
			pem, err := os.ReadFile(cfg.TemporalTLSCA)
			if err != nil {
				return opts, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return opts, errors.New("TEMPORAL_TLS_CA holds no PEM certificate")
			}
		}
		opts.ConnectionOptions.TLS = tc
	}
	return opts, nil
}

// startProcess is what every long-running subcommand does first: its
// garbage collector target, logger (process=role) and start line, tracing,
// runtime profiles when SUITE_PPROF_ADDR asks for them, and its metrics
// registry. stop flushes the traces at exit.
func startProcess(ctx context.Context, cfg Config, role string) (log *slog.Logger, reg *prometheus.Registry, stop func()) {
	setGCPercent()
	log = newLogger(cfg.LogLevel).With("process", role)
	logStart(log, cfg)
	stop = startTracing(ctx, cfg, role, log)
	serveProfiles(ctx, cfg.PprofAddr, log)
	return log, newMetrics(), stop
}

// defaultGCPercent is the garbage collector's target of the long-running
// processes unless GOGC is set: a collection when the heap has grown by
// twice what was live after the last one, not once (Go's default, 100).
// Measured with `make bench` (docs/decisions.md, "Performance"): 6–15 %
// more requests a second at a tenth less CPU each, for a larger heap
// (`suite dev` under load: 370 MB resident at 100, up to 640 MB at 400).
// GOGC=100 restores Go's default; GOMEMLIMIT caps the heap where memory
// is tight.
const defaultGCPercent = 200

// defaultMemoryLimit is the garbage collector's soft memory limit unless
// GOMEMLIMIT is set (the Kubernetes manifests set it to the container's
// limit): near it, the collector runs more often than GOGC asks. `suite
// dev` with 10,000 open SLA workflows held about 300 MB live, and GOGC's
// headroom took it to 1.6–2 GB resident (docs/decisions.md, "Bounded
// caches").
const defaultMemoryLimit = 768 << 20

// setGCPercent sets defaultGCPercent and defaultMemoryLimit, unless GOGC
// and GOMEMLIMIT are set.
func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}

// startTracing installs the process's tracer provider (see package
// telemetry) and returns the function that flushes it at exit.
func startTracing(ctx context.Context, cfg Config, role string, log *slog.Logger) func() {
	export := cfg.OTLPEndpoint != "" || cfg.OTLPTracesEndpoint != ""
	shutdown, err := telemetry.Setup(ctx, export, "suite-"+role, version)
	if err != nil {
		log.Warn("tracing is off: the OTLP exporter did not start", "error", err)
		return func() {}
	}
	return func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(flushCtx); err != nil {
			log.Warn("flushing traces", "error", err)
		}
	}
}

// newMetrics is a registry with the Go runtime and process collectors.
func newMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// runBackground runs the API replica's background loops until ctx ends: the
// outbox relay and the purge of expired idempotency keys, of revoked
// sessions whose access tokens have all expired, of rate-limit counters
// no limit reads any more, of staff console sessions that are over and of
// expired imports and export files.
func runBackground(ctx context.Context, db *gorm.DB, starter *outbox.Starter, log *slog.Logger) {
	go starter.Run(ctx)
	go func() {
		ticker := time.NewTicker(10 * time.Minute)
		defer ticker.Stop()
		for {
			if n, err := web.PurgeIdempotencyKeys(ctx, db, models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge idempotency keys", "error", err)
			} else if n > 0 {
				log.Info("purged expired idempotency keys", "count", n)
			}
			if _, err := identity.PurgeRevokedSessions(ctx, db, models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge revoked sessions", "error", err)
			}
			if _, err := models.PurgeRateCounters(ctx, db, models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge rate-limit counters", "error", err)
			}
			if _, err := models.PurgeStaffSessions(ctx, db, models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge staff console sessions", "error", err)
			}
			if err := models.PurgeTransfers(ctx, db, models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge expired imports and exports", "error", err)
			}
			if err := models.PurgeErasures(db.WithContext(ctx), models.Now()); err != nil && ctx.Err() == nil {
				log.Warn("purge unconfirmed erasures", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// healthcheck is `suite healthcheck URL`: exit 0 when URL answers 200. The
// container image has no shell or curl, so its health checks use this.
func healthcheck(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return usageError("usage: suite healthcheck <url>\n")
	}
	ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", args[0], resp.StatusCode)
	}
	return nil
}

// serveProfiles serves Go's runtime profiles (net/http/pprof) on addr until
// ctx ends, when addr is set (SUITE_PPROF_ADDR). The handlers are mounted on
// a mux of their own: nothing else is served there, and the API's listener
// never serves them.
func serveProfiles(ctx context.Context, addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		log.Info("serving runtime profiles", "addr", addr)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("runtime profiles", "addr", addr, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
}
