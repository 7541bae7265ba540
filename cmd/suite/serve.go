package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api"
	"github.com/business-suite/suite/api/outbox"
)

// apiServer is a listening HTTP API replica with its background loops.
type apiServer struct {
	addr string
	done chan error
}

// startAPI listens on cfg.HTTPAddr and serves until ctx ends, then shuts
// down gracefully (in-flight requests finish within the shutdown timeout).
func startAPI(ctx context.Context, cfg Config, db *gorm.DB, tc client.Client, log *slog.Logger, reg *prometheus.Registry) (*apiServer, error) {
	starter := outbox.New(db, tc, log.With("component", "outbox"), reg)
	app := api.New(api.Deps{
		DB: db, Temporal: tc, Starter: starter, Log: log, Metrics: reg,
		Version: version, TrustedProxies: cfg.TrustedProxies,
	})
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on SUITE_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	runBackground(bgCtx, db, starter, log)

	s := &apiServer{addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() {
		serveErr := make(chan error, 1)
		go func() { serveErr <- app.Listener(ln) }()
		select {
		case err := <-serveErr:
			stopBackground()
			s.done <- err
		case <-ctx.Done():
			err := app.ShutdownWithTimeout(cfg.ShutdownTimeout)
			stopBackground()
			if e := <-serveErr; e != nil && !errors.Is(e, net.ErrClosed) {
				err = errors.Join(err, e)
			}
			s.done <- err
		}
	}()
	return s, nil
}

// wait blocks until the server has stopped.
func (s *apiServer) wait() error { return <-s.done }

// runAPI is `suite api`: the production HTTP API replica.
func runAPI(ctx context.Context, cfg Config) error {
	log := newLogger(cfg.LogLevel).With("process", "api")
	log.Info("starting", append([]any{"version", version}, cfg.LogAttrs()...)...)
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	opts, err := temporalOptions(cfg, log)
	if err != nil {
		return err
	}
	// Lazy: the API serves (and records workflow starts in the outbox) even
	// while Temporal is unreachable; /readyz reports it.
	tc, err := client.NewLazyClient(opts)
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	defer tc.Close()
	srv, err := startAPI(ctx, cfg, db, tc, log, newMetrics())
	if err != nil {
		return err
	}
	log.Info("listening", "addr", srv.addr)
	return srv.wait()
}
