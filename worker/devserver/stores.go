package devserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Where the server keeps its state: the development server's SQLite file,
// or the PostgreSQL databases of a cluster node.

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
