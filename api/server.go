package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/ai"
	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/api/console"
	"github.com/business-suite/suite/api/crm"
	"github.com/business-suite/suite/api/helpdesk"
	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/transfers"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/identityclient"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/internal/ready"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/internal/telemetry"
)

// TransferTimeout is how long an import's upload may take to read, and an
// export's file to write.
const TransferTimeout = 10 * time.Minute

// BodyLimit is the largest request body accepted (DESIGN §4).
const BodyLimit = 1 << 20

// WriteBufferSize is the buffer a response is written through: a default
// 25-row list page (about 8 KiB of contacts) goes out in one write system
// call; a larger answer takes more.
const WriteBufferSize = 32 << 10

// ReadBufferSize bounds a request's line and headers together (Fiber's
// default); a request over it is answered 431 (web.HeaderLimitDetail).
const ReadBufferSize = 4 << 10

// Deps are the dependencies of the HTTP application.
type Deps struct {
	DB       *gorm.DB
	Temporal client.Client
	Starter  *outbox.Starter
	Log      *slog.Logger
	// Metrics is where HTTP metrics are registered and /metrics reads from.
	Metrics *prometheus.Registry
	Version string
	// Proxies may set X-Forwarded-For (load balancers); the client address
	// used for rate limits and logs is the connection's otherwise
	// (web.ClientIP).
	Proxies web.Proxies

	// Identity is the identity service served by this process (nil when
	// another process serves it).
	Identity *identity.Service
	// IdentityClient reaches the identity service (this process or not).
	IdentityClient *identityclient.Client
	// Auth authenticates every interface.
	Auth *auth.Authenticator
	// VAPIDPublicKey is the web-push application server key (base64url).
	VAPIDPublicKey string
	// TicketAutoCloseAfter closes solved tickets after this long (0: 4 days).
	TicketAutoCloseAfter time.Duration
	// WebhookKeyRate limits the lead intake per crm_ key, a minute (0: the
	// default, crm.DefaultWebhookKeyRate).
	WebhookKeyRate int
	// TemporalNamespace is the namespace workflows run in ("" = default).
	TemporalNamespace string
	// Ready answers /readyz; nil checks the database and the Temporal
	// frontend for TemporalNamespace.
	Ready *ready.Checker
	// PushEgress decides which web-push endpoints may be registered (public
	// https only; the allow-list is for tests).
	PushEgress netguard.Policy
	// WebhookEgress decides which outbound webhook URLs may be registered
	// (public https, and the hosts of SUITE_WEBHOOK_ALLOW_HOSTS).
	WebhookEgress netguard.Policy
	// InviteURL is the front end's invitation accept-link template
	// ({token}); "" shows the token alone.
	InviteURL string
	// Billing is the Stripe configuration; without a secret key every
	// payments and billing-operator route answers 503
	// billing_not_configured.
	Billing stripeconfig.Config
	// TemporalUIURL is the Temporal Web UI's address; AI jobs link to their
	// workflow there ("" leaves the link out).
	TemporalUIURL string
	// AccessLog picks the requests the access log writes (the zero value:
	// errors and slow requests only).
	AccessLog web.AccessLog
	// InFlight, when set, counts the requests being served (see
	// outbox.Starter.YieldTo).
	InFlight *web.InFlight
	// Requests tunes the request transactions and Idempotency-Keys (tests
	// set a clock); the zero value is production's.
	Requests web.RequestOptions
	// MailDomain is the domain of the workspaces' e-mail addresses (""
	// turns the e-mail channel off); MailOutbound tells whether the workers
	// send mail, and so whether agents' public replies are e-mailed.
	MailDomain   string
	MailOutbound bool
	// Console tunes billing staff's console (/ops/), which is served
	// wherever this process serves the identity service.
	Console console.Options
}

// Serve serves app on ln until app shuts down. Connections close
// lingeringly (web.Linger), so that an answer sent before the server read
// the whole request — 431, 413 — reaches the client.
func Serve(app *fiber.App, ln net.Listener) error {
	return app.Listener(web.Linger(ln))
}

// New builds the application. It does not listen; call Serve or app.Test.
func New(d Deps) *fiber.App {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = prometheus.NewRegistry()
	}
	app := fiber.New(fiber.Config{
		AppName:   "business-suite",
		BodyLimit: BodyLimit,
		// A body over BodyLimit is streamed rather than refused, and no
		// multipart form is read before the handler: the import routes
		// read their file a part at a time (api/transfers), and every
		// other route refuses such a body (web.LimitBody).
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		ErrorHandler:                 web.ErrorHandler(d.Log),
		DisableStartupMessage:        true,
		ReadTimeout:                  30 * time.Second,
		WriteTimeout:                 30 * time.Second,
		IdleTimeout:                  120 * time.Second,
		// Fiber believes no forwarding header (c.IP() is the peer, and
		// X-Forwarded-Proto/Host are ignored): the client address behind a
		// proxy is web.ClientIP's, which reads X-Forwarded-For from the right.
		EnableTrustedProxyCheck: true,
		// go-json writes the same bytes as encoding/json (HTML escaping,
		// sorted map keys, time.Time as RFC 3339) in a quarter of the CPU:
		// a 25-row list page took 52 µs to encode, 13 µs with it — a fifth
		// of a GET's whole CPU (docs/decisions.md, "Performance").
		JSONEncoder: gojson.Marshal,
		// Fiber's 4 KiB default split a 25-row page into two writes.
		WriteBufferSize: WriteBufferSize,
		ReadBufferSize:  ReadBufferSize,
	})

	// An upload's body and an export's file take longer than a request's
	// 30 s on a slow link: those routes get 10 minutes to read the body,
	// and to write the answer (fasthttp sets each deadline once).
	app.Server().HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		path, _, _ := strings.Cut(string(h.RequestURI()), "?")
		switch {
		case slices.Contains(transfers.UploadPaths, string(h.Method())+" "+path):
			return fasthttp.RequestConfig{ReadTimeout: TransferTimeout}
		case string(h.Method()) == fiber.MethodGet && transfers.IsDownload(path):
			return fasthttp.RequestConfig{WriteTimeout: TransferTimeout}
		}
		return fasthttp.RequestConfig{}
	}
	// First: a streamed body left unread by whatever answered (the
	// in-flight limit's 503, authentication, a refused upload) closes the
	// connection after the answer.
	app.Use(web.CloseUnreadBody)
	if d.InFlight != nil {
		app.Use(d.InFlight.Middleware())
	}
	app.Use(web.RequestIDMiddleware())
	app.Use(web.LimitBody(BodyLimit, transfers.UploadPaths...))
	if d.Proxies.Any() {
		app.Use(d.Proxies.Middleware())
	}
	app.Use(telemetry.Middleware(web.RequestID))
	app.Use(web.Observe(d.Log, web.NewMetrics(d.Metrics), d.AccessLog))
	// A panic is answered 500 and logged with its stack and request id:
	// the message alone does not say where it happened.
	app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		d.Log.ErrorContext(c.UserContext(), "panic serving a request", "method", strings.Clone(c.Method()), "path", strings.Clone(c.Path()),
			"requestId", web.RequestID(c), "panic", fmt.Sprint(e), "stack", string(debug.Stack()))
	}}))

	app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok", "version": d.Version})
	})
	if d.Ready == nil {
		d.Ready = ready.New(ready.Options{DB: d.DB, Temporal: d.Temporal, Namespace: d.TemporalNamespace})
	}
	app.Get("/readyz", readyz(d))
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(d.Metrics, promhttp.HandlerOpts{})))
	mountReference(app)

	// Every POST, PUT, PATCH and DELETE runs in one request transaction
	// (web.Tx), and a POST with an Idempotency-Key is answered once. It runs
	// after authentication: a request refused for its credential stores
	// nothing.
	requests := web.Transactional(d.DB, d.Requests)
	if d.Identity != nil {
		identity.Mount(app, d.Identity, requests)
	}
	crmDeps := crm.Deps{DB: d.DB, Auth: d.Auth, Starter: d.Starter, Identity: d.IdentityClient, Log: d.Log, InviteURL: d.InviteURL,
		WebhookKeyRate: d.WebhookKeyRate, WebhookEgress: d.WebhookEgress, TemporalUI: d.TemporalUIURL, Namespace: d.TemporalNamespace}
	// The public lead intake is registered before the /crm group, so the
	// group's Authorization check never runs for it.
	app.Post("/crm/leads/webhook", crm.Webhook(crmDeps, requests)...)
	crm.Routes(app.Group("/crm", d.Auth.CRM(), requests), crmDeps)
	hdDeps := helpdesk.Deps{DB: d.DB, Auth: d.Auth, Starter: d.Starter, Log: d.Log, VAPIDPublicKey: d.VAPIDPublicKey,
		AutoCloseAfter: d.TicketAutoCloseAfter, PushEgress: d.PushEgress, MailDomain: d.MailDomain, MailOutbound: d.MailOutbound}
	// Public help-center routes are registered before the group's
	// credential check.
	helpdesk.PublicRoutes(app.Group("/helpdesk"), hdDeps)
	bill := &billing.Service{DB: d.DB, Starter: d.Starter, Config: d.Billing}
	// Stripe's webhook is authenticated by its signature, not by a suite
	// credential: registered before the group's credential check.
	app.Post("/helpdesk/payments/webhook", requests, billing.Webhook(bill))
	hd := app.Group("/helpdesk", d.Auth.Helpdesk(), requests)
	helpdesk.Routes(hd, hdDeps)
	billing.PaymentRoutes(hd, bill)
	// The operator API: billing staff, across organizations.
	billing.OpsRoutes(app.Group("/ops/v1", d.Auth.Staff(), requests), bill)
	// Their console in the browser: staff sign in with the identity service.
	if d.Identity != nil {
		console.Mount(app, console.Deps{DB: d.DB, Identity: d.Identity, Billing: bill, Temporal: d.Temporal, Namespace: d.TemporalNamespace,
			TemporalUIURL: d.TemporalUIURL, Options: d.Console, Requests: requests, Log: d.Log})
	}
	ai.Routes(app.Group("/v1/ai", d.Auth.AI(), requests), ai.Deps{DB: d.DB, Starter: d.Starter, Temporal: d.Temporal, Log: d.Log,
		TemporalUI: d.TemporalUIURL, Namespace: d.TemporalNamespace})
	return app
}

// readyz reports whether work can flow through this replica (see package
// internal/ready; the answer is cached for a few seconds). The outbox backlog
// is shown but does not make it unready: the relay drains it on its own.
func readyz(d Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		report := d.Ready.Check(c.UserContext())
		body := fiber.Map{"status": "ready", "checks": report.Checks}
		if d.Starter != nil {
			ctx, cancel := context.WithTimeout(c.UserContext(), time.Second)
			defer cancel()
			if n, err := d.Starter.Pending(ctx); err == nil {
				body["pendingWorkflowStarts"] = n
			}
		}
		if !report.Ready {
			body["status"] = "unavailable"
			c.Set(fiber.HeaderRetryAfter, "5")
			return c.Status(fiber.StatusServiceUnavailable).JSON(body)
		}
		return c.JSON(body)
	}
}
