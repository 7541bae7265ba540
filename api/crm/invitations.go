package crm

import (
	"cmp"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// Invitations (DESIGN §5): signing up never grants a membership. An invite
// creates a pending member (holding a seat) and an invitation: a secret,
// single-use token that expires after models.InvitationTTL, shown once to
// the inviter and e-mailed to the invited address by the InvitationEmail
// workflow. The membership begins only when a signed-in user whose e-mail
// is the invited address presents the token.

// invitationResponse is the invitation as its inviter sees it once, with
// the token.
type invitationResponse struct {
	ID string `json:"id"`
	// Token is shown here once; it is stored only as its SHA-256.
	Token string `json:"token"`
	// AcceptURL is the front end's accept link (SUITE_INVITE_URL), when
	// configured.
	AcceptURL   string    `json:"acceptUrl,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt"`
	EmailStatus string    `json:"emailStatus"`
}

// invitationSummary is an invited member's pending invitation, as the
// member list shows it (no token).
type invitationSummary struct {
	ID string `json:"id"`
	// Status is pending, or expired once ExpiresAt has passed (the seat is
	// held until the invitation is withdrawn or resent).
	Status      string    `json:"status"`
	ExpiresAt   time.Time `json:"expiresAt"`
	EmailStatus string    `json:"emailStatus"`
	EmailError  string    `json:"emailError,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
}

func toInvitationSummary(inv *models.Invitation, now time.Time) *invitationSummary {
	status := inv.Status
	if status == models.InvitationPending && inv.ExpiresAt.Before(now) {
		status = "expired"
	}
	return &invitationSummary{ID: inv.ID, Status: status, ExpiresAt: inv.ExpiresAt, EmailStatus: inv.EmailStatus,
		EmailError: inv.EmailError, CreatedAt: inv.CreatedAt}
}

// invite creates a pending invitation of member m in tx, revoking the
// member's earlier ones, and records its e-mail workflow. It returns the
// invitation with its token (never stored).
func (h *handlers) invite(tx *record.Tx, m *models.Member, invitedBy string, now time.Time) (*invitationResponse, error) {
	key, err := models.EnsureServerSecret(tx.Statement.Context, tx.DB, models.InvitationKeyName)
	if err != nil {
		return nil, err
	}
	if err := revokeInvitations(tx.DB, m.ID, now); err != nil {
		return nil, err
	}
	inv := &models.Invitation{ID: models.NewID(), OrgID: m.OrgID, MemberID: m.ID, Email: m.Email, Status: models.InvitationPending,
		ExpiresAt: now.Add(models.InvitationTTL), EmailStatus: models.InviteEmailQueued, InvitedBy: invitedBy, CreatedAt: now, UpdatedAt: now}
	token := models.InvitationToken(key, inv.ID)
	inv.TokenHash = models.HashKey(token)
	if err := tx.Create(inv).Error; err != nil {
		return nil, err
	}
	err = tx.Start(record.Start{WorkflowID: names.InvitationEmailID(inv.ID), Workflow: names.InvitationEmailWorkflow,
		Input: workflows.InvitationEmailInput{InvitationID: inv.ID, OrgID: inv.OrgID}, OrgID: inv.OrgID, Kind: names.KindInvitationEmail})
	if err != nil {
		return nil, err
	}
	return &invitationResponse{ID: inv.ID, Token: token, AcceptURL: models.InviteLink(h.InviteURL, token),
		ExpiresAt: inv.ExpiresAt, EmailStatus: inv.EmailStatus}, nil
}

// revokeInvitations withdraws the member's pending invitations.
func revokeInvitations(tx *gorm.DB, memberID string, now time.Time) error {
	return tx.Model(&models.Invitation{}).Where("member_id = ? AND status = ?", memberID, models.InvitationPending).
		Updates(map[string]any{"status": models.InvitationRevoked, "updated_at": now}).Error
}

// pendingInvitations returns the latest pending invitation of each of the
// page's invited members (one query).
func (h *handlers) pendingInvitations(db *gorm.DB, members []models.Member) (map[string]*models.Invitation, error) {
	var ids []string
	for _, m := range members {
		if m.Status == models.MemberInvited {
			ids = append(ids, m.ID)
		}
	}
	out := map[string]*models.Invitation{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Invitation
	if err := db.Where("member_id IN ? AND status = ?", ids, models.InvitationPending).Order("created_at").Find(&rows).Error; err != nil {
		return nil, err
	}
	for i := range rows {
		out[rows[i].MemberID] = &rows[i] // the newest wins
	}
	return out, nil
}

type invitedMemberResponse struct {
	views.Member
	Invitation *invitationResponse `json:"invitation"`
}

// resendInvitation replaces an invited member's invitation with a new one
// (new token, new expiry, new e-mail); the old token stops working.
func (h *handlers) resendInvitation(c *fiber.Ctx) error {
	p, memberID, err := pathMember(c)
	if err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	if _, err := models.FindOrg(c.UserContext(), models.LockForUpdate(tx.DB), p.OrgID); err != nil {
		return err
	}
	var m models.Member
	if err := tx.Take(&m, "id = ? AND org_id = ? AND status <> ?", memberID, p.OrgID, models.MemberRemoved).Error; err != nil {
		return memberNotFound(err)
	}
	if m.Status != models.MemberInvited {
		return models.Err(models.ErrConflict, "not_invited", "%s has already joined; there is no invitation to resend.", m.Email)
	}
	if err := canGrant(p, m.Role); err != nil {
		return err
	}
	out, err := h.invite(tx, &m, p.UserID, models.Now())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store") // the token: never stored by the idempotency layer
	return c.Status(fiber.StatusCreated).JSON(out)
}

type acceptInvitationRequest struct {
	Token string `json:"token" validate:"required,max=200"`
}

type acceptInvitationResponse struct {
	Organization orgResponse  `json:"organization"`
	Member       views.Member `json:"member"`
}

var (
	errInvitationNotFound = models.Err(models.ErrNotFound, "invitation_not_found", "The invitation was not found.")
	errInvitationEmail    = models.Err(models.ErrForbidden, "invitation_email_mismatch",
		"This invitation was sent to another e-mail address: sign in with the address that received it.")
	errInvitationUsed    = models.Err(models.ErrConflict, "invitation_used", "This invitation was already accepted; it works once.")
	errInvitationExpired = models.Err(models.ErrGone, "invitation_expired", "This invitation has expired; ask for a new one.")
	errInvitationRevoked = models.Err(models.ErrGone, "invitation_revoked",
		"This invitation was withdrawn or replaced by a newer one; use the latest invitation, or ask for a new one.")
)

// acceptInvitation makes the signed-in user a member: they present the
// token, and their e-mail must be the invited address. The e-mail is
// checked before anything about the invitation is told, so a token that
// reached someone else reveals nothing more than that it is not theirs.
func (h *handlers) acceptInvitation(c *fiber.Ctx) error {
	var req acceptInvitationRequest
	p, err := userBody(c, &req)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var inv models.Invitation
	if err := h.DB.WithContext(ctx).Take(&inv, "token_hash = ?", models.HashKey(req.Token)).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return errInvitationNotFound
		}
		return err
	}
	if models.NormalizeEmail(p.Email) != inv.Email {
		return errInvitationEmail
	}
	now := models.Now()
	tx := h.Starter.In(c, web.Tx(c))
	org, m, err := join(tx, p, &inv, now)
	if err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "already_member", "You are already a member of this organization.")
		}
		return err
	}
	if err := tx.Emit(models.Event{OrgID: m.OrgID, Type: models.EventMemberJoined, Object: views.ToMember(m)}); err != nil {
		return err
	}
	return c.JSON(acceptInvitationResponse{Organization: toOrg(org, m.Role), Member: views.ToMember(m)})
}

// join makes p the member inv invited, in tx, if the invitation is still
// good; it reports which organization they joined.
func join(tx *record.Tx, p *auth.Principal, inv *models.Invitation, now time.Time) (org *models.Organization, m *models.Member, err error) {
	if org, err = models.FindOrg(tx.Statement.Context, models.LockForUpdate(tx.DB), inv.OrgID); err != nil {
		return nil, nil, errInvitationRevoked // the organization is gone
	}
	if err := models.LockForUpdate(tx.DB).Take(inv, "id = ?", inv.ID).Error; err != nil {
		return nil, nil, err
	}
	switch {
	case inv.Status == models.InvitationAccepted:
		return nil, nil, errInvitationUsed
	case inv.Status == models.InvitationRevoked:
		return nil, nil, errInvitationRevoked
	case inv.ExpiresAt.Before(now):
		return nil, nil, errInvitationExpired
	}
	m = new(models.Member)
	if err := tx.Take(m, "id = ? AND status = ?", inv.MemberID, models.MemberInvited).Error; err != nil {
		if isNotFound(err) {
			return nil, nil, errInvitationRevoked
		}
		return nil, nil, err
	}
	var already int64
	if err := tx.Model(&models.Member{}).Where("org_id = ? AND user_id = ? AND status <> ?", inv.OrgID, p.UserID, models.MemberRemoved).
		Count(&already).Error; err != nil {
		return nil, nil, err
	}
	if already > 0 {
		return nil, nil, models.Err(models.ErrConflict, "already_member", "You are already a member of this organization.")
	}
	userID := p.UserID
	m.UserID, m.Status, m.Name, m.UpdatedAt = &userID, models.MemberActive, cmp.Or(m.Name, p.Name), now
	if err := tx.Model(&models.Member{}).Where("id = ?", m.ID).
		Updates(map[string]any{"user_id": &userID, "status": m.Status, "name": m.Name, "updated_at": now}).Error; err != nil {
		return nil, nil, err
	}
	if err := tx.Model(&models.Invitation{}).Where("id = ?", inv.ID).Updates(map[string]any{"status": models.InvitationAccepted,
		"accepted_by": &userID, "accepted_at": &now, "updated_at": now}).Error; err != nil {
		return nil, nil, err
	}
	return org, m, startOrgSync(tx, inv.OrgID)
}
