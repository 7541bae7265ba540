package models

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/SherClockHolmes/webpush-go"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// DefaultVAPIDKeyID is the row of vapid_keys the suite uses.
const DefaultVAPIDKeyID = "default"

// EnsureVAPIDKey returns the stored web-push key pair, generating and
// storing one on first use. Every API replica and worker calls it at start:
// when several start together, each may generate a pair, but only the first
// insert wins (ON CONFLICT DO NOTHING) and every caller reads back that one,
// so they all sign with the key browsers subscribed with.
func EnsureVAPIDKey(ctx context.Context, db *gorm.DB) (*VAPIDKey, error) {
	db = db.WithContext(ctx)
	var k VAPIDKey
	err := db.Take(&k, "id = ?", DefaultVAPIDKeyID).Error
	if err == nil {
		return &k, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("load VAPID key: %w", err)
	}
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return nil, fmt.Errorf("generate VAPID key: %w", err)
	}
	fresh := VAPIDKey{ID: DefaultVAPIDKeyID, PublicKey: public, PrivateKey: private, CreatedAt: Now()}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&fresh).Error; err != nil {
		return nil, fmt.Errorf("store VAPID key: %w", err)
	}
	if err := db.Take(&k, "id = ?", DefaultVAPIDKeyID).Error; err != nil {
		return nil, fmt.Errorf("load VAPID key: %w", err)
	}
	return &k, nil
}

// DecodePushKey decodes a key of a browser's PushSubscription: base64url as
// browsers send it (unpadded), also accepting padding and the standard
// alphabet as some clients re-encode it.
func DecodePushKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// CheckPushKeys validates a subscription's keys: p256dh must be the user
// agent's P-256 public key (an uncompressed point on the curve) and auth its
// 16-byte authentication secret (RFC 8291 §3). A subscription with bad keys
// could never be delivered to, so it is refused when registered.
func CheckPushKeys(p256dh, auth string) []FieldError {
	var bad []FieldError
	if b, err := DecodePushKey(p256dh); err != nil {
		bad = append(bad, FieldError{Field: "keys.p256dh", Code: "invalid", Message: "Must be base64url text."})
	} else if _, err := ecdh.P256().NewPublicKey(b); err != nil {
		bad = append(bad, FieldError{Field: "keys.p256dh", Code: "invalid", Message: "Must be an uncompressed P-256 public key (65 bytes)."})
	}
	if b, err := DecodePushKey(auth); err != nil {
		bad = append(bad, FieldError{Field: "keys.auth", Code: "invalid", Message: "Must be base64url text."})
	} else if len(b) != 16 {
		bad = append(bad, FieldError{Field: "keys.auth", Code: "invalid", Message: "Must be a 16-byte authentication secret."})
	}
	return bad
}
