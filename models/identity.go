package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Identity-service entities. They belong to the identity service (api/identity)
// alone: the CRM reaches them only over HTTP, so the service can be split out.

// IdentityUser is an account that can sign in.
type IdentityUser struct {
	ID           string `gorm:"primaryKey"`
	Email        string
	Name         string
	PasswordHash string
	// Staff marks billing staff: their tokens carry the `staff` claim and
	// open the operator API (/ops/v1). Granted from the shell only.
	Staff     bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IdentityRefreshToken is one rotating refresh token. Tokens of one sign-in
// form a family; presenting a spent token revokes the whole family.
type IdentityRefreshToken struct {
	ID        string `gorm:"primaryKey"`
	UserID    string
	FamilyID  string
	TokenHash string
	ExpiresAt time.Time
	UsedAt    *time.Time
	RevokedAt *time.Time
	CreatedAt time.Time
}

// IdentitySigningKey is an Ed25519 key that signs access tokens.
type IdentitySigningKey struct {
	KID         string `gorm:"column:kid;primaryKey"`
	PrivateSeed []byte
	CreatedAt   time.Time
}

// IdentityOrg is an organization as registered in the identity service.
type IdentityOrg struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IdentityMembership says a user belongs to an organization with a role.
type IdentityMembership struct {
	OrgID     string `gorm:"primaryKey"`
	UserID    string `gorm:"primaryKey"`
	Role      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IdentityRevokedSession is a sign-in (a refresh-token family, the `sid`
// of its access tokens) revoked before its access tokens expired. Every
// API process refuses access tokens of these sessions; a row is kept until
// ExpiresAt, when the last access token of the session has expired anyway.
type IdentityRevokedSession struct {
	SessionID string `gorm:"primaryKey"`
	RevokedAt time.Time
	ExpiresAt time.Time
}

// SetUserStaff grants (staff true) or revokes billing staff for the user
// with that e-mail address and returns the user. An unknown address is
// ErrNotFound. It takes effect with the user's next access token.
func SetUserStaff(ctx context.Context, db *gorm.DB, email string, staff bool) (*IdentityUser, error) {
	var u IdentityUser
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&u, "email = ?", NormalizeEmail(email)).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		u.Staff, u.UpdatedAt = staff, Now()
		return tx.Model(&IdentityUser{}).Where("id = ?", u.ID).Updates(map[string]any{"staff": staff, "updated_at": u.UpdatedAt}).Error
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}
