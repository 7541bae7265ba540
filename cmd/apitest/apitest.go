// Package apitest is the harness for API tests: a real Temporal server
// in-process (temporaltest), a fresh migrated database per environment
// (SQLite always, PostgreSQL when available), the real Fiber app with all its
// middleware, and a worker running the suite's workflows. Every request and
// response made through Env.Do is validated against docs/openapi.yaml, so a
// handler that drifts from the specification fails its test.
//
// It lives under cmd/ because it composes the whole suite, as the
// binaries do: it imports the API and the worker, which the API's own
// packages must not (internal/layers); only test files import it.
package apitest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/emersion/go-smtp"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/api"
	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/console"
	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/api/mailin"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/database/commithook"
	"github.com/business-suite/suite/internal/identityclient"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/worker"
	"github.com/business-suite/suite/worker/devserver"
	"github.com/business-suite/suite/worker/mailsink"
	"github.com/business-suite/suite/worker/ports"
)

// Env is one complete, isolated suite: database, Temporal, worker, app.
type Env struct {
	T        *testing.T
	Dialect  database.Dialect
	DB       *gorm.DB
	Temporal client.Client
	Worker   sdkworker.Worker
	Starter  *outbox.Starter
	App      *fiber.App
	Log      *slog.Logger
	// BaseURL is where the app listens (identity and JWKS calls go there).
	BaseURL  string
	Identity *identity.Service
	// Mail is the SMTP sink the worker sends e-mail to (invitations,
	// replies).
	Mail *mailsink.Sink
	// SMTPAddr is where the e-mail channel's SMTP listener takes mail for
	// the workspaces' addresses at MailDomain.
	SMTPAddr string
	// Keyed makes Do send a fresh Idempotency-Key with every POST that has
	// none (Each runs every test both ways).
	Keyed bool

	workerDeps   worker.Deps
	temporalAddr string
	temporalLog  io.Writer
	namespace    string
	register     []func(sdkworker.Registry)
}

// ServiceToken is the identity service token of every test Env.
const ServiceToken = "test-identity-service-token"

// MailDomain is the domain of the workspaces' e-mail addresses in every
// test Env.
const MailDomain = "mail.test"

// Option adjusts an Env before it starts.
type Option func(*options)

type options struct {
	register       []func(sdkworker.Registry)
	identityURL    string
	temporalDown   bool
	webhookKeyRate int
	autoClose      time.Duration
	aiProvider     ai.Provider
	billing        stripeconfig.Config
	pushService    bool
	// webhookReceivers: WithWebhookReceivers; webhookEgressPolicy:
	// WithWebhookEgress.
	webhookReceivers    bool
	webhookEgressPolicy *netguard.Policy
	mailReject          func(rcpt string) *smtp.SMTPError
	temporalLog         io.Writer
	commitHook          func(tx *gorm.DB) error
	console             console.Options
	temporalUI          string
}

// WithConsole tunes the staff console's sessions (a test moves its clock).
func WithConsole(opts console.Options) Option {
	return func(o *options) { o.console = opts }
}

// WithTemporalUI gives the app a Temporal Web UI address to link to.
func WithTemporalUI(url string) Option {
	return func(o *options) { o.temporalUI = url }
}

// WithCommitHook runs fn last in every transaction begun on the app's
// database handle (a request's, web.Tx, and one begun on OneStatementTx's
// handle), just before its COMMIT (commithook.Wrap; the app's FindAll then
// reads through GORM's Find): a test makes a request's last statement fail
// with it, or counts the transactions. tx.Statement.Context is the
// request's: telemetry.RequestID names the request (its X-Request-Id). The
// worker, the outbox relay and the test's own e.DB are not hooked.
func WithCommitHook(fn func(tx *gorm.DB) error) Option {
	return func(o *options) { o.commitHook = fn }
}

// WithTemporalLog writes the log lines of the Env's Temporal clients and
// worker (workflow.GetLogger, activity.GetLogger) to w, as JSON.
func WithTemporalLog(w io.Writer) Option {
	return func(o *options) { o.temporalLog = w }
}

// InviteURL is the accept-link template of every test Env.
const InviteURL = "https://app.example.com/accept-invitation?token={token}"

// WithMailRejecting makes the Env's SMTP sink refuse recipients as reject
// says (SMTP 4xx or 5xx answers).
func WithMailRejecting(reject func(rcpt string) *smtp.SMTPError) Option {
	return func(o *options) { o.mailReject = reject }
}

// WithAIProvider makes AI jobs call p (default: the local provider), e.g.
// the OpenAI-compatible provider against a chat-completions test server.
func WithAIProvider(p ai.Provider) Option {
	return func(o *options) { o.aiProvider = p }
}

// WithBilling gives the worker a Stripe configuration (stripetest's, which
// points at stripe-mock); without it billing is not configured.
func WithBilling(cfg stripeconfig.Config) Option {
	return func(o *options) { o.billing = cfg }
}

// WithWebhookKeyRate sets the lead intake's per-key limit (a minute).
func WithWebhookKeyRate(n int) Option {
	return func(o *options) { o.webhookKeyRate = n }
}

// WithTicketAutoClose shortens the solved → closed timer (default 4 days).
func WithTicketAutoClose(d time.Duration) Option {
	return func(o *options) { o.autoClose = d }
}

// WithTemporalDown starts the Env with Temporal unreachable: the API and
// its outbox relay use a client for an address where nothing listens yet,
// and no worker runs. Env.StartTemporal brings Temporal (and the worker) up.
func WithTemporalDown() Option {
	return func(o *options) { o.temporalDown = true }
}

// WithIdentityURL points the identity client (used by handlers and
// activities) at url instead of this Env's own identity service — e.g. at
// an address where nothing answers, to test behaviour while it is down.
func WithIdentityURL(url string) Option {
	return func(o *options) { o.identityURL = url }
}

// WithRegistered registers extra workflows or activities on the worker
// (test-only workflows).
func WithRegistered(fn func(r sdkworker.Registry)) Option {
	return func(o *options) { o.register = append(o.register, fn) }
}

// Each runs fn once per available dialect, and on each as a client that
// sends no Idempotency-Key ("plain") and as one that sends a fresh key with
// every POST ("keyed"), each with its own Env: every mutating handler is
// tested both in a transaction of its own and with its answer stored under
// a key, on both dialects.
func Each(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	t.Helper()
	for _, d := range dbtest.Dialects(t) {
		for _, keyed := range []bool{false, true} {
			name := string(d) + "/plain"
			if keyed {
				name = string(d) + "/keyed"
			}
			t.Run(name, func(t *testing.T) {
				e := New(t, d, opts...)
				e.Keyed = keyed
				fn(t, e)
			})
		}
	}
}

// EachDialect runs fn once per available dialect as a plain client (no
// Idempotency-Key), each with its own Env: for the tests of what work
// does once started — a workflow's batches, a fault's recovery — whose
// requests Each's keyed run would only repeat (every route's answer
// stored under a key is tested by the tests that use Each and by
// api's TestEveryMutatingRouteIsOneTransaction). Half the Envs, half the time.
func EachDialect(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	t.Helper()
	for _, d := range dbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			fn(t, New(t, d, opts...))
		})
	}
}

// testServices are the Temporal services an Env's server runs: all but
// the internal "worker" service, whose system workflows (schedules, batch
// operations, namespace deletion, archival, many-children parent-close
// policies) no suite test uses. Its own pollers keep long polls open on
// the frontend, and the frontend's graceful stop waits a fixed second for
// them: measured here, a server started in 0.35 s and stopped in 1.05 s with
// it, in 0.15 s and 4 ms without, i.e. 1.25 s less per Env and four Envs per
// apitest.Each test (docs/decisions.md, "CI time"). `suite dev` and `suite
// temporal` run every service.
var testServices = []string{"frontend", "history", "matching"}

// New starts an Env on dialect d; everything stops when the test ends.
func New(t *testing.T, d database.Dialect, opts ...Option) *Env {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	e := &Env{T: t, Dialect: d, DB: dbtest.Open(t, d), Log: log, temporalLog: o.temporalLog}

	// The app serves on a real loopback listener: the JWKS that verifies
	// tokens and the identity service's HTTP API are reached over HTTP,
	// exactly as in production.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.BaseURL = "http://" + ln.Addr().String()
	issuer := e.BaseURL + "/identity"
	bg, stopBG := context.WithCancel(context.Background())
	t.Cleanup(stopBG)
	e.Identity, err = identity.New(bg, e.DB, identity.Config{
		Issuer: issuer, ServiceToken: ServiceToken,
		// Cheap hashing keeps tests fast; production uses the defaults.
		PasswordParams: &argon2id.Params{Memory: 8 * 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32},
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	clientURL := issuer
	if o.identityURL != "" {
		clientURL = o.identityURL
	}
	idClient := identityclient.New(clientURL, ServiceToken, 2*time.Second)
	verifier, err := auth.NewJWKSVerifier(bg, issuer+"/.well-known/jwks.json", issuer, identity.DefaultAudience)
	if err != nil {
		t.Fatal(err)
	}

	// Web push signs with the key pair stored in the database, as
	// production does when none is configured.
	vapidKey, err := models.EnsureVAPIDKey(bg, e.DB)
	if err != nil {
		t.Fatal(err)
	}
	// E-mail goes over real SMTP to a sink that keeps it for the test.
	if e.Mail, err = mailsink.Start(mailsink.Options{Addr: "127.0.0.1:0", Reject: o.mailReject}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Mail.Close() })
	e.workerDeps, e.register = worker.Deps{DB: e.DB, Identity: idClient, VAPID: activities.VAPID{
		PublicKey: vapidKey.PublicKey, PrivateKey: vapidKey.PrivateKey, Subject: "mailto:push@example.com"},
		AI: o.aiProvider, Billing: o.billing,
		PushEgress: o.pushEgress(), Mail: activities.SMTP{URL: e.Mail.URL(), From: "Business Suite <no-reply@suite.example>"},
		PublicURL: e.BaseURL, InviteURL: InviteURL, MailDomain: MailDomain, WebhookEgress: o.webhookEgress()}, o.register
	if o.temporalDown {
		// Temporal starts on this address later (StartTemporal); see
		// ports.Addr for why it is not a port-0 port.
		addr, err := ports.Addr("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		e.temporalAddr = addr
		if e.Temporal, err = client.NewLazyClient(clientOptions(t, e.temporalAddr, "default", o.temporalLog)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Temporal.Close)
	} else {
		// One Temporal server per Env: two Envs never share a task queue, so
		// a workflow of one test can never run against another test's database.
		ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(clientOptions(t, "", "", o.temporalLog)),
			temporaltest.WithBaseServerOptions(temporal.ForServices(testServices)))
		waitFrontend(t, ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
		e.Temporal = ts.GetDefaultClient()
		e.namespace = ts.GetDefaultNamespace()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := worker.EnsureSearchAttributes(ctx, e.Temporal, ts.GetDefaultNamespace()); err != nil {
			t.Fatalf("search attributes: %v", err)
		}
		e.startWorker(e.Temporal)
		e.saveHistoriesOnCleanup()
	}

	e.Starter = outbox.New(e.DB, e.Temporal, log, nil)
	e.Starter.PollInterval = 50 * time.Millisecond
	relayCtx, stopRelay := context.WithCancel(context.Background())
	go e.Starter.Run(relayCtx)
	t.Cleanup(stopRelay)

	appDB := e.DB
	if o.commitHook != nil {
		appDB = commithook.Wrap(e.DB, o.commitHook)
	}
	e.App = api.New(api.Deps{DB: appDB, Temporal: e.Temporal, Starter: e.Starter, Log: log,
		Metrics: prometheus.NewRegistry(), Version: "test", TemporalNamespace: e.namespace,
		Identity: e.Identity, IdentityClient: idClient, Auth: auth.New(e.DB, verifier), TicketAutoCloseAfter: o.autoClose,
		VAPIDPublicKey: vapidKey.PublicKey, PushEgress: o.pushEgress(), InviteURL: InviteURL,
		WebhookKeyRate: o.webhookKeyRate, WebhookEgress: o.webhookEgress(), Billing: o.billing,
		MailDomain: MailDomain, MailOutbound: true, Console: o.console, TemporalUIURL: o.temporalUI})
	smtpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	smtpIn := mailin.Serve(smtpLn, e.DB, e.Starter, mailin.Options{Domain: MailDomain, Log: log})
	t.Cleanup(func() { _ = smtpIn.Close() })
	e.SMTPAddr = smtpIn.Addr()
	go func() { _ = e.App.Listener(ln) }()
	t.Cleanup(func() { _ = e.App.ShutdownWithTimeout(time.Second) })
	return e
}

// waitFrontend waits until the Temporal frontend at hostPort answers its
// health check. On a loaded machine (a CI run beside other work) it can
// report "not healthy yet" for a moment after the server has started, and
// temporaltest's client, which checks once, would fail the test.
func waitFrontend(t *testing.T, hostPort, namespace string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Temporal frontend at %s did not become healthy: %v", hostPort, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clientOptions are the Temporal client options of an Env's clients: as in
// production, they carry request traces into workflows (see package
// telemetry; no spans are recorded unless a test installs a provider).
// Empty hostPort and namespace are temporaltest's own.
func clientOptions(t *testing.T, hostPort, namespace string, logTo io.Writer) client.Options {
	tracing, err := telemetry.Interceptor()
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{HostPort: hostPort, Namespace: namespace,
		Interceptors:       []interceptor.ClientInterceptor{tracing, telemetry.LogInterceptor()},
		ContextPropagators: []workflow.ContextPropagator{telemetry.RequestIDPropagator()}}
	if logTo != nil {
		opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(logTo, nil)))
	}
	return opts
}

func (e *Env) startWorker(c client.Client) {
	e.Worker = worker.New(c, e.workerDeps, sdkworker.Options{})
	for _, fn := range e.register {
		fn(e.Worker)
	}
	if err := e.Worker.Start(); err != nil {
		e.T.Fatalf("start worker: %v", err)
	}
	e.T.Cleanup(e.Worker.Stop)
}

// StartTemporal brings up the Temporal server of an Env created
// WithTemporalDown, at the address its clients were already using, and
// starts the worker. Starts recorded meanwhile are dispatched by the relay.
func (e *Env) StartTemporal() {
	e.T.Helper()
	if e.temporalAddr == "" {
		e.T.Fatal("StartTemporal needs an Env created WithTemporalDown")
	}
	srv, err := devserver.Start(devserver.Options{FrontendAddr: e.temporalAddr, SearchAttributes: map[string]enumspb.IndexedValueType{
		"OrgId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "Kind": enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { _ = srv.Stop(3 * time.Second) })
	c, err := client.DialContext(e.T.Context(), clientOptions(e.T, e.temporalAddr, "default", e.temporalLog))
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(c.Close)
	e.startWorker(c)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
