// Package identity is the suite's central identity service (/identity/v1):
// users with argon2id passwords, a password grant that issues short-lived
// EdDSA access tokens and rotating refresh tokens, JWKS and OpenID discovery
// documents, and service-to-service endpoints that register organizations
// and memberships. The rest of the suite reaches it only over HTTP
// (internal/identityclient), so it can run as its own service, and
// verifies its tokens through the JWKS, so an external OIDC provider can
// replace it.
package identity

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alexedwards/argon2id"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/models"
)

// Config configures the service.
type Config struct {
	// Issuer is the public base URL of the service, e.g.
	// https://api.example.com/identity; it is the tokens' `iss`.
	Issuer string
	// Audience is the tokens' `aud`.
	Audience string
	// ServiceToken authenticates service-to-service calls.
	ServiceToken string
	// SigningSeed, when set, is the Ed25519 seed (32 bytes) to sign with;
	// otherwise a key is generated once and kept in the database.
	SigningSeed []byte
	AccessTTL   time.Duration
	RefreshTTL  time.Duration
	// PasswordParams tunes argon2id (nil: the library's defaults).
	PasswordParams *argon2id.Params
}

// DefaultAudience is the audience of tokens for the suite's APIs.
const DefaultAudience = "business-suite"

// Service is the identity service.
type Service struct {
	db   *gorm.DB
	cfg  Config
	log  *slog.Logger
	key  ed25519.PrivateKey
	kid  string
	now  func() time.Time
	fake string // a hash to compare against when the user does not exist
}

// New loads (or creates) the signing key and returns the service.
func New(ctx context.Context, db *gorm.DB, cfg Config, log *slog.Logger) (*Service, error) {
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = 15 * time.Minute
	}
	if cfg.RefreshTTL == 0 {
		cfg.RefreshTTL = 30 * 24 * time.Hour
	}
	if cfg.PasswordParams == nil {
		cfg.PasswordParams = argon2id.DefaultParams
	}
	if cfg.Issuer == "" || cfg.ServiceToken == "" {
		return nil, errors.New("identity: issuer and service token are required")
	}
	s := &Service{db: db, cfg: cfg, log: log, now: models.Now}
	if err := s.loadKey(ctx); err != nil {
		return nil, err
	}
	fake, err := argon2id.CreateHash("not a real password", cfg.PasswordParams)
	if err != nil {
		return nil, err
	}
	s.fake = fake
	return s, nil
}

// loadKey uses the configured seed, or the oldest stored key, or creates
// and stores one. ON CONFLICT makes concurrent first starts agree.
func (s *Service) loadKey(ctx context.Context) error {
	seed := s.cfg.SigningSeed
	if seed == nil {
		var stored models.IdentitySigningKey
		err := s.db.WithContext(ctx).Order("created_at").Take(&stored).Error
		switch {
		case err == nil:
			seed = stored.PrivateSeed
		case errors.Is(err, gorm.ErrRecordNotFound):
			seed = make([]byte, ed25519.SeedSize)
			if _, err := rand.Read(seed); err != nil {
				return err
			}
			row := models.IdentitySigningKey{KID: kidOf(ed25519.NewKeyFromSeed(seed)), PrivateSeed: seed, CreatedAt: models.Now()}
			if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
				return fmt.Errorf("store signing key: %w", err)
			}
			return s.loadKey(ctx) // read back whichever key won
		default:
			return fmt.Errorf("load signing key: %w", err)
		}
	}
	if len(seed) != ed25519.SeedSize {
		return fmt.Errorf("identity signing seed must be %d bytes", ed25519.SeedSize)
	}
	s.key = ed25519.NewKeyFromSeed(seed)
	s.kid = kidOf(s.key)
	return nil
}

func kidOf(key ed25519.PrivateKey) string {
	sum := sha256.Sum256(key.Public().(ed25519.PublicKey))
	return hex.EncodeToString(sum[:8])
}

// JWKS returns the public key set.
func (s *Service) JWKS() map[string]any {
	pub := s.key.Public().(ed25519.PublicKey)
	return map[string]any{"keys": []map[string]string{{
		"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": s.kid,
		"x": base64url(pub),
	}}}
}
