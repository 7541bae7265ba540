// Command suite runs Business Suite. One binary, several roles:
//
//	suite dev        everything in one process, zero set-up (embedded Temporal + UI, SQLite)
//	suite api        the HTTP API (production)
//	suite worker     the Temporal worker (production; scale horizontally)
//	suite migrate    apply database migrations and exit
//	suite temporal   the embedded Temporal server on its own (development and tests, not production)
//	suite admin      operator tasks (set-plan, create-key, grant-staff, billing list/retry)
//	suite version    print the version
//
// All configuration comes from environment variables (see README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// The dashboards bucket days in each workspace's time zone: embed the
	// zone database so a minimal container image counts correctly too.
	_ "time/tzdata"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

var stdout io.Writer = os.Stdout

const usage = `Business Suite — CRM, Helpdesk and Generative AI on Temporal.

Usage: suite <command> [arguments]

Commands:
  dev                  run everything in one process (embedded Temporal, UI, SQLite)
  api                  run the HTTP API (production)
  worker               run the Temporal worker (production)
  migrate              apply database migrations and exit
  temporal             run the embedded Temporal server (and UI) on its own; for
                       development and tests (make e2e), not for production
  admin <task> ...     operator tasks; run "suite admin" for the list
  healthcheck <url>    exit 0 when url answers 200 (container health checks)
  webhook-receiver     print the outbound webhooks it receives, verified with
                       -secret (trying webhooks out on this machine)
  version              print the version

Configuration is read from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(os.Stderr, string(ue))
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "suite:", err)
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError(usage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "suite", version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	case "healthcheck":
		return healthcheck(ctx, rest)
	case "webhook-receiver":
		return runWebhookReceiver(ctx, rest)
	}
	role, ok := roles[cmd]
	if !ok {
		return usageError("unknown command " + fmt.Sprintf("%q", cmd) + "\n\n" + usage)
	}
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	return role(ctx, cfg, rest)
}

// roles are the commands that run on the configuration; the deploy files
// start the binary with one of them (checked by TestDeployFilesMatchTheBinary).
var roles = map[string]func(ctx context.Context, cfg Config, args []string) error{
	"dev":      func(ctx context.Context, cfg Config, _ []string) error { return runDev(ctx, cfg) },
	"api":      func(ctx context.Context, cfg Config, _ []string) error { return runAPI(ctx, cfg) },
	"worker":   func(ctx context.Context, cfg Config, _ []string) error { return runWorker(ctx, cfg) },
	"migrate":  func(ctx context.Context, cfg Config, _ []string) error { return runMigrate(ctx, cfg) },
	"temporal": func(ctx context.Context, cfg Config, _ []string) error { return runTemporal(ctx, cfg) },
	"admin":    runAdmin,
}
