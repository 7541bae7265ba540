// Package console is billing staff's console in the browser, under /ops/:
// the failed subscription changes across organizations, one change's
// timeline with a Re-run, an organization's plan, seats and workflows,
// and the audit log of every staff action.
//
// It is server-rendered (html/template, plain forms, no script) from the
// API process, beside the operator API (/ops/v1) it mirrors. Staff sign in
// with their identity-service account; the session is a cookie (Secure,
// HttpOnly, SameSite=Strict, limited to /ops) naming a row of
// staff_sessions, which ends after IdleTimeout without a request, after
// Lifetime in any case, at sign-out, and at once when the staff grant is
// revoked. Every form carries the session's CSRF token; sign-in, which
// has no session yet, a token of its own in a cookie (double submit).
package console

import (
	"cmp"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Defaults of Deps.
const (
	DefaultIdleTimeout = 15 * time.Minute
	DefaultLifetime    = 8 * time.Hour
)

// Options tune the console's sessions.
type Options struct {
	// IdleTimeout ends a session after this long without a request (0:
	// DefaultIdleTimeout); Lifetime ends it however busy (0:
	// DefaultLifetime).
	IdleTimeout, Lifetime time.Duration
	// Now is the clock (nil: models.Now); tests move it.
	Now func() time.Time
}

// Deps are what the console needs.
type Deps struct {
	DB       *gorm.DB
	Identity *identity.Service
	Billing  *billing.Service
	// Temporal reads a change's workflow histories and an organization's
	// workflows (nil: those sections say Temporal is not reachable).
	Temporal  client.Client
	Namespace string
	// TemporalUIURL is the Temporal Web UI's address: workflows link there
	// ("" leaves the links out).
	TemporalUIURL string
	Options
	// Requests is the request-transaction middleware (web.Transactional):
	// every POST of the console is one transaction.
	Requests fiber.Handler
	Log      *slog.Logger
}

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/console.css
var stylesheet []byte

// pages are the console's templates, each page parsed with the layout.
var pages = func() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		out[page] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, name))
	}
	return out
}()

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if !v.IsZero() {
				return v.UTC().Format("2006-01-02 15:04:05 UTC")
			}
		case *time.Time:
			if v != nil && !v.IsZero() {
				return v.UTC().Format("2006-01-02 15:04:05 UTC")
			}
		}
		return "—"
	},
	"or": func(s, fallback string) string { return cmp.Or(s, fallback) },
}

// handler serves the console.
type handler struct {
	d Deps
	// temporalUI links workflows to the Temporal Web UI.
	temporalUI web.TemporalUI
}

// Mount serves the console under /ops/ on app. It needs the identity
// service of this process (staff sign in with it).
func Mount(app *fiber.App, d Deps) {
	d.IdleTimeout = cmp.Or(d.IdleTimeout, DefaultIdleTimeout)
	d.Lifetime = cmp.Or(d.Lifetime, DefaultLifetime)
	if d.Now == nil {
		d.Now = models.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	h := &handler{d: d, temporalUI: web.NewTemporalUI(d.TemporalUIURL, d.Namespace)}

	// Each route names its middleware: a group's would run for the
	// operator API under /ops/v1 too.
	app.Get("/ops/static/console.css", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		c.Type("css", "utf-8")
		return c.Send(stylesheet)
	})
	// securityHeaders first, then errorPages: a refusal by the middleware
	// (a rate limit, a commit that failed) is a page too.
	app.Get("/ops/sign-in", securityHeaders, h.errorPages, h.page(h.signInForm))
	// The identity service's own sign-in limits, shared with its /token:
	// the console is no second door for guessing passwords.
	app.Post("/ops/sign-in", securityHeaders, h.errorPages,
		web.RateLimit(d.DB, "login-ip", 30, time.Minute, nil),
		web.RateLimitFailures(d.DB, "login-email", 5, time.Minute, formEmail),
		d.Requests, h.page(h.signIn))

	read := func(path string, fn fiber.Handler) {
		app.Get("/ops"+path, securityHeaders, h.errorPages, h.session, h.page(fn))
	}
	write := func(path string, fn fiber.Handler) {
		app.Post("/ops"+path, securityHeaders, h.errorPages, h.session, h.csrf, d.Requests, h.page(fn))
	}
	read("/", func(c *fiber.Ctx) error { return c.Redirect("/ops/changes", fiber.StatusSeeOther) }) // and /ops
	read("/changes", h.changes)
	read("/changes/:id", h.change)
	read("/changes/:id/retry", h.confirmRetry)
	write("/changes/:id/retry", h.retry)
	read("/organizations/:id", h.organization)
	read("/audit", h.audit)
	write("/sign-out", h.signOut)
}

// securityHeaders: no script, no frames, nothing from elsewhere, nothing
// cached — the pages show billing data.
func securityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Next()
}

// view is what every page's template gets: the page's own data, the
// signed-in staff member (nil on the sign-in page) and the form token.
type view struct {
	Title   string
	Staff   *models.StaffSession
	CSRF    string
	Notice  string
	Problem *web.Problem
	Data    any
}

// render writes page with status.
func (h *handler) render(c *fiber.Ctx, status int, page string, v view) error {
	if s := sessionOf(c); s != nil {
		v.Staff, v.CSRF = s, s.CSRFToken
	}
	var b strings.Builder
	if err := pages[page].ExecuteTemplate(&b, "layout.html", v); err != nil {
		return err
	}
	c.Type("html", "utf-8")
	return c.Status(status).SendString(b.String())
}

// page runs a console handler and answers its error as a page: a refusal
// with its status and message, a failure as a 500 (logged with the
// request id), an outage as a 503.
func (h *handler) page(fn fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := fn(c)
		if err == nil {
			return nil
		}
		p := *web.ToProblem(err) // a copy: shared problems are not to be changed
		p.RequestID = web.RequestID(c)
		if p.Status >= http.StatusInternalServerError {
			h.d.Log.ErrorContext(c.UserContext(), "console request failed", "path", strings.Clone(c.Path()), "requestId", p.RequestID, "error", err)
		}
		if p.Status == fiber.StatusServiceUnavailable {
			c.Set(fiber.HeaderRetryAfter, "5")
		}
		return h.render(c, p.Status, "error", view{Title: p.Title, Problem: &p})
	}
}

// errorPages answers an error of the middleware after it (a rate limit, a
// request transaction that failed to commit) as a page, as page does for
// the handlers.
func (h *handler) errorPages(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		return h.page(func(*fiber.Ctx) error { return err })(c)
	}
	return nil
}
