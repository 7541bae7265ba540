package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"strings"
	"time"

	"gorm.io/gorm"
)

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
