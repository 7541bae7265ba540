package crm

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

type keyResponse struct {
	ID         string     `json:"id"`
	OrgID      string     `json:"orgId"`
	Name       string     `json:"name"`
	Service    string     `json:"service"`
	Prefix     string     `json:"prefix"`
	Last4      string     `json:"last4"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	// Key is the secret, present only in the response that creates it.
	Key string `json:"key,omitempty"`
}

func toKey(k *models.APIKey) keyResponse {
	return keyResponse{ID: k.ID, OrgID: k.OrgID, Name: k.Name, Service: k.Service, Prefix: k.Prefix, Last4: k.Last4,
		CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

func keyCursor(k *models.APIKey) web.Cursor { return web.Cursor{CreatedAt: k.CreatedAt, ID: k.ID} }

func (h *handlers) listKeys(c *fiber.Ctx) error {
	return web.List(c, h.DB, web.In(web.Scope{OrgID: auth.From(c).OrgID}), web.Listing[models.APIKey, keyResponse]{Cursor: keyCursor, View: toKey})
}

type createKeyRequest struct {
	Name    string `json:"name" validate:"required,notblank,max=100"`
	Service string `json:"service" validate:"required,oneof=crm helpdesk ai"`
}

// createKey generates a key; its text is in this response only.
func (h *handlers) createKey(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createKeyRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	k, secret, err := models.CreateAPIKey(c.UserContext(), web.Tx(c), p.OrgID, req.Service, strings.TrimSpace(req.Name), p.UserID)
	if err != nil {
		return err
	}
	out := toKey(k)
	out.Key = secret
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Location("/crm/organization/" + p.OrgID + "/apikeys/" + k.ID)
	return c.Status(fiber.StatusCreated).JSON(out)
}

// revokeKey revokes a key at once (idempotent).
func (h *handlers) revokeKey(c *fiber.Ctx) error {
	p := auth.From(c)
	keyID, err := pathID(c, "keyId", "The API key")
	if err != nil {
		return err
	}
	res := web.Tx(c).Model(&models.APIKey{}).
		Where("id = ? AND org_id = ?", keyID, p.OrgID).
		Update("revoked_at", gorm.Expr("COALESCE(revoked_at, ?)", models.Now()))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return models.NotFound("The API key")
	}
	web.AfterCommit(c, h.Auth.ForgetKeys) // the other processes see the epoch move
	return c.SendStatus(fiber.StatusNoContent)
}
