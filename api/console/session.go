package console

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

const (
	// sessionCookie names the staff session (its secret; the table keeps
	// its hash).
	sessionCookie = "suite_ops_session"
	// signInCookie carries the sign-in form's token: the form posts it
	// back, and a page elsewhere can neither read the cookie nor make the
	// browser send it (SameSite=Strict).
	signInCookie = "suite_ops_sign_in"
	// csrfField is every form's token field.
	csrfField = "csrf"
	// touchEvery is how stale last_seen_at may get before a request writes
	// it again: the idle timeout is exact to this much, and reading pages
	// does not write on every request.
	touchEvery = 30 * time.Second
)

const localSession = "console-session"

// sessionOf is the request's staff session (nil before sign-in).
func sessionOf(c *fiber.Ctx) *models.StaffSession {
	s, _ := c.Locals(localSession).(*models.StaffSession)
	return s
}

// cookie is one of the console's cookies: sent only to /ops, only over
// https (browsers treat http://localhost as secure too), never to
// scripts, never with a request another site starts.
func cookie(name, value string, maxAge int) *fiber.Cookie {
	return &fiber.Cookie{Name: name, Value: value, Path: "/ops", MaxAge: maxAge, Secure: true, HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode}
}

// expired deletes the cookie name from the browser (an expiry in the past:
// fasthttp writes no negative Max-Age).
func expired(name string) *fiber.Cookie {
	c := cookie(name, "", 0)
	c.Expires = time.Unix(0, 0)
	return c
}

// session admits a request with a live staff session; any other is sent
// to the sign-in page (a GET, to come back after) or refused (a form).
// Its refusals are pages (errorPages runs before it).
func (h *handler) session(c *fiber.Ctx) error {
	now := h.d.Now()
	s, err := models.FindStaffSession(c.UserContext(), h.d.DB, c.Cookies(sessionCookie), now, h.d.IdleTimeout)
	if errors.Is(err, models.ErrStaffSessionEnded) {
		c.Cookie(expired(sessionCookie))
		if c.Method() != fiber.MethodGet {
			return web.NewProblem(http.StatusUnauthorized, "session_ended", "Your console session has ended (signed out, idle too long, or no longer staff). Sign in again.")
		}
		return c.Redirect("/ops/sign-in?next="+encodeNext(c), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	if now.Sub(s.LastSeenAt) >= touchEvery {
		if err := models.TouchStaffSession(c.UserContext(), h.d.DB, s.ID, now); err != nil {
			return err
		}
	}
	c.Locals(localSession, s)
	return c.Next()
}

// csrf refuses a form without the session's token, or sent from another
// origin.
func (h *handler) csrf(c *fiber.Ctx) error {
	s := sessionOf(c)
	if s == nil || !sameToken(c.FormValue(csrfField), s.CSRFToken) || !sameOrigin(c) {
		return errCSRF
	}
	return c.Next()
}

var errCSRF = web.NewProblem(http.StatusForbidden, "csrf_failed",
	"The form did not carry this session's token (or came from another site): nothing was done. Reload the page and try again.")

func sameToken(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sameOrigin: a browser's Origin header, when it sends one, names this
// host (a proxy in front must pass the Host header on).
func sameOrigin(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" {
		return true
	}
	_, host, ok := strings.Cut(origin, "://")
	return ok && host == c.Hostname()
}

// encodeNext is the page to come back to after signing in.
func encodeNext(c *fiber.Ctx) string {
	return url.QueryEscape(string(c.Request().URI().RequestURI()))
}

// safeNext is next when it is a console page, else the changes.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ops/") && !strings.HasPrefix(next, "/ops//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/ops/changes"
}

type signInPage struct {
	Email, Next string
}

func (h *handler) signInForm(c *fiber.Ctx) error {
	return h.render(c, http.StatusOK, "sign-in", view{Title: "Sign in", CSRF: signInToken(c),
		Data: signInPage{Next: safeNext(c.Query("next"))}})
}

// signInToken is the sign-in form's token: the browser's, so that two
// sign-in tabs do not undo each other, or a new one. Either way its cookie
// lives ten more minutes.
func signInToken(c *fiber.Ctx) string {
	token := strings.Clone(c.Cookies(signInCookie))
	if len(token) < 26 {
		token = rand.Text()
	}
	c.Cookie(cookie(signInCookie, token, 600))
	return token
}

// formEmail keys the per-account sign-in limit.
func formEmail(c *fiber.Ctx) string { return models.NormalizeEmail(c.FormValue("email")) }

// signIn opens a session for a billing-staff account. A wrong password
// (401) and an account that is not staff (403, only once the password is
// right) are refused on the page, and written to the audit log.
func (h *handler) signIn(c *fiber.Ctx) error {
	if !sameToken(c.FormValue(csrfField), c.Cookies(signInCookie)) || !sameOrigin(c) {
		return errCSRF
	}
	email, next := strings.Clone(c.FormValue("email")), safeNext(c.FormValue("next"))
	again := func(status int, code, message string) error {
		return h.render(c, status, "sign-in", view{Title: "Sign in", CSRF: signInToken(c), Problem: web.NewProblem(status, code, message),
			Data: signInPage{Email: email, Next: next}})
	}
	if _, err := mail.ParseAddress(email); err != nil || len(email) > 254 || c.FormValue("password") == "" {
		// Nothing is written for a form that names no account.
		email = ""
		return again(http.StatusUnprocessableEntity, "validation_failed", "Enter your e-mail address and your password.")
	}
	entry := models.StaffAuditEntry{Actor: models.NormalizeEmail(email), Channel: models.StaffViaConsole, Action: models.StaffSignIn,
		ClientIP: web.ClientIP(c)}
	u, err := h.d.Identity.Authenticate(c.UserContext(), email, c.FormValue("password"))
	var refusal *models.DomainError
	switch {
	case errors.As(err, &refusal):
		entry.Outcome, entry.Detail = models.StaffOutcomeRefused, "invalid_credentials"
	case err != nil:
		return err
	case !u.Staff:
		entry.ActorID, entry.Outcome, entry.Detail = u.ID, models.StaffOutcomeRefused, "not_staff"
	}
	if entry.Outcome == models.StaffOutcomeRefused {
		// The refusal's audit entry stays; nothing else was written.
		if err := models.RecordStaffAction(web.Tx(c), &entry); err != nil {
			return err
		}
		web.KeepOnRefusal(c)
		if entry.Detail == "not_staff" {
			return again(http.StatusForbidden, "staff_required",
				"This console is for billing staff. An operator makes an account staff with `suite admin grant-staff <email>`.")
		}
		return again(http.StatusUnauthorized, "invalid_credentials", "The e-mail address or the password is wrong.")
	}
	tx := web.Tx(c)
	secret, s, err := models.OpenStaffSession(tx, u, entry.ClientIP, h.d.Now(), h.d.Lifetime)
	if err != nil {
		return err
	}
	entry.ActorID, entry.Actor, entry.Outcome, entry.Target = u.ID, u.Email, models.StaffOutcomeDone, "session "+s.ID[:12]
	if err := models.RecordStaffAction(tx, &entry); err != nil {
		return err
	}
	c.Cookie(cookie(sessionCookie, secret, 0))
	c.Cookie(expired(signInCookie))
	return c.Redirect(next, fiber.StatusSeeOther)
}

func (h *handler) signOut(c *fiber.Ctx) error {
	s := sessionOf(c)
	tx := web.Tx(c)
	if err := models.EndStaffSession(tx, s.ID, h.d.Now()); err != nil {
		return err
	}
	if err := models.RecordStaffAction(tx, &models.StaffAuditEntry{ActorID: s.UserID, Actor: s.Email, Channel: models.StaffViaConsole,
		Action: models.StaffSignOut, Target: "session " + s.ID[:12], Outcome: models.StaffOutcomeDone, ClientIP: web.ClientIP(c)}); err != nil {
		return err
	}
	c.Cookie(expired(sessionCookie))
	return c.Redirect("/ops/sign-in", fiber.StatusSeeOther)
}
