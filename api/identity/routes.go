package identity

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

func base64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Mount serves the identity service: /identity/v1/* and the discovery
// documents under both /.well-known and /identity/.well-known. requests is
// the request-transaction middleware (web.Transactional); it runs after the
// rate limits and the service token, so a refused request is not stored.
// Token responses are marked no-store, so the idempotency layer never
// writes them down.
func Mount(app *fiber.App, s *Service, requests fiber.Handler) {
	for _, prefix := range []string{"", "/identity"} {
		app.Get(prefix+"/.well-known/jwks.json", s.jwks)
		app.Get(prefix+"/.well-known/openid-configuration", s.discovery)
	}
	v1 := app.Group("/identity/v1")
	v1.Post("/users", web.RateLimit(s.db, "signup", 20, time.Minute, nil), requests, s.signUp)
	v1.Post("/token",
		web.RateLimit(s.db, "login-ip", 30, time.Minute, nil),
		web.RateLimitFailures(s.db, "login-email", 5, time.Minute, emailOf),
		web.ErrorsAsResponses,
		requests,
		s.token)
	v1.Post("/token/refresh", web.RateLimit(s.db, "refresh-ip", 60, time.Minute, nil), requests, s.refresh)
	v1.Get("/me", s.me)

	v1.Put("/orgs/:orgId", s.requireService, requests, s.putOrg)
	v1.Delete("/orgs/:orgId", s.requireService, requests, s.deleteOrg)
	v1.Put("/orgs/:orgId/members", s.requireService, requests, s.putMembers)
	v1.Get("/users/:userId/orgs", s.requireService, s.userOrgs)
}

// emailOf keys the per-account login limit on the e-mail in the body.
func emailOf(c *fiber.Ctx) string {
	var body struct {
		Email string `json:"email"`
	}
	_ = json.Unmarshal(c.Body(), &body)
	return models.NormalizeEmail(body.Email)
}

type signUpRequest struct {
	Email    string `json:"email" validate:"required,email,max=254"`
	Password string `json:"password" validate:"required,min=10,max=200"`
	Name     string `json:"name" validate:"required,notblank,max=200"`
}

type userResponse struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
	// Staff: billing staff (the operator API); their tokens say so too.
	Staff     bool      `json:"staff"`
	CreatedAt time.Time `json:"createdAt"`
}

func toUser(u *models.IdentityUser) userResponse {
	return userResponse{ID: u.ID, Email: u.Email, Name: u.Name, Staff: u.Staff, CreatedAt: u.CreatedAt}
}

func (s *Service) signUp(c *fiber.Ctx) error {
	var req signUpRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	u, err := s.NewUser(req.Email, req.Password, strings.TrimSpace(req.Name))
	if err != nil {
		return err
	}
	if err := s.SignUp(web.Tx(c), u); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toUser(u))
}

type tokenRequest struct {
	GrantType string `json:"grant_type" validate:"required,oneof=password"`
	Email     string `json:"email" validate:"required,email"`
	Password  string `json:"password" validate:"required"`
}

func (s *Service) token(c *fiber.Ctx) error {
	var req tokenRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	u, err := s.Authenticate(c.UserContext(), req.Email, req.Password)
	if err != nil {
		return err
	}
	pair, err := s.SignIn(web.Tx(c), u)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(pair)
}

type refreshRequest struct {
	RefreshToken string `json:"refresh_token" validate:"required"`
}

func (s *Service) refresh(c *fiber.Ctx) error {
	var req refreshRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	pair, err := s.Refresh(web.Tx(c), req.RefreshToken)
	if errors.Is(err, ErrRefreshReused) {
		// The sign-in is revoked: that write stands though the answer is a
		// refusal.
		web.KeepOnRefusal(c)
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(pair)
}

func (s *Service) me(c *fiber.Ctx) error {
	token, _ := web.BearerToken(c)
	if token == "" {
		return models.Unauthorized("Send Authorization: Bearer <access token>.")
	}
	claims, err := s.Verify(token)
	if err != nil {
		return err
	}
	if revoked, err := s.SessionRevoked(c.UserContext(), claims.SessionID); err != nil {
		return err
	} else if revoked {
		return errSessionRevoked
	}
	u, err := s.User(c.UserContext(), claims.Subject)
	if err != nil {
		return models.Unauthorized("The account no longer exists.")
	}
	return c.JSON(toUser(u))
}

var errSessionRevoked = models.Err(models.ErrUnauthorized, "session_revoked", "This sign-in was revoked; sign in again.")

func (s *Service) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.JSON(s.JWKS())
}

func (s *Service) discovery(c *fiber.Ctx) error {
	iss := s.cfg.Issuer
	return c.JSON(fiber.Map{
		"issuer":                                iss,
		"jwks_uri":                              iss + "/.well-known/jwks.json",
		"token_endpoint":                        iss + "/v1/token",
		"grant_types_supported":                 []string{"password"},
		"response_types_supported":              []string{"token"},
		"subject_types_supported":               []string{"public"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		// Access tokens are JWTs signed with these algorithms (no ID tokens).
		"access_token_signing_alg_values_supported": []string{"EdDSA"},
		"claims_supported":                          []string{"sub", "iss", "aud", "exp", "iat", "nbf", "jti", "email", "name", "sid"},
	})
}

// requireService admits calls bearing the configured service token.
func (s *Service) requireService(c *fiber.Ctx) error {
	token, _ := web.BearerToken(c)
	if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.ServiceToken)) != 1 {
		return models.Unauthorized("Service-to-service endpoints need the identity service token.")
	}
	return c.Next()
}

func orgIDParam(c *fiber.Ctx) (string, error) {
	id := c.Params("orgId")
	if !models.ValidID(id) {
		return "", models.Invalid(models.FieldError{Field: "orgId", Code: "uuid", Message: "Must be a valid id."})
	}
	return id, nil
}

type putOrgRequest struct {
	Name string `json:"name" validate:"required,notblank,max=200"`
}

func (s *Service) putOrg(c *fiber.Ctx) error {
	id, err := orgIDParam(c)
	if err != nil {
		return err
	}
	var req putOrgRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	created, err := s.RegisterOrg(web.Tx(c), id, req.Name)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(fiber.Map{"id": id, "name": req.Name})
}

func (s *Service) deleteOrg(c *fiber.Ctx) error {
	id, err := orgIDParam(c)
	if err != nil {
		return err
	}
	if err := s.DeregisterOrg(web.Tx(c), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

type putMembersRequest struct {
	Members []memberEntry `json:"members" validate:"required,dive"`
}

type memberEntry struct {
	UserID string `json:"userId" validate:"required,uuid"`
	Role   string `json:"role" validate:"required,oneof=OWNER ADMIN AGENT"`
}

func (s *Service) putMembers(c *fiber.Ctx) error {
	id, err := orgIDParam(c)
	if err != nil {
		return err
	}
	var req putMembersRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	ms := make([]Membership, len(req.Members))
	for i, m := range req.Members {
		ms[i] = Membership{OrgID: id, UserID: m.UserID, Role: m.Role}
	}
	if err := s.SetMembers(web.Tx(c), id, ms); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"orgId": id, "members": req.Members})
}

func (s *Service) userOrgs(c *fiber.Ctx) error {
	id := c.Params("userId")
	if !models.ValidID(id) {
		return models.Invalid(models.FieldError{Field: "userId", Code: "uuid", Message: "Must be a valid id."})
	}
	ms, err := s.UserOrgs(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"data": ms})
}
