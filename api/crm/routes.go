// Package crm serves the CRM interface under /crm: organizations with their
// members and API keys (this file's routes), and — as later issues land —
// contacts, deals, leads, tasks and analytics.
package crm

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/identityclient"
	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/models"
)

// Deps are the CRM's dependencies.
type Deps struct {
	DB       *gorm.DB
	Auth     *auth.Authenticator
	Starter  *outbox.Starter
	Identity *identityclient.Client
	Log      *slog.Logger
}

type handlers struct{ Deps }

// Routes mounts the CRM on r (the /crm group, already authenticated).
func Routes(r fiber.Router, d Deps) {
	h := &handlers{d}
	r.Get("/organization", h.listOrgs)
	r.Post("/organization", h.createOrg)
	r.Get("/organization/:id", h.getOrg)
	r.Put("/organization/:id", h.updateOrg)
	r.Get("/organization/:id/members", h.listMembers)
	r.Post("/organization/:id/members", h.inviteMember)
	r.Put("/organization/:id/members/:memberId", h.updateMember)
	r.Delete("/organization/:id/members/:memberId", h.removeMember)
	r.Get("/organization/:id/apikeys", h.listKeys)
	r.Post("/organization/:id/apikeys", h.createKey)
	r.Delete("/organization/:id/apikeys/:keyId", h.revokeKey)
}

// pathID reads an id path parameter; a malformed id is simply not found.
func pathID(c *fiber.Ctx, name, what string) (string, error) {
	id := c.Params(name)
	if !models.ValidID(id) {
		return "", models.Err(models.ErrNotFound, "not_found", "%s was not found.", what)
	}
	return string([]byte(id)), nil
}
