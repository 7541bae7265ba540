package models

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Invitation states.
const (
	InvitationPending  = "pending"
	InvitationAccepted = "accepted"
	// InvitationRevoked: withdrawn with its member, or replaced by a newer
	// invitation of the same member (resend).
	InvitationRevoked = "revoked"
)

// Invitation e-mail delivery states.
const (
	InviteEmailQueued   = "queued"
	InviteEmailSent     = "sent"
	InviteEmailFailed   = "failed"
	InviteEmailDisabled = "disabled" // no SMTP server configured
)

// InvitationTTL is how long an invitation can be accepted.
const InvitationTTL = 7 * 24 * time.Hour

// Invitation is the secret that lets the owner of an e-mail address take
// up an invited membership. Only the token's SHA-256 is stored; the token
// itself is derived from the invitation id with a server key
// (InvitationToken), so the API can show it once and the e-mail activity
// can recompute it without the token ever being written down — not in the
// database, not in workflow inputs or histories.
type Invitation struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	MemberID    string
	Email       string
	TokenHash   string
	Status      string
	ExpiresAt   time.Time
	EmailStatus string
	EmailError  string
	InvitedBy   string
	AcceptedBy  *string
	AcceptedAt  *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ServerSecret is a random secret the suite generates once and keeps in
// the database, shared by every API and worker process.
type ServerSecret struct {
	Name      string `gorm:"primaryKey"`
	Secret    []byte
	CreatedAt time.Time
}

// InvitationKeyName names the server secret invitation tokens derive from.
const InvitationKeyName = "invitation-token-key"

// EnsureServerSecret returns the secret called name, creating a random
// 32-byte one on first use. ON CONFLICT makes concurrent first calls agree.
func EnsureServerSecret(ctx context.Context, db *gorm.DB, name string) ([]byte, error) {
	var s ServerSecret
	err := db.WithContext(ctx).Take(&s, "name = ?", name).Error
	if err == nil {
		return s.Secret, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("load server secret %s: %w", name, err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	s = ServerSecret{Name: name, Secret: secret, CreatedAt: Now()}
	if err := db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&s).Error; err != nil {
		return nil, fmt.Errorf("store server secret %s: %w", name, err)
	}
	return EnsureServerSecret(ctx, db, name) // read back whichever secret won
}

// InvitationToken is the secret token of invitation id: an HMAC-SHA256 of
// the id under the server's invitation key, so nobody without the key can
// guess it and the key holder can always recompute it.
func InvitationToken(key []byte, invitationID string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("invitation\x00" + invitationID))
	return "inv_" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// InviteLink is the accept link for token: template (SUITE_INVITE_URL) with
// {token} replaced, or "" without a template. The API shows it when it
// creates an invitation and the e-mail activity sends it, so both build the
// same link.
func InviteLink(template, token string) string {
	if template == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{token}", token)
}
