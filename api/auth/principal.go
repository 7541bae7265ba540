package auth

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Who makes a request (Principal), the organization it acts in, and the
// role checks handlers make.

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
