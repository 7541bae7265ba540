// Package crm serves the CRM interface under /crm: organizations with their
// members and API keys (this file's routes), and — as later issues land —
// contacts, deals, leads, tasks and analytics.
package crm

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/transfers"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/identityclient"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
)

// Deps are the CRM's dependencies.
type Deps struct {
	DB       *gorm.DB
	Auth     *auth.Authenticator
	Starter  *outbox.Starter
	Identity *identityclient.Client
	Log      *slog.Logger
	// InviteURL is the front end's accept-link template ({token}), shown
	// with each new invitation when set (SUITE_INVITE_URL).
	InviteURL string
	// WebhookKeyRate limits the lead intake per crm_ key, a minute
	// (0: DefaultWebhookKeyRate).
	WebhookKeyRate int
	// WebhookEgress decides which outbound webhook URLs may be registered:
	// public https URLs, and the hosts of SUITE_WEBHOOK_ALLOW_HOSTS.
	WebhookEgress netguard.Policy
	// TemporalUI is the base address of the Temporal Web UI and Namespace
	// the workflows' namespace: an automation run links to its workflow.
	TemporalUI, Namespace string
}

type handlers struct {
	Deps
	// activeOrgs serves the public lead intake's organization check.
	activeOrgs *models.ActiveOrgs
	// temporalUI links an automation run to its workflow.
	temporalUI web.TemporalUI
}

// Routes mounts the CRM on r (the /crm group, already authenticated).
func Routes(r fiber.Router, d Deps) {
	h := &handlers{Deps: d, temporalUI: web.NewTemporalUI(d.TemporalUI, d.Namespace)}
	transfers.Routes(r, transfers.Deps{App: "crm", DB: d.DB, Starter: d.Starter, Org: h.orgOf})
	r.Get("/contacts", h.listContacts)
	r.Post("/contacts", h.createContact)
	r.Get("/contacts/duplicates", h.listDuplicates)
	r.Get("/contacts/:id", h.getContact)
	r.Get("/contacts/:id/timeline", h.contactTimeline)
	r.Post("/contacts/:id/merge", h.mergeContact)
	r.Put("/contacts/:id", h.updateContact)
	r.Delete("/contacts/:id", h.deleteContact)

	r.Get("/deals", h.listDeals)
	r.Post("/deals", h.createDeal)
	r.Get("/deals/:id", h.getDeal)
	r.Put("/deals/:id", h.updateDeal)
	r.Delete("/deals/:id", h.deleteDeal)

	r.Get("/leads", h.listLeads)
	r.Post("/leads", h.createLead)
	r.Get("/leads/:id", h.getLead)
	r.Put("/leads/:id", h.updateLead)
	r.Delete("/leads/:id", h.deleteLead)
	r.Get("/leads/:id/activities", h.listLeadActivities)
	r.Post("/leads/:id/activities", h.addLeadActivity)
	r.Post("/leads/:id/send-message", h.sendMessage)
	r.Post("/leads/:id/convert", h.convertLead)
	r.Get("/leads/intakes/:id", h.getIntake)

	r.Get("/tasks", h.listTasks)
	r.Post("/tasks", h.createTask)
	r.Get("/tasks/:id", h.getTask)
	r.Put("/tasks/:id", h.updateTask)
	r.Delete("/tasks/:id", h.deleteTask)

	r.Get("/analytics", h.analytics)
	r.Get("/analytics/leaderboard", h.leaderboard)

	r.Get("/organization", h.listOrgs)
	r.Post("/organization", h.createOrg)
	// The routes under /organization/:id act in that organization: any
	// member may read it and its members; the rest is for ADMIN users
	// (never an API key). The handlers find the caller's role there with
	// auth.From.
	r.Get("/organization/:id", h.inPathOrg, h.getOrg)
	r.Put("/organization/:id", h.inPathOrg, requireUserAdmin, h.updateOrg)
	r.Get("/organization/:id/members", h.inPathOrg, h.listMembers)
	r.Post("/organization/:id/members", h.inPathOrg, requireUserAdmin, h.inviteMember)
	r.Put("/organization/:id/members/:memberId", h.inPathOrg, requireUserAdmin, h.updateMember)
	r.Delete("/organization/:id/members/:memberId", h.inPathOrg, requireUserAdmin, h.removeMember)
	r.Post("/organization/:id/members/:memberId/invitation", h.inPathOrg, requireUserAdmin, h.resendInvitation)
	r.Post("/invitations/accept", h.acceptInvitation)
	r.Get("/organization/:id/apikeys", h.inPathOrg, requireUserAdmin, h.listKeys)
	r.Post("/organization/:id/apikeys", h.inPathOrg, requireUserAdmin, h.createKey)
	r.Delete("/organization/:id/apikeys/:keyId", h.inPathOrg, requireUserAdmin, h.revokeKey)
	r.Get("/organization/:id/webhooks", h.inPathOrg, requireUserAdmin, h.listWebhooks)
	r.Post("/organization/:id/webhooks", h.inPathOrg, requireUserAdmin, h.createWebhook)
	r.Get("/organization/:id/webhooks/:wid", h.inPathOrg, requireUserAdmin, h.getWebhook)
	r.Put("/organization/:id/webhooks/:wid", h.inPathOrg, requireUserAdmin, h.updateWebhook)
	r.Delete("/organization/:id/webhooks/:wid", h.inPathOrg, requireUserAdmin, h.deleteWebhook)
	r.Post("/organization/:id/webhooks/:wid/rotate-secret", h.inPathOrg, requireUserAdmin, h.rotateWebhookSecret)
	r.Post("/organization/:id/webhooks/:wid/test", h.inPathOrg, requireUserAdmin, h.testWebhook)
	r.Get("/organization/:id/webhooks/:wid/deliveries", h.inPathOrg, requireUserAdmin, h.listDeliveries)
	r.Post("/organization/:id/webhooks/:wid/deliveries/:did/replay", h.inPathOrg, requireUserAdmin, h.replayDelivery)

	r.Get("/organization/:id/fields", h.inPathOrg, h.listFields)
	r.Post("/organization/:id/fields", h.inPathOrg, requireUserAdmin, h.createField)
	r.Get("/organization/:id/fields/:fid", h.inPathOrg, h.getField)
	r.Patch("/organization/:id/fields/:fid", h.inPathOrg, requireUserAdmin, h.updateField)
	r.Delete("/organization/:id/fields/:fid", h.inPathOrg, requireUserAdmin, h.deleteField)
	r.Get("/organization/:id/automations", h.inPathOrg, requireUserAdmin, h.listAutomations)
	r.Post("/organization/:id/automations", h.inPathOrg, requireUserAdmin, h.createAutomation)
	r.Get("/organization/:id/automations/:aid", h.inPathOrg, requireUserAdmin, h.getAutomation)
	r.Put("/organization/:id/automations/:aid", h.inPathOrg, requireUserAdmin, h.updateAutomation)
	r.Delete("/organization/:id/automations/:aid", h.inPathOrg, requireUserAdmin, h.deleteAutomation)
	r.Post("/organization/:id/automations/:aid/test", h.inPathOrg, requireUserAdmin, h.testAutomation)
	r.Get("/organization/:id/automations/:aid/runs", h.inPathOrg, requireUserAdmin, h.listRuns)
	r.Get("/organization/:id/automations/:aid/runs/:rid", h.inPathOrg, requireUserAdmin, h.getRun)
	r.Post("/organization/:id/automations/:aid/runs/:rid/cancel", h.inPathOrg, requireUserAdmin, h.cancelRun)
}

// inPathOrg resolves the organization the path's :id names for the caller
// (404 when it is not theirs, as when it does not exist).
func (h *handlers) inPathOrg(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "The organization")
	if err != nil {
		return err
	}
	if _, err := h.Auth.ResolveOrg(c, id); err != nil {
		return err
	}
	return c.Next()
}

// requireUserAdmin lets only ADMIN and OWNER users through.
func requireUserAdmin(c *fiber.Ctx) error {
	if err := auth.RequireUserAdmin(auth.From(c)); err != nil {
		return err
	}
	return c.Next()
}

// pathID reads an id path parameter; a malformed id is simply not found.
func pathID(c *fiber.Ctx, name, what string) (string, error) {
	id := c.Params(name)
	if !models.ValidID(id) {
		return "", models.NotFound(what)
	}
	return string([]byte(id)), nil
}
