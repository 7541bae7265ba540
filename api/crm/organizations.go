package crm

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// registrationWait is how long POST /organization waits for provisioning
// before answering 202 with a Location to poll.
const registrationWait = 3 * time.Second

type orgResponse struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Status        string    `json:"status"`
	FailureReason string    `json:"failureReason,omitempty"`
	Plan          string    `json:"plan"`
	Timezone      string    `json:"timezone"`
	Currency      string    `json:"currency"`
	Website       string    `json:"website"`
	Industry      string    `json:"industry"`
	Phone         string    `json:"phone"`
	Address       string    `json:"address"`
	Role          string    `json:"role,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

func toOrg(o *models.Organization, role string) orgResponse {
	return orgResponse{ID: o.ID, Name: o.Name, Status: o.Status, FailureReason: o.FailureReason, Plan: o.Plan,
		Timezone: o.Timezone, Currency: o.Currency, Website: o.Website, Industry: o.Industry, Phone: o.Phone,
		Address: o.Address, Role: role, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

// orgFields are the editable profile fields (create and update).
type orgFields struct {
	Timezone *string `json:"timezone" validate:"omitempty,timezone"`
	Currency *string `json:"currency" validate:"omitempty,iso4217"`
	Website  *string `json:"website" validate:"omitnil,max=300,url_or_empty"`
	Industry *string `json:"industry" validate:"omitempty,max=100"`
	Phone    *string `json:"phone" validate:"omitempty,max=50"`
	Address  *string `json:"address" validate:"omitempty,max=500"`
}

func (f *orgFields) apply(o *models.Organization) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&o.Timezone, f.Timezone)
	set(&o.Currency, f.Currency)
	set(&o.Website, f.Website)
	set(&o.Industry, f.Industry)
	set(&o.Phone, f.Phone)
	set(&o.Address, f.Address)
}

type createOrgRequest struct {
	Name string `json:"name" validate:"required,notblank,max=200"`
	orgFields
}

// createOrg creates the organization (provisioning, caller OWNER) and
// records its registration workflow in the same transaction. It waits
// briefly for provisioning: 201 when done, else 202 with a Location.
func (h *handlers) createOrg(c *fiber.Ctx) error {
	var req createOrgRequest
	p, err := userBody(c, &req)
	if err != nil {
		return err
	}
	now := models.Now()
	org := &models.Organization{ID: models.NewID(), Name: strings.TrimSpace(req.Name), Status: models.OrgProvisioning,
		Plan: models.PlanFree, Timezone: "UTC", Currency: "USD", CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now}
	req.apply(org)
	userID := p.UserID
	owner := &models.Member{ID: models.NewID(), OrgID: org.ID, UserID: &userID, Email: models.NormalizeEmail(p.Email),
		Name: p.Name, Role: models.RoleOwner, Status: models.MemberActive, CreatedAt: now, UpdatedAt: now}
	if owner.Email == "" {
		owner.Email = "user-" + p.UserID // tokens from an external provider may lack an e-mail
	}
	tx := h.Starter.In(c, web.Tx(c))
	if err := tx.Create(org).Error; err != nil {
		return err
	}
	if err := tx.Create(owner).Error; err != nil {
		return err
	}
	err = tx.Start(record.Start{WorkflowID: names.OrgRegistrationID(org.ID), Workflow: names.OrgRegistrationWorkflow,
		Input: workflows.OrgInput{OrgID: org.ID}, OrgID: org.ID, Kind: names.KindOrgRegistration})
	if err != nil {
		return err
	}
	// The provisional answer is committed first: the registration workflow
	// must see the organization, and a retry after a crash during the wait
	// replays this 202.
	c.Location("/crm/organization/" + org.ID)
	if err := web.CommitAccepted(c, toOrg(org, models.RoleOwner)); err != nil {
		return err
	}
	// The database, not Temporal, is the source of truth, so this works
	// even while Temporal is unreachable (→ 202). The organization exists
	// whatever the wait ends in: a failed wait still answers 202.
	defer web.Waiting(c)()
	waited, err := web.Await(c.UserContext(), registrationWait,
		func(ctx context.Context) (*models.Organization, error) { return models.FindOrg(ctx, h.DB, org.ID) },
		func(o *models.Organization) bool { return o.Status != models.OrgProvisioning })
	if err == nil {
		org = waited
	}
	status := fiber.StatusCreated
	if org.Status == models.OrgProvisioning {
		status = fiber.StatusAccepted
	}
	return c.Status(status).JSON(toOrg(org, models.RoleOwner))
}

type orgList struct {
	web.Page[orgResponse]
	// Synchronized is false when the identity service could not be reached
	// and the list comes from the local copy of the memberships.
	Synchronized bool `json:"synchronized"`
}

// listOrgs lists the caller's organizations, after synchronizing
// memberships from the identity service. Pending invitations are not
// memberships: signing up or signing in with an invited address grants
// nothing (POST /crm/invitations/accept with the token does).
func (h *handlers) listOrgs(c *fiber.Ctx) error {
	p := auth.From(c)
	ctx := c.UserContext()
	if p.IsKey() {
		org, err := models.FindOrg(ctx, h.DB, p.Key.OrgID)
		if err != nil {
			return err
		}
		return c.JSON(orgList{Page: web.Page[orgResponse]{Data: []orgResponse{toOrg(org, models.RoleAdmin)}}, Synchronized: true})
	}
	synced := h.syncFromIdentity(ctx, p)
	type row struct {
		models.Organization
		MemberRole string
	}
	var rows []row
	err := h.DB.WithContext(ctx).Table("organizations").Select("organizations.*, members.role AS member_role").
		Joins("JOIN members ON members.org_id = organizations.id").
		Where("members.user_id = ? AND members.status = ?", p.UserID, models.MemberActive).
		Order("organizations.created_at DESC, organizations.id DESC").Scan(&rows).Error
	if err != nil {
		return err
	}
	out := orgList{Page: web.Page[orgResponse]{Data: make([]orgResponse, len(rows))}, Synchronized: synced}
	for i := range rows {
		out.Data[i] = toOrg(&rows[i].Organization, rows[i].MemberRole)
	}
	return c.JSON(out)
}

// syncFromIdentity adds memberships the identity service knows and this
// copy lacks (e.g. granted by another product of the family). It never
// removes or downgrades: local changes are pushed to the identity service
// by OrgSync workflows and may not have arrived yet. Nor does it touch a
// member row of the caller's e-mail address — a pending invitation stays
// pending until its token is presented, and a removed member stays
// removed. It reports whether the identity service answered within its
// short timeout.
func (h *handlers) syncFromIdentity(ctx context.Context, p *auth.Principal) bool {
	if h.Identity == nil {
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	remote, err := h.Identity.UserOrgs(sctx, p.UserID)
	if err != nil {
		h.Log.WarnContext(ctx, "identity sync failed; answering from the local copy", "error", err)
		return false
	}
	for _, m := range remote {
		if !models.ValidID(m.OrgID) || !models.ValidRole(m.Role) {
			continue
		}
		err := h.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var org models.Organization
			if err := tx.Take(&org, "id = ? AND status = ?", m.OrgID, models.OrgActive).Error; err != nil {
				return nil // unknown here, or not active: nothing to mirror
			}
			var n int64
			if err := tx.Model(&models.Member{}).Where("org_id = ? AND (user_id = ? OR email = ?)", m.OrgID, p.UserID, models.NormalizeEmail(p.Email)).Count(&n).Error; err != nil || n > 0 {
				return err
			}
			userID, now := p.UserID, models.Now()
			return tx.Create(&models.Member{ID: models.NewID(), OrgID: m.OrgID, UserID: &userID, Email: memberEmail(p),
				Name: p.Name, Role: m.Role, Status: models.MemberActive, CreatedAt: now, UpdatedAt: now}).Error
		})
		if err != nil {
			h.Log.WarnContext(ctx, "mirroring an identity membership failed", "org_id", m.OrgID, "error", err)
		}
	}
	return true
}

func memberEmail(p *auth.Principal) string {
	if e := models.NormalizeEmail(p.Email); e != "" {
		return e
	}
	return "user-" + p.UserID
}

// startOrgSync records an OrgSync run for a change made in tx.
func startOrgSync(tx *record.Tx, orgID string) error {
	return tx.Start(record.Start{WorkflowID: names.OrgSyncID(orgID, models.NewID()), Workflow: names.OrgSyncWorkflow,
		Input: workflows.OrgInput{OrgID: orgID}, OrgID: orgID, Kind: names.KindOrgSync})
}

func (h *handlers) getOrg(c *fiber.Ctx) error {
	p := auth.From(c)
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	return c.JSON(toOrg(org, p.Role))
}

type updateOrgRequest struct {
	Name *string `json:"name" validate:"omitnil,notblank,max=200"`
	orgFields
}

func (h *handlers) updateOrg(c *fiber.Ctx) error {
	p := auth.From(c)
	var req updateOrgRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	org, err := models.FindOrg(c.UserContext(), models.LockForUpdate(tx.DB), p.OrgID)
	if err != nil {
		return err
	}
	renamed := req.Name != nil && strings.TrimSpace(*req.Name) != org.Name
	if req.Name != nil {
		org.Name = strings.TrimSpace(*req.Name)
	}
	req.apply(org)
	org.UpdatedAt = models.Now()
	// The registration workflow owns the status (models.ActiveOrgs relies
	// on active being final): never written back from here.
	if err := tx.Omit("status", "failure_reason").Save(org).Error; err != nil {
		return err
	}
	if renamed && org.Status == models.OrgActive {
		if err := startOrgSync(tx, org.ID); err != nil {
			return err
		}
	}
	return c.JSON(toOrg(org, p.Role))
}

// errLastOwner guards the rule that an organization always keeps an OWNER.
var errLastOwner = models.Err(models.ErrConflict, "last_owner", "The last OWNER cannot be removed or demoted; make another member OWNER first.")

func isNotFound(err error) bool {
	return errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, models.ErrNotFound)
}
