package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/internal/identityclient"
)

// identityWiring is the identity service (when served here), its client and
// the authenticator that verifies its tokens.
type identityWiring struct {
	service *identity.Service
	client  *identityclient.Client
	auth    *auth.Authenticator
	url     string
}

// identityURL is IDENTITY_URL, or this process's own /identity.
func identityURL(cfg Config, selfBase string) string {
	if cfg.IdentityURL != "" {
		return strings.TrimRight(cfg.IdentityURL, "/")
	}
	return selfBase + "/identity"
}

// serviceToken is IDENTITY_SERVICE_TOKEN; in dev mode one is generated once
// and kept in the data directory. Production processes must configure it.
func serviceToken(cfg Config, dev bool) (string, error) {
	if cfg.IdentityServiceToken != "" {
		return cfg.IdentityServiceToken, nil
	}
	if !dev {
		return "", errors.New("IDENTITY_SERVICE_TOKEN is required (a long random secret shared by the api and worker processes)")
	}
	path := filepath.Join(cfg.DataDir, "identity-service-token")
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("store the dev identity service token: %w", err)
	}
	return token, nil
}

// wireIdentity builds the identity pieces. serve says whether this process
// serves the identity service (api, dev) or only calls it (worker).
func wireIdentity(ctx context.Context, cfg Config, db *gorm.DB, selfBase string, serve, dev bool, log *slog.Logger) (*identityWiring, error) {
	token, err := serviceToken(cfg, dev)
	if err != nil {
		return nil, err
	}
	w := &identityWiring{url: identityURL(cfg, selfBase)}
	w.client = identityclient.New(w.url, token, 5*time.Second)
	if !serve {
		return w, nil
	}
	issuer := cfg.IdentityIssuer
	if issuer == "" {
		issuer = w.url
	}
	var seed []byte
	if cfg.IdentitySigningKey != "" {
		if seed, err = base64.StdEncoding.DecodeString(cfg.IdentitySigningKey); err != nil {
			return nil, fmt.Errorf("IDENTITY_SIGNING_KEY must be base64: %w", err)
		}
	}
	w.service, err = identity.New(ctx, db, identity.Config{
		Issuer: issuer, Audience: cfg.IdentityAudience, ServiceToken: token, SigningSeed: seed,
	}, log.With("component", "identity"))
	if err != nil {
		return nil, err
	}
	jwksURL := cfg.IdentityJWKSURL
	if jwksURL == "" {
		jwksURL = w.url + "/.well-known/jwks.json"
	}
	verifier, err := auth.NewJWKSVerifier(ctx, jwksURL, issuer, cfg.IdentityAudience)
	if err != nil {
		return nil, err
	}
	w.auth = auth.New(db, verifier)
	return w, nil
}
