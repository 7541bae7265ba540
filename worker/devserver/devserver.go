// Package devserver runs a complete Temporal server and the Temporal Web UI
// inside the current process: backed by an SQLite file, the development
// server of `suite dev` and of tests that must stop and restart Temporal
// with its state intact (one history shard, one process, not for
// production); backed by PostgreSQL (PostgresStore), a node of a Temporal
// cluster, as `suite temporal` runs it with TEMPORAL_DB_URL.
package devserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
)

// Options configures the embedded server.
type Options struct {
	// DBPath is the SQLite file holding all Temporal state; "" keeps the
	// state in memory (lost on Stop).
	DBPath string
	// FrontendAddr is the gRPC address clients dial, e.g. 127.0.0.1:7233.
	FrontendAddr string
	// Namespace is created on first start (default "default").
	Namespace string
	// SearchAttributes are registered on the namespace when it is created.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Retention keeps closed workflows visible this long (default 7 days).
	Retention time.Duration
	// UIAddr serves the Temporal Web UI, e.g. 127.0.0.1:8233; "" disables it.
	UIAddr string
	// LogLevel of the server's own log (default "warn").
	LogLevel string
	// LogFile receives the server's own log; "" discards it.
	LogFile string
	// Postgres, when set, keeps the state in PostgreSQL instead of the
	// SQLite file DBPath: the server is then a node of a cluster.
	Postgres *PostgresStore
	// Fairness dispatches each task queue's tasks in turns across their
	// fairness keys (the organization: names.Priority) instead of first
	// come, first served (matching.enableFairness).
	Fairness bool
}

// HistoryCacheSize is how many workflows' mutable state the embedded
// server keeps in memory (history.hostLevelCacheMaxSize); a workflow not
// in it is read from the SQLite file when its next task comes.
const HistoryCacheSize = 4096

// Server is a running embedded Temporal server.
type Server struct {
	temporal temporal.Server
	ui       *uiserver.Server
	uiDone   chan struct{}
	opts     Options
}

// Start creates the schema and namespace on first use and starts the
// server (and UI). It returns once the frontend accepts connections.
func Start(opts Options) (*Server, error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.Retention == 0 {
		opts.Retention = 7 * 24 * time.Hour
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	if strings.Contains(opts.FrontendAddr, ",") {
		return nil, fmt.Errorf("temporal frontend address %q: a server listens on one address, not a list", opts.FrontendAddr)
	}
	host, portText, err := net.SplitHostPort(opts.FrontendAddr)
	if err != nil {
		return nil, fmt.Errorf("temporal frontend address %q: %w", opts.FrontendAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("temporal frontend port %q: %w", portText, err)
	}
	for _, addr := range []string{opts.FrontendAddr, opts.UIAddr} {
		if err := checkFree(addr); err != nil {
			return nil, err
		}
	}

	var logger tlog.Logger = tlog.NewNoopLogger()
	if opts.LogFile != "" {
		logger = tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: opts.LogLevel, OutputFile: opts.LogFile}))
	}
	var (
		cfg        *config.Config
		registered bool // the namespace has its search attributes already
	)
	if opts.Postgres != nil {
		cfg, err = startPostgres(opts, host, port, logger)
	} else {
		cfg, registered, err = startSQLite(opts, host, port)
	}
	if err != nil {
		return nil, err
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, err
	}
	serverOpts := []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// Search attributes registered while the server runs (the operator
			// service: worker.EnsureSearchAttributes) reach the server's caches at
			// their next refresh, seconds later; a workflow started with one
			// before then is refused. Refreshing on every read closes that window
			// but costs a cluster-metadata query and a namespace read per workflow
			// start (6–7 % of `suite dev`'s CPU while the lead intake ran), so it
			// is on only when the namespace does not have its search attributes
			// from the start (a cluster node's namespace never has: the worker
			// registers them).
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: !registered}},
			dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():      []dynamicconfig.ConstrainedValue{{Value: 1}},
			dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():     []dynamicconfig.ConstrainedValue{{Value: 1}},
			// The history service keeps up to this many workflows' mutable
			// state in memory (128,000 by default, sized for a host of its
			// own): a backlog of 20,000 intakes took suite dev to 2 GB.
			dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): []dynamicconfig.ConstrainedValue{{Value: HistoryCacheSize}},
			dynamicconfig.MatchingEnableFairness.Key():       []dynamicconfig.ConstrainedValue{{Value: opts.Fairness}},
		}),
	}
	if opts.Postgres == nil {
		serverOpts = append(serverOpts, temporal.WithStaticHosts(staticHosts(host, cfg)))
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	if opts.Postgres != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := registerNamespace(ctx, opts.FrontendAddr, opts.Namespace, opts.Retention)
		cancel()
		if err != nil {
			_ = srv.Stop()
			return nil, err
		}
	}
	s := &Server{temporal: srv, opts: opts}
	if opts.UIAddr != "" {
		if err := s.startUI(); err != nil {
			_ = srv.Stop()
			return nil, err
		}
	}
	return s, nil
}

// FrontendAddr is the address clients dial.
func (s *Server) FrontendAddr() string { return s.opts.FrontendAddr }

// UIURL is the Temporal Web UI address, or "" when disabled.
func (s *Server) UIURL() string {
	if s.opts.UIAddr == "" {
		return ""
	}
	return "http://" + s.opts.UIAddr
}

// Stop stops the UI and the server; state in DBPath is kept. The server's
// own shutdown can linger on internal RPCs to its already-stopped frontend;
// after timeout Stop returns anyway — every committed write is already in
// the SQLite file or PostgreSQL, so nothing is lost by not waiting.
func (s *Server) Stop(timeout time.Duration) error {
	if s.ui != nil {
		s.ui.Stop()
		<-s.uiDone
	}
	done := make(chan error, 1)
	go func() { done <- s.temporal.Stop() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("temporal server still stopping after %s; leaving it", timeout)
	}
}
