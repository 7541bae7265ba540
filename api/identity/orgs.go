package identity

import (
	"context"
	"errors"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/models"
)

// The service-to-service side: organizations registered and their
// memberships.

// RegisterOrg creates or renames an organization in tx (idempotent).
func (s *Service) RegisterOrg(tx *gorm.DB, id, name string) (created bool, err error) {
	now := s.now()
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&models.IdentityOrg{ID: id, Name: name, CreatedAt: now, UpdatedAt: now})
	if res.Error != nil || res.RowsAffected == 1 {
		return res.Error == nil, res.Error
	}
	return false, tx.Model(&models.IdentityOrg{}).Where("id = ?", id).
		Updates(map[string]any{"name": name, "updated_at": now}).Error
}

// DeregisterOrg removes an organization and its memberships in tx
// (idempotent).
func (s *Service) DeregisterOrg(tx *gorm.DB, id string) error {
	return tx.Delete(&models.IdentityOrg{}, "id = ?", id).Error
}

// Membership is one user's role in one organization.
type Membership struct {
	OrgID  string `json:"orgId"`
	UserID string `json:"userId"`
	Name   string `json:"orgName,omitempty"`
	Role   string `json:"role"`
}

// SetMembers makes the organization's memberships exactly ms, in tx
// (idempotent).
func (s *Service) SetMembers(tx *gorm.DB, orgID string, ms []Membership) error {
	var org models.IdentityOrg
	if err := tx.Take(&org, "id = ?", orgID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.Err(models.ErrNotFound, "org_not_registered", "The organization is not registered.")
		}
		return err
	}
	keep := make([]string, 0, len(ms))
	for _, m := range ms {
		keep = append(keep, m.UserID)
	}
	var known int64
	if len(keep) > 0 {
		if err := tx.Model(&models.IdentityUser{}).Where("id IN ?", keep).Count(&known).Error; err != nil {
			return err
		}
	}
	if int(known) != len(uniq(keep)) {
		return models.Invalid(models.FieldError{Field: "members", Code: "unknown_user", Message: "Every userId must be an existing user."})
	}
	now := s.now()
	for _, m := range ms {
		row := models.IdentityMembership{OrgID: orgID, UserID: m.UserID, Role: m.Role, CreatedAt: now, UpdatedAt: now}
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "org_id"}, {Name: "user_id"}},
			DoUpdates: clause.Assignments(map[string]any{"role": m.Role, "updated_at": now}),
		}).Create(&row).Error
		if err != nil {
			return err
		}
	}
	q := tx.Where("org_id = ?", orgID)
	if len(keep) > 0 {
		q = q.Where("user_id NOT IN ?", keep)
	}
	return q.Delete(&models.IdentityMembership{}).Error
}

// UserOrgs lists a user's memberships.
func (s *Service) UserOrgs(ctx context.Context, userID string) ([]Membership, error) {
	out := []Membership{}
	err := s.db.WithContext(ctx).Table("identity_memberships m").
		Select("m.org_id, m.user_id, o.name, m.role").
		Joins("JOIN identity_orgs o ON o.id = m.org_id").
		Where("m.user_id = ?", userID).Order("o.created_at").Scan(&out).Error
	return out, err
}

func uniq(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
