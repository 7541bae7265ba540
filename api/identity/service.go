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
	"github.com/golang-jwt/jwt/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
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

// Claims are the claims of an access token.
type Claims struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	// SessionID (`sid`) is the sign-in the token belongs to: its refresh
	// token family. Revoking the sign-in refuses its access tokens too.
	SessionID string `json:"sid,omitempty"`
	// Staff (`staff`) marks billing staff, who may use the operator API.
	Staff bool `json:"staff,omitempty"`
	jwt.RegisteredClaims
}

// TokenPair is the answer of a grant.
type TokenPair struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

func (s *Service) accessToken(u *models.IdentityUser, session string) (string, error) {
	now := s.now()
	claims := Claims{
		Email:     u.Email,
		Name:      u.Name,
		SessionID: session,
		Staff:     u.Staff,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.cfg.Issuer,
			Subject:   u.ID,
			Audience:  jwt.ClaimStrings{s.cfg.Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.AccessTTL)),
			ID:        models.NewID(),
		},
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = s.kid
	return tok.SignedString(s.key)
}

// issue creates a token pair; the refresh token joins family.
func (s *Service) issue(tx *gorm.DB, u *models.IdentityUser, family string) (*TokenPair, error) {
	access, err := s.accessToken(u, family)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	refresh := "rt_" + hex.EncodeToString(raw)
	row := models.IdentityRefreshToken{
		ID: models.NewID(), UserID: u.ID, FamilyID: family, TokenHash: models.HashKey(refresh),
		ExpiresAt: s.now().Add(s.cfg.RefreshTTL), CreatedAt: s.now(),
	}
	if err := tx.Create(&row).Error; err != nil {
		return nil, err
	}
	return &TokenPair{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(s.cfg.AccessTTL.Seconds()), RefreshToken: refresh}, nil
}

var errInvalidGrant = models.Err(models.ErrUnauthorized, "invalid_grant", "The e-mail address or password is wrong.")

// NewUser is a user with the password's argon2id hash: slow on purpose,
// so it is made before the transaction that records the user begins (on
// SQLite that transaction holds the write lock).
func (s *Service) NewUser(email, password, name string) (*models.IdentityUser, error) {
	hash, err := argon2id.CreateHash(password, s.cfg.PasswordParams)
	if err != nil {
		return nil, err
	}
	return &models.IdentityUser{ID: models.NewID(), Email: models.NormalizeEmail(email), Name: name, PasswordHash: hash}, nil
}

// SignUp records u (a NewUser) in tx; an e-mail address already taken is a
// 409.
func (s *Service) SignUp(tx *gorm.DB, u *models.IdentityUser) error {
	if err := tx.Create(u).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "email_taken", "An account with this e-mail address exists; sign in instead.")
		}
		return err
	}
	return nil
}

// Authenticate checks the credentials, reading on the pool: it hashes the
// password, which takes long on purpose, before anything is written.
func (s *Service) Authenticate(ctx context.Context, email, password string) (*models.IdentityUser, error) {
	var u models.IdentityUser
	err := s.db.WithContext(ctx).Take(&u, "email = ?", models.NormalizeEmail(email)).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// Spend the same time as for a real account: no user enumeration by timing.
		_, _ = argon2id.ComparePasswordAndHash(password, s.fake)
		return nil, errInvalidGrant
	}
	if err != nil {
		return nil, err
	}
	ok, err := argon2id.ComparePasswordAndHash(password, u.PasswordHash)
	if err != nil || !ok {
		return nil, errInvalidGrant
	}
	return &u, nil
}

// SignIn issues u's tokens in a new family (a sign-in session), in tx.
func (s *Service) SignIn(tx *gorm.DB, u *models.IdentityUser) (*TokenPair, error) {
	return s.issue(tx, u, models.NewID())
}

// ErrRefreshReused answers a refresh token presented a second time: it
// leaked (or the client raced itself), and Refresh has revoked its whole
// sign-in in the transaction, a write that must stand although the answer
// is a refusal.
var ErrRefreshReused = models.Err(models.ErrUnauthorized, "refresh_token_reused",
	"This refresh token was already used. Every session of this sign-in was revoked; sign in again.")

// Refresh rotates a refresh token in tx. Presenting a token that was
// already used revokes the whole family and is ErrRefreshReused: the caller
// must sign in again.
func (s *Service) Refresh(tx *gorm.DB, refresh string) (*TokenPair, error) {
	var rt models.IdentityRefreshToken
	err := models.LockForUpdate(tx).Take(&rt, "token_hash = ?", models.HashKey(refresh)).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Err(models.ErrUnauthorized, "invalid_refresh_token", "The refresh token is not valid.")
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case rt.RevokedAt != nil:
		return nil, models.Err(models.ErrUnauthorized, "invalid_refresh_token", "The refresh token was revoked; sign in again.")
	case rt.UsedAt != nil:
		if err := s.revokeSession(tx, rt.FamilyID, now); err != nil {
			return nil, err
		}
		s.log.WarnContext(tx.Statement.Context, "refresh token reused; family revoked")
		return nil, ErrRefreshReused
	case rt.ExpiresAt.Before(now):
		return nil, models.Err(models.ErrUnauthorized, "invalid_refresh_token", "The refresh token expired; sign in again.")
	}
	res := tx.Model(&models.IdentityRefreshToken{}).Where("id = ? AND used_at IS NULL", rt.ID).Update("used_at", now)
	if res.Error != nil {
		return nil, res.Error
	}
	var u models.IdentityUser
	if err := tx.Take(&u, "id = ?", rt.UserID).Error; err != nil {
		return nil, err
	}
	return s.issue(tx, &u, rt.FamilyID)
}

// revokeSession ends a sign-in: its refresh tokens stop working at once,
// and its access tokens are listed as revoked until the last of them has
// expired, so that every API process refuses them (api/auth reads the list
// every few seconds).
func (s *Service) revokeSession(tx *gorm.DB, family string, now time.Time) error {
	err := tx.Model(&models.IdentityRefreshToken{}).Where("family_id = ? AND revoked_at IS NULL", family).
		Update("revoked_at", now).Error
	if err != nil {
		return err
	}
	row := models.IdentityRevokedSession{SessionID: family, RevokedAt: now, ExpiresAt: now.Add(s.cfg.AccessTTL + revokedSessionLeeway)}
	return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
}

// revokedSessionLeeway covers the clock skew verifiers allow on expiry.
const revokedSessionLeeway = time.Minute

// SessionRevoked tells whether the sign-in session was revoked.
func (s *Service) SessionRevoked(ctx context.Context, session string) (bool, error) {
	if session == "" {
		return false, nil
	}
	var n int64
	err := s.db.WithContext(ctx).Model(&models.IdentityRevokedSession{}).Where("session_id = ?", session).Count(&n).Error
	return n > 0, err
}

// PurgeRevokedSessions forgets revoked sessions whose access tokens have
// all expired; the API runs it periodically.
func PurgeRevokedSessions(ctx context.Context, db *gorm.DB, now time.Time) (int64, error) {
	res := db.WithContext(ctx).Where("expires_at < ?", now).Delete(&models.IdentityRevokedSession{})
	return res.RowsAffected, res.Error
}

// User loads a user by id.
func (s *Service) User(ctx context.Context, id string) (*models.IdentityUser, error) {
	var u models.IdentityUser
	if !models.ValidID(id) {
		return nil, models.ErrNotFound
	}
	if err := s.db.WithContext(ctx).Take(&u, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, models.ErrNotFound
		}
		return nil, err
	}
	return &u, nil
}

// Verify checks an access token signed by this service (used by /me; the
// other interfaces verify through the JWKS).
func (s *Service) Verify(token string) (*Claims, error) {
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.key.Public(), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithIssuer(s.cfg.Issuer),
		jwt.WithAudience(s.cfg.Audience), jwt.WithExpirationRequired())
	if err != nil {
		return nil, models.Err(models.ErrUnauthorized, "invalid_token", "The access token is not valid.")
	}
	return &claims, nil
}

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

// JWKS returns the public key set.
func (s *Service) JWKS() map[string]any {
	pub := s.key.Public().(ed25519.PublicKey)
	return map[string]any{"keys": []map[string]string{{
		"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": s.kid,
		"x": base64url(pub),
	}}}
}

func uniq(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
