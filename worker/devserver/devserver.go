// Package devserver runs a complete Temporal server and the Temporal Web UI
// inside the current process: backed by an SQLite file, the development
// server of `suite dev` and of tests that must stop and restart Temporal
// with its state intact (one history shard, one process, not for
// production); backed by PostgreSQL (PostgresStore), a node of a Temporal
// cluster, as `suite temporal` runs it with TEMPORAL_DB_URL.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/business-suite/suite/worker/ports"
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

// startSQLite prepares the development server's state in the SQLite file
// opts.DBPath (in memory when ""): the schema when the file is new, the
// namespace with its search attributes. registered tells whether the
// namespace had them already (see Start).
func startSQLite(opts Options, host string, port int) (cfg *config.Config, registered bool, err error) {
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if opts.DBPath == "" {
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
		sqlCfg.DatabaseName = "suite-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	} else {
		// Every attribute but a few URI parameters becomes a PRAGMA, spelled
		// as given: "_journal_mode" would be an unknown pragma, which SQLite
		// ignores without a word (it did, until 2026-11: the file ran in
		// rollback-journal mode with an fsync per commit, 12 % of the
		// process's CPU while the intake drained, and the wait for it on
		// the one connection every write takes). WAL with synchronous=NORMAL
		// survives a killed process intact; an OS crash or power loss may
		// lose the last commits, which a development server can afford.
		sqlCfg.ConnectAttributes["mode"] = "rwc"
		sqlCfg.ConnectAttributes["journal_mode"] = "WAL"
		sqlCfg.ConnectAttributes["synchronous"] = "NORMAL"
		sqlCfg.ConnectAttributes["busy_timeout"] = "10000"
		sqlCfg.DatabaseName = opts.DBPath
		if err := os.MkdirAll(filepath.Dir(opts.DBPath), 0o755); err != nil {
			return nil, false, err
		}
	}
	// The SQLite plugin creates the schema of an in-memory database itself;
	// a database file gets it once, when the file is new.
	if _, statErr := os.Stat(opts.DBPath); opts.DBPath != "" && errors.Is(statErr, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return nil, false, fmt.Errorf("create temporal schema: %w", err)
		}
	}

	cfg, err = serverConfig(host, port, config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}, false)
	if err != nil {
		return nil, false, err
	}
	ns, err := sqlite.NewNamespaceConfig(cfg.ClusterMetadata.CurrentClusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return nil, false, err
	}
	ns.Detail.Config.Retention = durationpb.New(opts.Retention)
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, false, fmt.Errorf("create namespace %s: %w", opts.Namespace, err)
	}
	registered = len(opts.SearchAttributes) > 0
	if opts.DBPath != "" {
		aliases, err := prepareFile(opts.DBPath)
		if err != nil {
			return nil, false, err
		}
		registered = registered && hasSearchAttributes(aliases[opts.Namespace], opts.SearchAttributes)
	}
	return cfg, registered, nil
}

// startPostgres installs or upgrades the server's schema in the store's
// databases (PostgresStore.installSchema) and configures a node of the
// cluster they hold: ringpop membership, each service on a port of its
// own, the store's history shards.
func startPostgres(opts Options, host string, port int, logger tlog.Logger) (*config.Config, error) {
	persistence, visibility, err := opts.Postgres.sqlConfigs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := opts.Postgres.installSchema(ctx, logger); err != nil {
		return nil, err
	}
	return serverConfig(host, port, config.Persistence{
		DefaultStore:     "default",
		VisibilityStore:  "visibility",
		NumHistoryShards: opts.Postgres.HistoryShards,
		DataStores: map[string]config.DataStore{
			"default":    {SQL: persistence},
			"visibility": {SQL: visibility},
		},
	}, true)
}

func (s *Server) startUI() error {
	host, portText, err := net.SplitHostPort(s.opts.UIAddr)
	if err != nil {
		return fmt.Errorf("temporal UI address %q: %w", s.opts.UIAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("temporal UI port %q: %w", portText, err)
	}
	s.ui = uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: s.opts.FrontendAddr,
		Host:                host,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    s.opts.Namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		Distribution:        "business-suite",
	}))
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		_ = s.ui.Start()
	}()
	return waitListening(s.opts.UIAddr, 10*time.Second)
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

// serverConfig is the configuration of a server whose frontend listens on
// host:port, with its state in persistence. With ringpop, the server's
// services find the other nodes' through the database (a cluster node);
// without it, the caller gives them a static membership (staticHosts).
func serverConfig(host string, port int, persistence config.Persistence, ringpop bool) (*config.Config, error) {
	// The frontend listens where clients dial; the other services, their
	// membership listeners (ringpop only) and the server's own metrics
	// take free ports.
	free, err := ports.Free(host, 8)
	if err != nil {
		return nil, err
	}
	service := func(grpc, membership int) config.Service {
		rpc := config.RPC{GRPCPort: grpc, BindOnIP: host}
		if ringpop {
			rpc.MembershipPort = membership
		}
		return config.Service{RPC: rpc}
	}
	const clusterName = "active"
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
			Metrics: &metrics.Config{Prometheus: &metrics.PrometheusConfig{
				ListenAddress: net.JoinHostPort(host, strconv.Itoa(free[3])), HandlerPath: "/metrics",
			}},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
				Enabled: true, InitialFailoverVersion: 1, RPCAddress: net.JoinHostPort(host, strconv.Itoa(port)),
			}},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": service(port, free[4]),
			"history":  service(free[0], free[5]),
			"matching": service(free[1], free[6]),
			"worker":   service(free[2], free[7]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: net.JoinHostPort(host, strconv.Itoa(port))},
	}, nil
}

// staticHosts gives every service of this one-process server a fixed
// membership: itself. With the default (ringpop) membership the server
// records its hosts in the persistence store; after a restart on the same
// SQLite file the previous process's rows are still there, and matching
// refuses work ("Not enough hosts to serve the request") until they expire,
// about 50 s later. A single process never has other members, so static
// membership is exact, and a restart — graceful or after kill -9 — serves
// at once. (The Temporal CLI's dev server does the same, for the same
// reason: temporalio/cli#632.)
func staticHosts(host string, cfg *config.Config) map[primitives.ServiceName]static.Hosts {
	hosts := make(map[primitives.ServiceName]static.Hosts, len(cfg.Services))
	for name, svc := range cfg.Services {
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(svc.RPC.GRPCPort)))
	}
	return hosts
}

func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start listening within %s: %w", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
