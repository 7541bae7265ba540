package identity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/models"
)

// The tokens: short-lived EdDSA access tokens and rotating refresh tokens
// of a sign-in session, and the sessions revoked.

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
