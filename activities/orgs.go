package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/identityclient"
	"github.com/business-suite/suite/models"
)

// Orgs are the activities of organization registration and membership sync.
type Orgs struct {
	DB       *gorm.DB
	Identity *identityclient.Client
}

// identityErr turns an identity-service failure into an activity error:
// a 4xx will never succeed, so it is not retried.
func identityErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ie *identityclient.Error
	if identityclient.Permanent(err) && errors.As(err, &ie) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("The identity service refused to %s (%d %s).", op, ie.Status, ie.Code), ErrTypeIdentityRejected, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (a *Orgs) org(ctx context.Context, orgID string) (*models.Organization, error) {
	org, err := models.FindOrg(ctx, a.DB, orgID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("organization "+orgID+" does not exist", ErrTypeNotFound, err)
	}
	return org, err
}

// RegisterOrg registers the organization in the identity service (an
// idempotent PUT, safe to retry).
func (a *Orgs) RegisterOrg(ctx context.Context, orgID string) error {
	org, err := a.org(ctx, orgID)
	if err != nil {
		return err
	}
	return identityErr("register the organization", a.Identity.RegisterOrg(ctx, org.ID, org.Name))
}

// SyncMembers makes the identity service's memberships of the organization
// equal the active members here (pending invites have no user yet).
func (a *Orgs) SyncMembers(ctx context.Context, orgID string) error {
	if _, err := a.org(ctx, orgID); err != nil {
		return err
	}
	var members []models.Member
	if err := a.DB.WithContext(ctx).Where("org_id = ? AND status = ? AND user_id IS NOT NULL", orgID, models.MemberActive).
		Order("created_at").Find(&members).Error; err != nil {
		return err
	}
	ms := make([]identityclient.Membership, len(members))
	for i, m := range members {
		ms[i] = identityclient.Membership{OrgID: orgID, UserID: *m.UserID, Role: m.Role}
	}
	return identityErr("register the members", a.Identity.SetMembers(ctx, orgID, ms))
}

// DeregisterOrg removes the organization from the identity service
// (compensation; idempotent).
func (a *Orgs) DeregisterOrg(ctx context.Context, orgID string) error {
	return identityErr("deregister the organization", a.Identity.DeregisterOrg(ctx, orgID))
}

// SeedDefaults fills the defaults a new organization starts with.
func (a *Orgs) SeedDefaults(ctx context.Context, orgID string) error {
	db := a.DB.WithContext(ctx).Model(&models.Organization{}).Where("id = ?", orgID)
	if err := db.Where("timezone = ''").Update("timezone", "UTC").Error; err != nil {
		return err
	}
	return a.DB.WithContext(ctx).Model(&models.Organization{}).Where("id = ? AND currency = ''", orgID).Update("currency", "USD").Error
}

// MarkOrgActive ends provisioning.
func (a *Orgs) MarkOrgActive(ctx context.Context, orgID string) error {
	return a.DB.WithContext(ctx).Model(&models.Organization{}).Where("id = ? AND status = ?", orgID, models.OrgProvisioning).
		Updates(map[string]any{"status": models.OrgActive, "failure_reason": "", "updated_at": models.Now()}).Error
}

// MarkOrgFailed records why provisioning failed.
func (a *Orgs) MarkOrgFailed(ctx context.Context, orgID, reason string) error {
	return a.DB.WithContext(ctx).Model(&models.Organization{}).Where("id = ? AND status = ?", orgID, models.OrgProvisioning).
		Updates(map[string]any{"status": models.OrgFailed, "failure_reason": reason, "updated_at": models.Now()}).Error
}
