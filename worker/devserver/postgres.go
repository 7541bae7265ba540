package devserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/api/adminservice/v1"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	tsql "go.temporal.io/server/tools/sql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PostgresStore keeps the server's state in PostgreSQL, which makes the
// server one node of a cluster: every node started on the same databases
// joins it (membership through the server's own ringpop, whose members
// find each other in the database), and the nodes share the history
// shards and task queues among them.
type PostgresStore struct {
	// URL is the persistence database, postgres://user:password@host:port/name
	// with libpq's query parameters (sslmode, …). Visibility is kept in a
	// database of the same name with "_visibility" appended. Both are
	// created when missing.
	URL string
	// HistoryShards is the number of history shards: the unit the nodes
	// share the workflows by. It is fixed when the cluster is first
	// created; a node started with another number uses the stored one (the
	// server logs a warning).
	HistoryShards int32
	// MaxConns bounds each of the node's connection pools to the
	// persistence database (each of its four services keeps its own: up to
	// 4×MaxConns connections, and 4×max(2, MaxConns/4) to visibility);
	// 0 means 10.
	MaxConns int
}

// The server's schemas, as its own tooling names them (temporal-sql-tool
// --schema-name).
const (
	persistenceSchema = "postgresql/v12/temporal"
	visibilitySchema  = "postgresql/v12/visibility"
)

// sqlConfigs is the store's persistence and visibility configuration.
func (p *PostgresStore) sqlConfigs() (persistence, visibility *config.SQL, err error) {
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, nil, fmt.Errorf("TEMPORAL_DB_URL must be postgres://user:password@host:port/database, not %q", redactedURL(p.URL))
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil, nil, errors.New("TEMPORAL_DB_URL names no database (postgres://…/temporal)")
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	attrs := map[string]string{}
	for k, vs := range u.Query() {
		attrs[k] = vs[len(vs)-1]
	}
	password, _ := u.User.Password()
	persistence = &config.SQL{PluginName: pgplugin.PluginName, DatabaseName: name, ConnectAddr: addr, ConnectProtocol: "tcp",
		User: u.User.Username(), Password: password, ConnectAttributes: attrs,
		MaxConns: cmp.Or(p.MaxConns, 10), MaxIdleConns: cmp.Or(p.MaxConns, 10), MaxConnLifetime: time.Hour}
	v := *persistence
	v.DatabaseName = name + "_visibility"
	v.MaxConns = max(2, persistence.MaxConns/4)
	v.MaxIdleConns = v.MaxConns
	return persistence, &v, nil
}

// installSchema creates the two databases when missing and installs or
// upgrades their schemas to this server's version with the server's own
// schema tooling (what temporal-sql-tool's setup-schema -v 0.0 and
// update-schema do). Nodes starting at once take turns on an advisory lock.
func (p *PostgresStore) installSchema(ctx context.Context, logger tlog.Logger) error {
	persistence, visibility, err := p.sqlConfigs()
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, p.URLOf("postgres"))
	if err != nil {
		return fmt.Errorf("connect to TEMPORAL_DB_URL's server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	const schemaLock = 0x7e3a0a1 // any number of the suite's own
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", schemaLock); err != nil {
		return fmt.Errorf("wait for another node's schema installation: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", schemaLock) //nolint:errcheck // released with the connection anyway
	for _, store := range []struct {
		cfg    *config.SQL
		schema string
	}{{persistence, persistenceSchema}, {visibility, visibilitySchema}} {
		if err := tsql.DoCreateDatabase(copySQL(store.cfg), "postgres", logger); err != nil {
			return fmt.Errorf("create database %s: %w", store.cfg.DatabaseName, err)
		}
		db, err := tsql.NewConnection(store.cfg, logger)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", store.cfg.DatabaseName, err)
		}
		err = schema.NewSetupSchemaTask(db, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run()
		if err == nil {
			err = schema.NewUpdateSchemaTask(db, &schema.UpdateConfig{DBName: store.cfg.DatabaseName, SchemaName: store.schema}, logger).Run()
		}
		db.Close()
		if err != nil {
			return fmt.Errorf("install the %s schema in %s: %w", store.schema, store.cfg.DatabaseName, err)
		}
	}
	return nil
}

// URLOf is the store's URL with another database.
func (p *PostgresStore) URLOf(database string) string {
	u, _ := url.Parse(p.URL)
	u.Path = "/" + database
	return u.String()
}

func copySQL(c *config.SQL) *config.SQL { v := *c; return &v }

// redactedURL hides a URL's password for an error message.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// registerNamespace creates the namespace through the node's own frontend
// once it serves; a namespace that exists (made by another node, or an
// earlier start) is left as it is.
func registerNamespace(ctx context.Context, frontend, namespace string, retention time.Duration) error {
	nc, err := client.NewNamespaceClient(client.Options{HostPort: frontend})
	if err != nil {
		return err
	}
	defer nc.Close()
	for {
		err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(retention)})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			return nil
		}
		select { // the frontend may still be joining the cluster
		case <-ctx.Done():
			return fmt.Errorf("register namespace %s: %w", namespace, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Members counts the cluster's hosts per service role (frontend, history,
// matching, worker) as the node whose frontend is at frontend sees them
// (the admin service's DescribeCluster).
func Members(ctx context.Context, frontend string) (map[string]int, error) {
	conn, err := grpc.NewClient(frontend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := adminservice.NewAdminServiceClient(conn).DescribeCluster(ctx, &adminservice.DescribeClusterRequest{})
	if err != nil {
		return nil, fmt.Errorf("describe the cluster at %s: %w", frontend, err)
	}
	members := map[string]int{}
	for _, ring := range resp.GetMembershipInfo().GetRings() {
		members[ring.GetRole()] = int(ring.GetMemberCount())
	}
	return members, nil
}
