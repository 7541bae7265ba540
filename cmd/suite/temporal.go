package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/workflows/names"
)

// runTemporal is `suite temporal`: a Temporal server (and its Web UI at
// SUITE_TEMPORAL_UI_ADDR unless empty) on its own, listening on
// TEMPORAL_ADDRESS, until SIGINT or SIGTERM. With TEMPORAL_DB_URL it is a
// node of a cluster whose state is in PostgreSQL: it installs or upgrades
// the server's schema there and joins the nodes already running on it.
// Without, it is the development server of `suite dev` on its own, its
// state in SUITE_DATA_DIR/temporal.db (one SQLite file, one history shard,
// one process): what make e2e's default topology runs.
func runTemporal(ctx context.Context, cfg Config) error {
	log := newLogger(cfg.LogLevel).With("process", "temporal")
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create SUITE_DATA_DIR: %w", err)
	}
	opts := embeddedTemporal(cfg)
	// Against `suite temporal` each API's relay has 16 starts in flight and
	// one organization's burst queues inside Temporal: with fairness the
	// other organizations' tasks are dispatched in turns beside it, not
	// behind it (docs/decisions.md, "Fairness in `suite temporal`").
	// `suite dev` starts workflows at its worker's pace and leaves it off.
	opts.Fairness = true
	if cfg.TemporalDBURL != "" {
		opts.DBPath = ""
		opts.Postgres = &devserver.PostgresStore{URL: cfg.TemporalDBURL, HistoryShards: cfg.TemporalHistoryShards, MaxConns: cfg.TemporalDBMaxConns}
	}
	ts, err := devserver.Start(opts)
	if err != nil {
		return err
	}
	if opts.Postgres != nil {
		askCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		members, err := devserver.Members(askCtx, ts.FrontendAddr())
		cancel()
		log.Info("temporal cluster node running", "frontend", ts.FrontendAddr(), "ui", ts.UIURL(), "namespace", cfg.TemporalNamespace,
			"history_shards", cfg.TemporalHistoryShards, "members", members, "members_error", err, "server_log", opts.LogFile)
	} else {
		log.Info("temporal server running (development and tests only, not for production)",
			"frontend", ts.FrontendAddr(), "ui", ts.UIURL(), "namespace", cfg.TemporalNamespace,
			"state", opts.DBPath, "server_log", opts.LogFile)
	}
	<-ctx.Done()
	log.Info("stopping")
	if err := ts.Stop(5 * time.Second); err != nil {
		log.Warn("temporal server", "error", err)
	}
	log.Info("stopped")
	return nil
}

// The embedded server's files under SUITE_DATA_DIR.
const (
	temporalDBFile  = "temporal.db"
	temporalLogFile = "temporal-server.log"
)

// startEmbeddedTemporal starts the embedded Temporal server of `suite dev`.
func startEmbeddedTemporal(cfg Config) (*devserver.Server, error) {
	return devserver.Start(embeddedTemporal(cfg))
}

// embeddedTemporal is the embedded server's configuration: state in
// SUITE_DATA_DIR, the frontend on TEMPORAL_ADDRESS, the namespace with the
// suite's search attributes, and the Web UI unless SUITE_TEMPORAL_UI_ADDR
// is empty.
func embeddedTemporal(cfg Config) devserver.Options {
	searchAttrs := map[string]enumspb.IndexedValueType{}
	for _, name := range names.SearchAttributeNames {
		searchAttrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return devserver.Options{
		DBPath:           filepath.Join(cfg.DataDir, temporalDBFile),
		FrontendAddr:     cfg.TemporalAddress,
		Namespace:        cfg.TemporalNamespace,
		SearchAttributes: searchAttrs,
		UIAddr:           cfg.TemporalUIAddr,
		LogFile:          filepath.Join(cfg.DataDir, temporalLogFile),
	}
}
