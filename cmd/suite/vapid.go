package main

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
)

// loadVAPID is the web-push identity: the configured key pair
// (VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY, checked to be one P-256 pair),
// else the pair kept in the database, generated on the first start. The
// API (which hands browsers the public key) and the workers (which sign
// with the private key) agree because they read the same row.
func loadVAPID(ctx context.Context, cfg Config, db *gorm.DB) (activities.VAPID, error) {
	v := activities.VAPID{PublicKey: cfg.VAPIDPublicKey, PrivateKey: cfg.VAPIDPrivateKey, Subject: cfg.VAPIDSubject}
	if u, err := url.Parse(v.Subject); err != nil || (u.Scheme != "mailto" && u.Scheme != "https") {
		return v, errors.New("VAPID_SUBJECT must be a mailto: or https: URL")
	}
	switch {
	case v.PublicKey == "" && v.PrivateKey == "":
		k, err := models.EnsureVAPIDKey(ctx, db)
		if err != nil {
			return v, err
		}
		v.PublicKey, v.PrivateKey = k.PublicKey, k.PrivateKey
		return v, nil
	case v.PublicKey == "" || v.PrivateKey == "":
		return v, errors.New("set both VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY, or neither (a pair is then generated and stored)")
	}
	private, err := models.DecodePushKey(v.PrivateKey)
	if err != nil {
		return v, fmt.Errorf("VAPID_PRIVATE_KEY must be base64url: %w", err)
	}
	key, err := ecdh.P256().NewPrivateKey(private)
	if err != nil {
		return v, fmt.Errorf("VAPID_PRIVATE_KEY is not a P-256 private key: %w", err)
	}
	public, err := models.DecodePushKey(v.PublicKey)
	if err != nil || !bytes.Equal(public, key.PublicKey().Bytes()) {
		return v, errors.New("VAPID_PUBLIC_KEY is not the public key of VAPID_PRIVATE_KEY")
	}
	// Unpadded base64url, as browsers and webpush-go want them.
	v.PublicKey, v.PrivateKey = base64.RawURLEncoding.EncodeToString(public), base64.RawURLEncoding.EncodeToString(private)
	return v, nil
}
