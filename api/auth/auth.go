// Package auth authenticates requests on every interface and resolves the
// organization they act in, following the credential table of DESIGN §5:
//
//	CRM       Authorization: Bearer <user JWT | crm_ key>
//	Helpdesk  x-api-key: <hd_ key> + x-workspace-id, or Authorization: Bearer <JWT> + x-workspace-id
//	AI        Authorization: Bearer <ai_ key> of a Business or Enterprise organization
//
// A valid key of another service is a 403; an unknown or revoked key and a
// bad token are 401; another organization's id is a 404, never a 403 that
// would confirm it exists.
package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Principal is who makes a request, and in which organization.
type Principal struct {
	// A user (from a verified token)…
	UserID string
	Email  string
	Name   string
	// …or an API key.
	Key *models.APIKey

	// OrgID, Role and MemberID are set once the organization is resolved.
	OrgID    string
	Role     string
	MemberID string
}

// IsKey tells whether the caller is an API key.
func (p *Principal) IsKey() bool { return p.Key != nil }

// Actor is who the caller is in the records they change: their API key,
// or their membership of the organization.
func (p *Principal) Actor() models.Actor {
	if p.IsKey() {
		return models.KeyActor(p.Key.ID)
	}
	return models.MemberActor(p.MemberID)
}

// idempotencyScope is whose Idempotency-Keys the caller's are: the API
// key, or the user — in the organization when it is already resolved.
// Neither depends on the token text, so a refreshed token finds the keys
// of the one before; and two tenants' principals never coincide.
func (p *Principal) idempotencyScope() string {
	if p.IsKey() {
		return "key:" + p.Key.ID
	}
	if p.OrgID != "" {
		return "user:" + p.UserID + "|org:" + p.OrgID
	}
	return "user:" + p.UserID
}

// setPrincipal stores p for the handlers and the idempotency layer.
func setPrincipal(c *fiber.Ctx, p *Principal) {
	c.Locals(localPrincipal, p)
	web.SetIdempotencyScope(c, p.idempotencyScope())
}

// IsAdmin tells whether the caller may administer the organization's data.
// Keys act as ADMIN for data.
func (p *Principal) IsAdmin() bool { return models.IsAdmin(p.Role) }

const localPrincipal = "principal"

// From returns the request's principal (set by the middleware).
func From(c *fiber.Ctx) *Principal {
	p, _ := c.Locals(localPrincipal).(*Principal)
	return p
}

// Authenticator holds what authentication needs.
type Authenticator struct {
	db       *gorm.DB
	verifier TokenVerifier
	touched  sync.Map // key id → time of the last lastUsedAt write
	revoked  *revocations
	keys     *keyCache
}

// TokenVerifier verifies a user access token.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*UserClaims, error)
}

// UserClaims is what the suite needs from an access token.
type UserClaims struct {
	Subject string
	Email   string
	Name    string
	// SessionID is the sign-in the token belongs to (`sid`), when the
	// issuer says; a revoked session's tokens are refused.
	SessionID string
	// Staff is the `staff` claim: the user is billing staff (the operator
	// API under /ops/v1).
	Staff bool
}

// New creates an Authenticator. Access tokens of revoked sign-in sessions
// are refused once this process has re-read the revocations (at most
// DefaultRevocationRefresh and one read later); API keys are read through
// a cache that a revocation anywhere empties within DefaultKeyEpochRefresh
// (keycache.go), at once in the process that revoked (ForgetKeys).
func New(db *gorm.DB, verifier TokenVerifier) *Authenticator {
	return &Authenticator{db: db, verifier: verifier, revoked: newRevocations(db), keys: newKeyCache(db)}
}

// verifyUser checks a user access token and that its sign-in session was
// not revoked.
func (a *Authenticator) verifyUser(ctx context.Context, token string) (*UserClaims, error) {
	claims, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return nil, errInvalidToken
	}
	revoked, err := a.revoked.revoked(ctx, claims.SessionID)
	if err != nil {
		return nil, err
	}
	if revoked {
		return nil, errSessionRevoked
	}
	return claims, nil
}

var (
	errNoCredential   = models.Unauthorized("Send a credential.")
	errInvalidKey     = models.Err(models.ErrUnauthorized, "invalid_api_key", "The API key is not valid.")
	errRevokedKey     = models.Err(models.ErrUnauthorized, "api_key_revoked", "The API key was revoked.")
	errInvalidToken   = models.Err(models.ErrUnauthorized, "invalid_token", "The access token is not valid or has expired.")
	errSessionRevoked = models.Err(models.ErrUnauthorized, "session_revoked",
		"This sign-in was revoked (its refresh token was used twice); sign in again.")
	errNotAMember = models.NotFound("The organization")
)

func bearer(c *fiber.Ctx) (string, bool) { return web.BearerToken(c) }

// CRM authenticates CRM requests: a user token or a crm_ key in
// Authorization. The organization is resolved per route (ResolveOrg).
func (a *Authenticator) CRM() fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, present := bearer(c)
		if token == "" {
			if present {
				return models.Unauthorized("Use Authorization: Bearer <access token or crm_ API key>.")
			}
			return models.Unauthorized("Send Authorization: Bearer <access token or crm_ API key>.")
		}
		p, err := a.fromBearer(c, token, "crm")
		if err != nil {
			return err
		}
		setPrincipal(c, p)
		return c.Next()
	}
}

// Helpdesk authenticates Helpdesk requests and resolves the workspace from
// x-workspace-id.
func (a *Authenticator) Helpdesk() fiber.Handler {
	return func(c *fiber.Ctx) error {
		workspace := c.Get("X-Workspace-Id")
		var p *Principal
		if key := c.Get("X-Api-Key"); key != "" {
			k, err := a.key(c, key, "helpdesk")
			if err != nil {
				return err
			}
			p = &Principal{Key: k}
		} else {
			token, present := bearer(c)
			if token == "" {
				if present {
					return models.Unauthorized("Use Authorization: Bearer <access token>, or x-api-key with x-workspace-id.")
				}
				return models.Unauthorized("Send x-api-key: <hd_ key> with x-workspace-id, or Authorization: Bearer <access token> with x-workspace-id.")
			}
			if models.ServiceOfKey(token) != "" {
				return models.Err(models.ErrUnauthorized, "api_key_in_authorization",
					"The Helpdesk does not read API keys from Authorization: send the key as x-api-key with x-workspace-id.")
			}
			claims, err := a.verifyUser(c.UserContext(), token)
			if err != nil {
				return err
			}
			p = &Principal{UserID: claims.Subject, Email: claims.Email, Name: claims.Name}
		}
		if workspace == "" {
			return models.Err(models.ErrUnauthorized, "workspace_required", "Send the organization id in x-workspace-id.")
		}
		if err := a.resolve(c.UserContext(), p, workspace); err != nil {
			return err
		}
		setPrincipal(c, p)
		return c.Next()
	}
}

// Staff authenticates the operator API (/ops/v1): a user token whose
// `staff` claim is true. Billing staff are not workspace members, so no
// organization is resolved. API keys (of any service) and other users'
// tokens are a 403; no or a bad token is a 401. The claim is read from the
// token, so a grant or revocation takes effect with the user's next token
// (access tokens live 15 minutes).
func (a *Authenticator) Staff() fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, _ := bearer(c)
		if token == "" {
			if c.Get("X-Api-Key") != "" {
				return errStaffRequired
			}
			return models.Unauthorized("Send Authorization: Bearer <access token of a billing-staff user>.")
		}
		if models.ServiceOfKey(token) != "" {
			return errStaffRequired
		}
		claims, err := a.verifyUser(c.UserContext(), token)
		if err != nil {
			return err
		}
		if !claims.Staff {
			return errStaffRequired
		}
		setPrincipal(c, &Principal{UserID: claims.Subject, Email: claims.Email, Name: claims.Name})
		return c.Next()
	}
}

var errStaffRequired = models.Err(models.ErrForbidden, "staff_required",
	"The operator API is for billing staff: sign in as a user granted staff (suite admin grant-staff <email>); API keys are never staff.")

// AI authenticates AI requests: an ai_ key in Authorization, of an
// organization whose plan includes AI (Business or Enterprise).
func (a *Authenticator) AI() fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, _ := bearer(c)
		if token == "" {
			return models.Unauthorized("Send Authorization: Bearer <ai_ API key>.")
		}
		if models.ServiceOfKey(token) == "" {
			return models.Unauthorized("The AI interface takes an ai_ API key, not a user token.")
		}
		k, err := a.key(c, token, "ai")
		if err != nil {
			return err
		}
		org, err := models.FindOrg(c.UserContext(), a.db, k.OrgID)
		if err != nil {
			return err
		}
		plan, err := models.FindPlan(c.UserContext(), a.db, org.Plan)
		if err != nil {
			return err
		}
		if !plan.AI {
			return models.Err(models.ErrLimit, "plan_upgrade_required",
				"Generative AI needs the Business or Enterprise plan; this organization is on %s.", plan.Name)
		}
		setPrincipal(c, &Principal{Key: k, OrgID: k.OrgID, Role: models.RoleAdmin})
		return c.Next()
	}
}

func (a *Authenticator) fromBearer(c *fiber.Ctx, token, service string) (*Principal, error) {
	if models.ServiceOfKey(token) != "" {
		k, err := a.key(c, token, service)
		if err != nil {
			return nil, err
		}
		return &Principal{Key: k, OrgID: k.OrgID, Role: models.RoleAdmin}, nil
	}
	claims, err := a.verifyUser(c.UserContext(), token)
	if err != nil {
		return nil, err
	}
	return &Principal{UserID: claims.Subject, Email: claims.Email, Name: claims.Name}, nil
}

// key looks up an API key and checks it belongs to service.
func (a *Authenticator) key(c *fiber.Ctx, secret, service string) (*models.APIKey, error) {
	if models.ServiceOfKey(secret) == "" {
		return nil, errInvalidKey
	}
	hash := models.HashKey(secret)
	k, cached, epoch := a.keys.get(c.UserContext(), hash)
	if !cached {
		err := a.db.WithContext(c.UserContext()).Take(&k, "hash = ?", hash).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, errInvalidKey
		}
		if err != nil {
			return nil, err
		}
		a.keys.put(k, epoch)
	}
	if k.RevokedAt != nil {
		return nil, errRevokedKey
	}
	if k.Service != service {
		return nil, models.Err(models.ErrForbidden, "wrong_service_key",
			"This is a %s key; this interface takes %s_ keys.", k.Service, models.KeyPrefix(service))
	}
	a.touch(&k)
	return &k, nil
}

// KnownKey tells whether secret is a valid key of service that this
// process verified lately and still holds in its key cache: no database
// round trip beyond the cache's once-a-second epoch check. A sender with
// such a key is not guessing keys.
func (a *Authenticator) KnownKey(c *fiber.Ctx, secret, service string) bool {
	if models.ServiceOfKey(secret) != service {
		return false
	}
	k, cached, _ := a.keys.get(c.UserContext(), models.HashKey(secret))
	return cached && k.RevokedAt == nil && k.Service == service
}

// touch maintains lastUsedAt cheaply: at most one write per key per minute,
// off the request path.
func (a *Authenticator) touch(k *models.APIKey) {
	now := models.Now()
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < time.Minute {
		return
	}
	if last, ok := a.touched.Load(k.ID); ok && now.Sub(last.(time.Time)) < time.Minute {
		return
	}
	a.touched.Store(k.ID, now)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.db.WithContext(ctx).Model(&models.APIKey{}).Where("id = ?", k.ID).Update("last_used_at", now).Error
	}()
}

// resolve sets the principal's organization and role, or fails with 404
// when the caller has no access to orgID.
func (a *Authenticator) resolve(ctx context.Context, p *Principal, orgID string) error {
	if !models.ValidID(orgID) {
		return errNotAMember
	}
	if p.IsKey() {
		if p.Key.OrgID != orgID {
			return errNotAMember
		}
		p.OrgID, p.Role = orgID, models.RoleAdmin
		return nil
	}
	var m models.Member
	err := a.db.WithContext(ctx).Take(&m, "org_id = ? AND user_id = ? AND status = ?", orgID, p.UserID, models.MemberActive).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return errNotAMember
	}
	if err != nil {
		return err
	}
	p.OrgID, p.Role, p.MemberID = orgID, m.Role, m.ID
	return nil
}

// ResolveOrg selects the organization a CRM request acts in: orgID (from
// the query or body, or the route) for users; a key acts in its own
// organization, and naming another one is a 404.
func (a *Authenticator) ResolveOrg(c *fiber.Ctx, orgID string) (*Principal, error) {
	p := From(c)
	if p == nil {
		return nil, errNoCredential
	}
	if orgID == "" {
		if p.IsKey() {
			orgID = p.Key.OrgID
		} else {
			return nil, models.Invalid(models.FieldError{Field: "orgId", Code: "required", Message: "Name the organization with orgId."})
		}
	}
	if p.OrgID == orgID {
		return p, nil
	}
	if err := a.resolve(c.UserContext(), p, orgID); err != nil {
		return nil, err
	}
	return p, nil
}

// RequireAdmin refuses non-admin callers (keys count as ADMIN for data).
func RequireAdmin(p *Principal) error {
	if !p.IsAdmin() {
		return models.Err(models.ErrForbidden, "admin_required", "This action needs the ADMIN or OWNER role.")
	}
	return nil
}

// RequireUserAdmin refuses keys and non-admin users: managing keys, members,
// organization settings and billing is for people only.
func RequireUserAdmin(p *Principal) error {
	if p.IsKey() {
		return models.Err(models.ErrForbidden, "user_required", "API keys cannot manage the organization, its members, keys or billing; sign in as an ADMIN.")
	}
	return RequireAdmin(p)
}

// RequireUser refuses API keys.
func RequireUser(p *Principal) error {
	if p.IsKey() {
		return models.Err(models.ErrForbidden, "user_required", "This action needs a signed-in user, not an API key.")
	}
	return nil
}

// ForgetKeys empties this process's key cache; the revocation handler
// calls it so that the revoking process refuses the key at once.
func (a *Authenticator) ForgetKeys() { a.keys.forget() }

// APIKey checks an API key of service (for routes authenticated by a key
// in another header, such as the lead webhook's x-api-key).
func (a *Authenticator) APIKey(c *fiber.Ctx, secret, service string) (*models.APIKey, error) {
	return a.key(c, secret, service)
}
