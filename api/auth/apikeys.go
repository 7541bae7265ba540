package auth

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// API keys: looked up through the key cache, checked against their
// service, and their last use recorded.

// key looks up an API key and checks it belongs to service.
func (a *Authenticator) key(c *fiber.Ctx, secret, service string) (*models.APIKey, error) {
	if models.ServiceOfKey(secret) == "" {
		return nil, errInvalidKey
	}
	hash := models.HashKey(secret)
	k, cached, epoch := a.keys.get(c.UserContext(), hash)
	if !cached {
		err := a.db.WithContext(c.UserContext()).Take(&k, "hash = ?", hash).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, errInvalidKey
		}
		if err != nil {
			return nil, err
		}
		a.keys.put(k, epoch)
	}
	if k.RevokedAt != nil {
		return nil, errRevokedKey
	}
	if k.Service != service {
		return nil, models.Err(models.ErrForbidden, "wrong_service_key",
			"This is a %s key; this interface takes %s_ keys.", k.Service, models.KeyPrefix(service))
	}
	a.touch(&k)
	return &k, nil
}

// KnownKey tells whether secret is a valid key of service that this
// process verified lately and still holds in its key cache: no database
// round trip beyond the cache's once-a-second epoch check. A sender with
// such a key is not guessing keys.
func (a *Authenticator) KnownKey(c *fiber.Ctx, secret, service string) bool {
	if models.ServiceOfKey(secret) != service {
		return false
	}
	k, cached, _ := a.keys.get(c.UserContext(), models.HashKey(secret))
	return cached && k.RevokedAt == nil && k.Service == service
}

// touch maintains lastUsedAt cheaply: at most one write per key per minute,
// off the request path.
func (a *Authenticator) touch(k *models.APIKey) {
	now := models.Now()
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < time.Minute {
		return
	}
	if last, ok := a.touched.Load(k.ID); ok && now.Sub(last.(time.Time)) < time.Minute {
		return
	}
	a.touched.Store(k.ID, now)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.db.WithContext(ctx).Model(&models.APIKey{}).Where("id = ?", k.ID).Update("last_used_at", now).Error
	}()
}

// ForgetKeys empties this process's key cache; the revocation handler
// calls it so that the revoking process refuses the key at once.
func (a *Authenticator) ForgetKeys() { a.keys.forget() }

// APIKey checks an API key of service (for routes authenticated by a key
// in another header, such as the lead webhook's x-api-key).
func (a *Authenticator) APIKey(c *fiber.Ctx, secret, service string) (*models.APIKey, error) {
	return a.key(c, secret, service)
}
