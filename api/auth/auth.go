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
	"sync"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

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
