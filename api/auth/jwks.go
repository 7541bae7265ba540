package auth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// JWKSVerifier verifies access tokens with keys fetched from a JWKS URL, so
// any OIDC provider that publishes one can issue the suite's user tokens.
type JWKSVerifier struct {
	ctx     context.Context
	jwksURL string
	parser  *jwt.Parser

	mu   sync.Mutex
	keys keyfunc.Keyfunc
}

// NewJWKSVerifier verifies tokens against the keys at jwksURL (refreshed
// hourly, and on an unknown key id at most every 10 s). Keys are first
// fetched on first use, not here: the identity service may be this very
// process, not serving yet. ctx ends the background refresh.
func NewJWKSVerifier(ctx context.Context, jwksURL, issuer, audience string) (*JWKSVerifier, error) {
	return &JWKSVerifier{
		ctx: ctx, jwksURL: jwksURL,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{"EdDSA", "RS256", "ES256"}),
			jwt.WithIssuer(issuer),
			jwt.WithAudience(audience),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(30*time.Second),
		),
	}, nil
}

type tokenClaims struct {
	Email     string `json:"email"`
	Name      string `json:"name"`
	SessionID string `json:"sid"`
	Staff     bool   `json:"staff"`
	jwt.RegisteredClaims
}

// keyfunc returns the key source, creating it on first use.
func (v *JWKSVerifier) keyfunc() (keyfunc.Keyfunc, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys != nil {
		return v.keys, nil
	}
	kf, err := keyfunc.NewDefaultOverrideCtx(v.ctx, []string{v.jwksURL}, keyfunc.Override{
		RefreshUnknownKID: rate.NewLimiter(rate.Every(10*time.Second), 1),
		HTTPTimeout:       5 * time.Second,
		RefreshErrorHandlerFunc: func(string) func(context.Context, error) {
			return func(context.Context, error) {} // surfaces as 401s where it matters
		},
	})
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", v.jwksURL, err)
	}
	v.keys = kf
	return kf, nil
}

// Verify checks signature, algorithm (never "none"), issuer, audience and
// expiry.
func (v *JWKSVerifier) Verify(ctx context.Context, token string) (*UserClaims, error) {
	keys, err := v.keyfunc()
	if err != nil {
		return nil, err
	}
	var claims tokenClaims
	if _, err := v.parser.ParseWithClaims(token, &claims, keys.KeyfuncCtx(ctx)); err != nil {
		return nil, err
	}
	if claims.Subject == "" {
		return nil, fmt.Errorf("token has no subject")
	}
	return &UserClaims{Subject: claims.Subject, Email: claims.Email, Name: claims.Name, SessionID: claims.SessionID, Staff: claims.Staff}, nil
}
