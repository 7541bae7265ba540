package devserver

import (
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives"

	"github.com/business-suite/suite/worker/ports"
)

// The Temporal server's configuration: its services' ports, its cluster
// metadata, and its membership.

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
