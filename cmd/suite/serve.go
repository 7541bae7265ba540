package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/api"
	"github.com/business-suite/suite/api/console"
	"github.com/business-suite/suite/api/mailin"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/ready"
)

// apiServer is a listening HTTP API replica with its background loops.
type apiServer struct {
	addr string
	done chan error
}

// listen opens the API listener first, so that the identity service's own
// URL (the default IDENTITY_URL) is known before anything is built.
func listen(cfg Config) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on SUITE_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	return ln, "http://" + displayAddr(ln.Addr().String()), nil
}

// apiSide is what a process that serves the HTTP API (suite api, suite
// dev) sets up before it starts: its listener and public base URL, the
// identity wiring and the web-push keys.
type apiSide struct {
	ln    net.Listener
	self  string
	id    *identityWiring
	vapid activities.VAPID
	// mail is the inbound SMTP listener's socket (nil without
	// SUITE_SMTP_ADDR).
	mail *mailSocket
}

// mailSocket is the inbound SMTP listener's socket and STARTTLS
// configuration, opened before the process starts serving.
type mailSocket struct {
	ln  net.Listener
	tls *tls.Config
}

// listenMail opens SUITE_SMTP_ADDR, when set: a port taken, or a
// certificate that does not load, fails the start as the HTTP listener's
// would.
func listenMail(cfg Config) (*mailSocket, error) {
	if cfg.SMTPAddr == "" {
		return nil, nil
	}
	if cfg.MailDomain == "" {
		return nil, errors.New("SUITE_SMTP_ADDR is set but SUITE_MAIL_DOMAIN is not: the listener would take mail for no address")
	}
	m := &mailSocket{}
	if cfg.SMTPTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.SMTPTLSCert, cfg.SMTPTLSKey)
		if err != nil {
			return nil, fmt.Errorf("SUITE_SMTP_TLS_CERT/KEY: %w", err)
		}
		m.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.SMTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on SUITE_SMTP_ADDR %s: %w", cfg.SMTPAddr, err)
	}
	m.ln = ln
	return m, nil
}

// close closes what prepareAPI opened, after a failure.
func (a *apiSide) close() {
	_ = a.ln.Close()
	if a.mail != nil {
		_ = a.mail.ln.Close()
	}
}

// prepareAPI opens the listener and wires identity (dev: with a generated
// service token) and the web-push keys; on failure nothing stays open.
func prepareAPI(ctx context.Context, cfg Config, db *gorm.DB, dev bool, log *slog.Logger) (*apiSide, error) {
	ln, self, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	side := &apiSide{ln: ln, self: self}
	if side.mail, err = listenMail(cfg); err != nil {
		side.close()
		return nil, err
	}
	if side.id, err = wireIdentity(ctx, cfg, db, self, true, dev, log); err != nil {
		side.close()
		return nil, err
	}
	if side.vapid, err = loadVAPID(ctx, cfg, db); err != nil {
		side.close()
		return nil, err
	}
	return side, nil
}

// queueWait is how long a request waits for its turn while the API
// serves as many as it may at once (web.NewInFlight) before it is
// answered 503 with Retry-After.
const queueWait = 10 * time.Second

// startAPI serves on side's listeners until ctx ends, then shuts down
// gracefully (in-flight requests finish within the shutdown timeout).
func startAPI(ctx context.Context, cfg Config, side *apiSide, db *gorm.DB, tc client.Client, log *slog.Logger, reg *prometheus.Registry, checker *ready.Checker, dev bool) (*apiServer, *outbox.Starter) {
	ln, id, vapid := side.ln, side.id, side.vapid
	starter := outbox.New(db, tc, log.With("component", "outbox"), reg)
	starter.Concurrency = cfg.OutboxConcurrencyFor(dev)
	cores := runtime.GOMAXPROCS(0)
	inFlight := web.NewInFlight(cfg.MaxInFlightFor(dev, cores), queueWait)
	if perSecond := cfg.OutboxYieldRateFor(dev); perSecond > 0 {
		starter.YieldTo(func() bool { return inFlight.Load() > int64(cores) }, float64(perSecond))
	}
	app := api.New(api.Deps{
		DB: db, Temporal: tc, Starter: starter, Log: log, Metrics: reg,
		Version: version, Proxies: cfg.Proxies(), AccessLog: cfg.AccessLogFor(dev),
		Identity: id.service, IdentityClient: id.client, Auth: id.auth,
		VAPIDPublicKey:       vapid.PublicKey,
		TicketAutoCloseAfter: cfg.TicketAutoCloseAfter,
		Ready:                checker,
		InviteURL:            cfg.InviteURL,
		WebhookKeyRate:       cfg.WebhookKeyRate,
		WebhookEgress:        cfg.WebhookEgress(),
		Billing:              cfg.Billing(),
		TemporalNamespace:    cfg.TemporalNamespace,
		TemporalUIURL:        cfg.TemporalUIURL,
		InFlight:             inFlight,
		MailDomain:           cfg.MailDomain,
		MailOutbound:         cfg.SMTPURL != "",
		Console:              console.Options{IdleTimeout: cfg.ConsoleIdleTimeout, Lifetime: cfg.ConsoleSessionLifetime},
	})
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	runBackground(bgCtx, db, starter, log)
	var mail *mailin.Server
	if side.mail != nil {
		mail = serveMail(cfg, side.mail, db, starter, inFlight, log)
	}
	// stopMail closes the SMTP listener, its port free once it returns; a
	// message still being received was never answered 250, and its sender
	// sends it again.
	stopMail := func() {
		if mail != nil {
			_ = mail.Close()
		}
	}

	s := &apiServer{addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() {
		serveErr := make(chan error, 1)
		go func() { serveErr <- api.Serve(app, ln) }()
		select {
		case err := <-serveErr:
			stopMail()
			stopBackground()
			s.done <- err
		case <-ctx.Done():
			stopMail()
			// In-flight requests get the shutdown budget; connections still
			// open after it are dropped rather than waited for.
			err := app.ShutdownWithTimeout(cfg.ShutdownTimeout)
			stopBackground()
			select {
			case e := <-serveErr:
				if e != nil && !errors.Is(e, net.ErrClosed) {
					err = errors.Join(err, e)
				}
			case <-time.After(time.Second):
			}
			s.done <- err
		}
	}()
	return s, starter
}

// serveMail serves the e-mail channel's SMTP listener on m until Close.
func serveMail(cfg Config, m *mailSocket, db *gorm.DB, starter *outbox.Starter, inFlight *web.InFlight, log *slog.Logger) *mailin.Server {
	srv := mailin.Serve(m.ln, db, starter, mailin.Options{Domain: cfg.MailDomain, MaxBytes: cfg.MailMaxBytes, TLS: m.tls,
		ClientRate: cfg.SMTPClientRate, InFlight: inFlight, Log: log.With("component", "smtp-in")})
	log.Info("inbound SMTP listening", "addr", srv.Addr(), "domain", cfg.MailDomain, "starttls", m.tls != nil)
	return srv
}

// wait blocks until the server has stopped.
func (s *apiServer) wait() error { return <-s.done }

// runAPI is `suite api`: the production HTTP API replica.
func runAPI(ctx context.Context, cfg Config) error {
	log, reg, stop := startProcess(ctx, cfg, "api")
	defer stop()
	db, err := openDB(ctx, cfg, false)
	if err != nil {
		return err
	}
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	opts, err := temporalOptions(cfg, log, reg)
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
	side, err := prepareAPI(ctx, cfg, db, false, log)
	if err != nil {
		return err
	}
	checker := ready.New(ready.Options{DB: db, Temporal: tc, Namespace: cfg.TemporalNamespace})
	srv, _ := startAPI(ctx, cfg, side, db, tc, log, reg, checker, false)
	log.Info("listening", "addr", srv.addr, "identity", side.id.url)
	return srv.wait()
}
