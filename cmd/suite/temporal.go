package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/workflows"
)

// runTemporal is `suite temporal`: the embedded Temporal server (and its Web
// UI at SUITE_TEMPORAL_UI_ADDR unless empty) on its own, listening on
// TEMPORAL_ADDRESS with its state in SUITE_DATA_DIR/temporal.db, until
// SIGINT or SIGTERM. It lets `suite api` and `suite worker` processes run
// against a separate Temporal process on one machine (make e2e). It is for
// development and tests: one SQLite file, one history shard, no replication.
// Production uses a Temporal cluster or Temporal Cloud.
func runTemporal(ctx context.Context, cfg Config) error {
	log := newLogger(cfg.LogLevel).With("process", "temporal")
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create SUITE_DATA_DIR: %w", err)
	}
	ts, err := startEmbeddedTemporal(cfg)
	if err != nil {
		return err
	}
	log.Info("temporal server running (development and tests only, not for production)",
		"frontend", ts.FrontendAddr(), "ui", ts.UIURL(), "namespace", cfg.TemporalNamespace,
		"state", filepath.Join(cfg.DataDir, temporalDBFile), "server_log", filepath.Join(cfg.DataDir, temporalLogFile))
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

// startEmbeddedTemporal starts the embedded Temporal server of `suite dev`
// and `suite temporal`: state in SUITE_DATA_DIR, the frontend on
// TEMPORAL_ADDRESS, the namespace with the suite's search attributes, and
// the Web UI unless SUITE_TEMPORAL_UI_ADDR is empty.
func startEmbeddedTemporal(cfg Config) (*devserver.Server, error) {
	searchAttrs := map[string]enumspb.IndexedValueType{}
	for _, name := range workflows.SearchAttributeNames {
		searchAttrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return devserver.Start(devserver.Options{
		DBPath:           filepath.Join(cfg.DataDir, temporalDBFile),
		FrontendAddr:     cfg.TemporalAddress,
		Namespace:        cfg.TemporalNamespace,
		SearchAttributes: searchAttrs,
		UIAddr:           cfg.TemporalUIAddr,
		LogFile:          filepath.Join(cfg.DataDir, temporalLogFile),
	})
}
