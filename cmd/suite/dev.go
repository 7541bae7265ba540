package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/ready"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/worker/mailsink"
	"github.com/business-suite/suite/workflows/names"
)

// runDev is `suite dev`: the whole suite in one process with nothing to
// install. Temporal (server and Web UI) runs embedded on an SQLite file in
// SUITE_DATA_DIR, next to the suite's own SQLite database, so data and
// workflow history survive a restart.
func runDev(ctx context.Context, cfg Config) error {
	started := time.Now()
	log, reg, stop := startProcess(ctx, cfg, "dev")
	defer stop()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create SUITE_DATA_DIR: %w", err)
	}

	db, err := openDB(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	if _, err := models.Migrate(ctx, db); err != nil {
		return err
	}

	ts, err := startEmbeddedTemporal(cfg)
	if err != nil {
		return err
	}
	log.Debug("embedded temporal started", "after", time.Since(started).String())
	defer func() {
		if err := ts.Stop(3 * time.Second); err != nil {
			log.Warn("embedded temporal", "error", err)
		}
	}()

	tc, err := dialTemporal(ctx, cfg, log, reg, "the embedded Temporal server")
	if err != nil {
		return err
	}
	defer tc.Close()
	log.Debug("temporal client connected", "after", time.Since(started).String())

	cfg.applyDevMail()
	side, err := prepareAPI(ctx, cfg, db, true, log)
	if err != nil {
		return err
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = side.self
	}
	var sink *mailsink.Sink
	if cfg.SMTPURL == "" {
		// No mail server: a local sink keeps every message under
		// SUITE_DATA_DIR/mail, so invitations can be read and accepted.
		sink, err = mailsink.Start(mailsink.Options{Addr: cfg.DevSMTPAddr, Dir: filepath.Join(cfg.DataDir, "mail"), Log: log.With("component", "mail-sink")})
		if err != nil {
			sink = nil
			log.Warn("the dev mail sink did not start; invitations are not e-mailed (their token is shown to the inviter)", "error", err)
		} else {
			defer func() { _ = sink.Close() }()
			cfg.SMTPURL = sink.URL()
		}
	}
	// The embedded server registered the search attributes with the namespace.
	identity := ready.Identity("dev")
	w, err := startWorker(cfg, db, tc, side.id, side.vapid, identity, reg)
	if err != nil {
		side.close()
		return err
	}
	defer w.Stop()

	checker := ready.New(ready.Options{DB: db, Temporal: tc, Namespace: cfg.TemporalNamespace, WorkerIdentity: identity, TaskQueue: names.TaskQueue})
	if cfg.TemporalUIURL == "" {
		cfg.TemporalUIURL = ts.UIURL() // AI jobs link to their workflow in the embedded UI
	}
	srv, _ := startAPI(ctx, cfg, side, db, tc, log, reg, checker, true)
	if err := awaitReady(ctx, checker); err != nil {
		return srv.wait() // stopped (Ctrl-C) before it was ready
	}
	var demo *demoCredentials
	if cfg.DemoEnabled(true) {
		if demo, err = seedDemo(ctx, cfg, db, side.self); err != nil {
			log.Error("seeding the demo organization failed", "error", err)
		}
	}
	printDevBanner(cfg, srv.addr, ts.UIURL(), sink, time.Since(started))
	if demo != nil {
		printDemo(demo, side.self)
	}
	err = srv.wait()
	log.Info("stopped")
	return err
}

// awaitReady waits until work can flow (see package internal/ready) before
// the banner claims the suite is running. If that takes more than a moment
// it says what it is waiting for, and says it again when the reason changes.
func awaitReady(ctx context.Context, checker *ready.Checker) error {
	const quiet = 2 * time.Second
	started := time.Now()
	said := ""
	for {
		report := checker.Fresh(ctx)
		if report.Ready {
			if said != "" {
				fmt.Fprintf(stdout, "Ready after %s.\n", time.Since(started).Round(100*time.Millisecond))
			}
			return nil
		}
		if reason := report.Failing(); time.Since(started) > quiet && reason != said {
			fmt.Fprintf(stdout, "Not ready yet (%s); waiting…\n", reason)
			said = reason
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func printDevBanner(cfg Config, apiAddr, uiURL string, sink *mailsink.Sink, took time.Duration) {
	base := "http://" + displayAddr(apiAddr)
	fmt.Fprintf(stdout, "\nBusiness Suite is running (started in %s). Ctrl-C stops it; data stays in %s.\n\n", took.Round(time.Millisecond), cfg.DataDir)
	fmt.Fprintf(stdout, "  API            %s   (CRM %s/crm, Helpdesk %s/helpdesk, AI %s/v1/ai)\n", base, base, base, base)
	fmt.Fprintf(stdout, "  Identity       %s/identity\n", base)
	fmt.Fprintf(stdout, "  API reference  %s/docs   (OpenAPI: %s/openapi.json, %s/openapi.yaml)\n", base, base, base)
	fmt.Fprintf(stdout, "  Health         %s/healthz   %s/readyz   %s/metrics\n", base, base, base)
	fmt.Fprintf(stdout, "  Staff console  %s/ops/   (billing staff: suite admin grant-staff <email>)\n", base)
	if uiURL != "" {
		fmt.Fprintf(stdout, "  Temporal UI    %s   (namespace %s)\n", uiURL, cfg.TemporalNamespace)
	}
	fmt.Fprintf(stdout, "  Temporal gRPC  %s   (server log: %s)\n", cfg.TemporalAddress, filepath.Join(cfg.DataDir, temporalLogFile))
	fmt.Fprintf(stdout, "  Database       %s\n", redactURL(cfg.DatabaseDSN()))
	if sink != nil {
		fmt.Fprintf(stdout, "  Mail           not sent: kept in %s (dev mail sink on %s; set SMTP_URL to send)\n", filepath.Join(cfg.DataDir, "mail"), sink.Addr())
	}
	if cfg.SMTPAddr != "" && cfg.MailDomain != "" {
		fmt.Fprintf(stdout, "  Mail in        smtp://%s for ws-<workspace>@%s   (a workspace's address: GET %s/helpdesk/channels/email)\n",
			cfg.SMTPAddr, cfg.MailDomain, base)
	}
	fmt.Fprintln(stdout)
}

// displayAddr turns a listen address such as [::]:8080 into 127.0.0.1:8080.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
