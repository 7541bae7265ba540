package crm

import (
	"math"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// listedMember is a member in the list: invited members show their
// pending invitation (without its token).
type listedMember struct {
	views.Member
	Invitation *invitationSummary `json:"invitation,omitempty"`
}

func memberCursor(m *models.Member) web.Cursor { return web.Cursor{CreatedAt: m.CreatedAt, ID: m.ID} }

// listMembers lists members and pending invites; any member may look.
func (h *handlers) listMembers(c *fiber.Ctx) error {
	p := auth.From(c)
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	q := h.DB.WithContext(c.UserContext()).Model(&models.Member{}).Where("org_id = ? AND status <> ?", p.OrgID, models.MemberRemoved)
	if status := c.Query("status"); status != "" {
		if status != models.MemberActive && status != models.MemberInvited {
			return models.Invalid(models.FieldError{Field: "status", Code: "oneof", Message: "Must be one of: active, invited."})
		}
		q = q.Where("status = ?", status)
	}
	rows, err := web.Paginate(q, page, memberCursor)
	if err != nil {
		return err
	}
	invitations, err := h.pendingInvitations(h.DB.WithContext(c.UserContext()), rows.Data)
	if err != nil {
		return err
	}
	now := models.Now()
	return web.SendPage(c, rows, func(m *models.Member) listedMember {
		out := listedMember{Member: views.ToMember(m)}
		if inv := invitations[m.ID]; inv != nil {
			out.Invitation = toInvitationSummary(inv, now)
		}
		return out
	})
}

type inviteRequest struct {
	Email  string   `json:"email" validate:"required,email,max=254"`
	Name   string   `json:"name" validate:"max=200"`
	Role   string   `json:"role" validate:"required,oneof=OWNER ADMIN AGENT"`
	Target *float64 `json:"target" validate:"omitnil,gte=0,lte=999999999999"`
}

// canGrant: only an OWNER may make or unmake OWNERs.
func canGrant(p *auth.Principal, roles ...string) error {
	for _, r := range roles {
		if r == models.RoleOwner && p.Role != models.RoleOwner {
			return models.Err(models.ErrForbidden, "owner_required", "Only an OWNER can grant, change or remove the OWNER role.")
		}
	}
	return nil
}

// inviteMember invites an e-mail address with a role. The invite holds a
// seat at once; the seat check and the insert share a transaction that
// locks the organization, so two invites cannot both take the last seat.
// The answer carries the invitation's secret token, once (Cache-Control:
// no-store); the InvitationEmail workflow, recorded in the same
// transaction, e-mails it to the address.
func (h *handlers) inviteMember(c *fiber.Ctx) error {
	p := auth.From(c)
	var req inviteRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	if err := canGrant(p, req.Role); err != nil {
		return err
	}
	now := models.Now()
	inviter := p.UserID
	m := &models.Member{ID: models.NewID(), OrgID: p.OrgID, Email: models.NormalizeEmail(req.Email), Name: strings.TrimSpace(req.Name),
		Role: req.Role, Status: models.MemberInvited, InvitedBy: &inviter, CreatedAt: now, UpdatedAt: now}
	if req.Target != nil {
		m.Target = cents(*req.Target)
	}
	tx := h.Starter.In(c, web.Tx(c))
	invitation, err := h.addInvited(tx, p, m, inviter, now)
	if err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "already_member", "%s is already a member or invited.", m.Email)
		}
		return err
	}
	if err := tx.Emit(models.Event{OrgID: m.OrgID, Type: models.EventMemberInvited, Object: views.ToMember(m)}); err != nil {
		return err
	}
	c.Location("/crm/organization/" + p.OrgID + "/members/" + m.ID)
	c.Set(fiber.HeaderCacheControl, "no-store") // the token: never stored by the idempotency layer
	return c.Status(fiber.StatusCreated).JSON(invitedMemberResponse{Member: views.ToMember(m), Invitation: invitation})
}

// addInvited records the invited member m (reusing a removed member's row)
// and their invitation in tx, within the organization's seats.
func (h *handlers) addInvited(tx *record.Tx, p *auth.Principal, m *models.Member, inviter string, now time.Time) (*invitationResponse, error) {
	org, err := models.FindOrg(tx.Statement.Context, models.LockForUpdate(tx.DB), p.OrgID)
	if err != nil {
		return nil, err
	}
	var existing models.Member
	err = tx.Take(&existing, "org_id = ? AND email = ?", p.OrgID, m.Email).Error
	if err == nil && existing.Status != models.MemberRemoved {
		return nil, models.Err(models.ErrConflict, "already_member", "%s is already a member or invited.", m.Email)
	}
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	if err := models.CheckSeat(tx.DB, org); err != nil {
		return nil, err
	}
	if err == nil { // re-inviting a removed member reuses their row
		m.ID, m.CreatedAt = existing.ID, existing.CreatedAt
		err = tx.Save(m).Error
	} else {
		err = tx.Create(m).Error
	}
	if err != nil {
		return nil, err
	}
	return h.invite(tx, m, inviter, now)
}

type updateMemberRequest struct {
	Role   *string  `json:"role" validate:"omitempty,oneof=OWNER ADMIN AGENT"`
	Name   *string  `json:"name" validate:"omitempty,max=200"`
	Target *float64 `json:"target" validate:"omitnil,gte=0,lte=999999999999"`
}

// updateMember changes a member's role, name or sales target.
func (h *handlers) updateMember(c *fiber.Ctx) error {
	p, memberID, err := pathMember(c)
	if err != nil {
		return err
	}
	var req updateMemberRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	m, err := changeMember(h.Starter.In(c, web.Tx(c)), p, memberID, req)
	if err != nil {
		return err
	}
	return c.JSON(views.ToMember(m))
}

// changeMember applies req to the organization's member memberID in tx:
// the last OWNER keeps their role, and a changed role is synchronized to the
// identity service.
func changeMember(tx *record.Tx, p *auth.Principal, memberID string, req updateMemberRequest) (*models.Member, error) {
	if _, err := models.FindOrg(tx.Statement.Context, models.LockForUpdate(tx.DB), p.OrgID); err != nil {
		return nil, err
	}
	var m models.Member
	if err := tx.Take(&m, "id = ? AND org_id = ? AND status <> ?", memberID, p.OrgID, models.MemberRemoved).Error; err != nil {
		return nil, memberNotFound(err)
	}
	roleChanged := req.Role != nil && *req.Role != m.Role
	if roleChanged {
		if err := canGrant(p, m.Role, *req.Role); err != nil {
			return nil, err
		}
		if m.Role == models.RoleOwner && m.Status == models.MemberActive {
			if owners, err := models.CountOwners(tx.DB, p.OrgID); err != nil || owners <= 1 {
				return nil, firstErr(err, errLastOwner)
			}
		}
		m.Role = *req.Role
	}
	if req.Name != nil {
		m.Name = strings.TrimSpace(*req.Name)
	}
	if req.Target != nil {
		m.Target = cents(*req.Target)
	}
	m.UpdatedAt = models.Now()
	if err := tx.Save(&m).Error; err != nil {
		return nil, err
	}
	if roleChanged && m.Status == models.MemberActive {
		return &m, startOrgSync(tx, p.OrgID)
	}
	return &m, nil
}

// removeMember removes a member or withdraws an invite (its token stops
// working), freeing the seat.
func (h *handlers) removeMember(c *fiber.Ctx) error {
	p, memberID, err := pathMember(c)
	if err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	m, err := withdrawMember(tx, p, memberID)
	if err != nil {
		return err
	}
	if err := tx.Emit(models.Event{OrgID: m.OrgID, Type: models.EventMemberRemoved, Object: views.ToMember(m)}); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// withdrawMember removes the organization's member memberID in tx, or
// withdraws their invitation; the last OWNER stays. It returns the member
// as removed.
func withdrawMember(tx *record.Tx, p *auth.Principal, memberID string) (*models.Member, error) {
	if _, err := models.FindOrg(tx.Statement.Context, models.LockForUpdate(tx.DB), p.OrgID); err != nil {
		return nil, err
	}
	var m models.Member
	if err := tx.Take(&m, "id = ? AND org_id = ? AND status <> ?", memberID, p.OrgID, models.MemberRemoved).Error; err != nil {
		return nil, memberNotFound(err)
	}
	if err := canGrant(p, m.Role); err != nil {
		return nil, err
	}
	if m.Role == models.RoleOwner && m.Status == models.MemberActive {
		if owners, err := models.CountOwners(tx.DB, p.OrgID); err != nil || owners <= 1 {
			return nil, firstErr(err, errLastOwner)
		}
	}
	wasActive := m.Status == models.MemberActive
	now := models.Now()
	if err := tx.Model(&m).Updates(map[string]any{"status": models.MemberRemoved, "updated_at": now}).Error; err != nil {
		return nil, err
	}
	m.Status, m.UpdatedAt = models.MemberRemoved, now
	if err := revokeInvitations(tx.DB, m.ID, now); err != nil { // a withdrawn invite's token stops working
		return nil, err
	}
	if wasActive {
		return &m, startOrgSync(tx, p.OrgID)
	}
	return &m, nil
}

// pathMember is the :memberId of an /organization/:id/members/:memberId
// route (the organization is resolved by inPathOrg).
func pathMember(c *fiber.Ctx) (*auth.Principal, string, error) {
	memberID, err := pathID(c, "memberId", "The member")
	return auth.From(c), memberID, err
}

func memberNotFound(err error) error {
	if isNotFound(err) {
		return models.Err(models.ErrNotFound, "not_found", "The member was not found.")
	}
	return err
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// cents rounds money to the stored precision, so the response shows what
// was stored.
func cents(v float64) float64 { return math.Round(v*100) / 100 }
