package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Roles. OWNER implies ADMIN.
const (
	RoleOwner = "OWNER"
	RoleAdmin = "ADMIN"
	RoleAgent = "AGENT"
)

// Organization states.
const (
	OrgProvisioning = "provisioning"
	OrgActive       = "active"
	OrgFailed       = "failed"
)

// Member states: an invited member holds a seat until its invitation is
// accepted (POST /crm/invitations/accept with the token) or withdrawn.
// A removed member is kept as a tombstone (it holds no seat and grants no
// access) so that a membership the identity service has not yet forgotten
// is not mirrored back in.
const (
	MemberActive  = "active"
	MemberInvited = "invited"
	MemberRemoved = "removed"
)

// Plan names.
const (
	PlanFree       = "free"
	PlanStarter    = "starter"
	PlanBusiness   = "business"
	PlanEnterprise = "enterprise"
)

// Plan holds the limits of a subscription plan; nil limits are unlimited.
type Plan struct {
	Name            string `gorm:"primaryKey"`
	Seats           *int
	TicketsPerMonth *int
	AI              bool `gorm:"column:ai"`
	// AITokensPerMonth is the monthly AI token quota (nil: unlimited).
	AITokensPerMonth *int64 `gorm:"column:ai_tokens_per_month"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Organization is a workspace: the CRM's orgId and the Helpdesk's
// x-workspace-id.
type Organization struct {
	ID            string `gorm:"primaryKey"`
	Name          string
	Status        string
	FailureReason string
	Plan          string
	Timezone      string
	Currency      string
	Website       string
	Industry      string
	Phone         string
	Address       string
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Member is a user's membership of an organization, or a pending invite.
type Member struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	UserID    *string
	Email     string
	Name      string
	Role      string
	Status    string
	Target    float64
	InvitedBy *string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IsAdmin tells whether role may administer the organization.
func IsAdmin(role string) bool { return role == RoleOwner || role == RoleAdmin }

// ValidRole tells whether r is a role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleAdmin || r == RoleAgent }

// NormalizeEmail lowercases and trims an e-mail address for storage and lookup.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// LockForUpdate adds FOR UPDATE on PostgreSQL. SQLite needs none: its
// IMMEDIATE transactions already serialise writers.
func LockForUpdate(tx *gorm.DB) *gorm.DB {
	if DialectFor(tx) == Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// FindOrg loads an organization.
func FindOrg(ctx context.Context, db *gorm.DB, id string) (*Organization, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	var org Organization
	if err := db.WithContext(ctx).Take(&org, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &org, nil
}

// FindPlan loads a plan by name.
func FindPlan(ctx context.Context, db *gorm.DB, name string) (*Plan, error) {
	var p Plan
	if err := db.WithContext(ctx).Take(&p, "name = ?", name).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &p, nil
}

// SeatsInUse counts active members plus pending invites.
func SeatsInUse(tx *gorm.DB, orgID string) (int64, error) {
	var n int64
	err := tx.Model(&Member{}).Where("org_id = ? AND status <> ?", orgID, MemberRemoved).Count(&n).Error
	return n, err
}

// CheckSeat fails with seat_limit_reached when adding one more member would
// exceed the plan. Call it inside the transaction that adds the member,
// after locking the organization row, so two invites cannot take the last
// seat together.
func CheckSeat(tx *gorm.DB, org *Organization) error {
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return err
	}
	if plan.Seats == nil {
		return nil
	}
	used, err := SeatsInUse(tx, org.ID)
	if err != nil {
		return err
	}
	if used >= int64(*plan.Seats) {
		return Err(ErrLimit, "seat_limit_reached", "All %d seats of the %s plan are in use (members and pending invites).", *plan.Seats, plan.Name)
	}
	return nil
}

// CountOwners counts active owners of an organization.
func CountOwners(tx *gorm.DB, orgID string) (int64, error) {
	var n int64
	err := tx.Model(&Member{}).Where("org_id = ? AND role = ? AND status = ?", orgID, RoleOwner, MemberActive).Count(&n).Error
	return n, err
}

// API key services and their key prefixes.
var keyPrefixes = map[string]string{"crm": "crm", "helpdesk": "hd", "ai": "ai"}

// KeyPrefix returns the key prefix of a service ("" for an unknown service).
func KeyPrefix(service string) string { return keyPrefixes[service] }

// ServiceOfKey returns the service a key's prefix names ("" when none).
func ServiceOfKey(key string) string {
	prefix, _, ok := strings.Cut(key, "_")
	if !ok {
		return ""
	}
	for service, p := range keyPrefixes {
		if p == prefix {
			return service
		}
	}
	return ""
}

// APIKey is an organization's key for one service. The key text is shown
// once; only its SHA-256 is kept.
type APIKey struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	Name       string
	Service    string
	Prefix     string
	Last4      string `gorm:"column:last4"`
	Hash       string
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewAPIKey creates a key for service and returns it with its secret text.
func NewAPIKey(orgID, service, name, createdBy string) (*APIKey, string, error) {
	prefix := KeyPrefix(service)
	if prefix == "" {
		return nil, "", Invalid(FieldError{Field: "service", Code: "oneof", Message: "Must be one of: crm, helpdesk, ai."})
	}
	var b strings.Builder
	b.WriteString(prefix + "_")
	max := big.NewInt(int64(len(base62)))
	for range 40 {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return nil, "", err
		}
		b.WriteByte(base62[n.Int64()])
	}
	secret := b.String()
	return &APIKey{
		ID: NewID(), OrgID: orgID, Name: name, Service: service, Prefix: prefix,
		Last4: secret[len(secret)-4:], Hash: HashKey(secret), CreatedBy: createdBy, CreatedAt: Now(),
	}, secret, nil
}

// HashKey is the stored form of a key (and of any other bearer secret).
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SetOrgPlan moves an organization to another plan (operators and billing).
func SetOrgPlan(ctx context.Context, db *gorm.DB, orgID, plan string) error {
	if _, err := FindPlan(ctx, db, plan); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Invalid(FieldError{Field: "plan", Code: "oneof", Message: "Unknown plan " + plan + "."})
		}
		return err
	}
	if !ValidID(orgID) {
		return ErrNotFound
	}
	res := db.WithContext(ctx).Model(&Organization{}).Where("id = ?", orgID).Updates(map[string]any{"plan": plan, "updated_at": Now()})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// CreateAPIKey creates and stores a key; the secret is returned once.
func CreateAPIKey(ctx context.Context, db *gorm.DB, orgID, service, name, createdBy string) (*APIKey, string, error) {
	if _, err := FindOrg(ctx, db, orgID); err != nil {
		return nil, "", err
	}
	k, secret, err := NewAPIKey(orgID, service, name, createdBy)
	if err != nil {
		return nil, "", err
	}
	return k, secret, db.WithContext(ctx).Create(k).Error
}

// Location is the organization's time zone (UTC when unset or unknown to
// this system's time zone database).
func (o *Organization) Location() *time.Location {
	if o.Timezone != "" {
		if loc, err := time.LoadLocation(o.Timezone); err == nil {
			return loc
		}
	}
	return time.UTC
}

// CheckMember fails with a 422 on field unless memberID is a (not removed)
// member of orgID; nil or "" passes.
func CheckMember(db *gorm.DB, orgID, field string, memberID *string) error {
	if memberID == nil || *memberID == "" {
		return nil
	}
	if ValidID(*memberID) {
		var n int64
		if err := db.Model(&Member{}).Where("id = ? AND org_id = ? AND status <> ?", *memberID, orgID, MemberRemoved).Count(&n).Error; err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
	}
	return Invalid(FieldError{Field: field, Code: "not_a_member", Message: "Must be the id of a member of this organization."})
}
