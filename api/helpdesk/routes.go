// Package helpdesk serves the Helpdesk interface under /helpdesk: tickets
// and comments, customers with their history and billable time, the
// knowledge base (managed here, read publicly under /public/kb), web-push
// notifications and the ticket dashboard.
package helpdesk

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/transfers"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/netguard"
)

// Deps are the Helpdesk's dependencies.
type Deps struct {
	DB      *gorm.DB
	Auth    *auth.Authenticator
	Starter *outbox.Starter
	Log     *slog.Logger
	// VAPIDPublicKey is the web-push application server key (base64url).
	VAPIDPublicKey string
	// AutoCloseAfter is how long a solved ticket stays solved before it is
	// closed (default 4 days).
	AutoCloseAfter time.Duration
	// PushEgress decides which push endpoints may be registered: https on
	// the public internet only (its allow-list is for tests).
	PushEgress netguard.Policy
	// MailDomain is the domain of the workspaces' e-mail addresses
	// (SUITE_MAIL_DOMAIN); "" turns the e-mail channel off.
	MailDomain string
	// MailOutbound tells whether the workers send e-mail (SMTP_URL, or
	// suite dev's sink): then a public agent reply is e-mailed to the
	// ticket's requester.
	MailOutbound bool
}

type handlers struct{ Deps }

// PublicRoutes mounts the routes that need no credential: the public help
// center and the VAPID key. They are rate-limited per client address.
func PublicRoutes(r fiber.Router, d Deps) {
	h := &handlers{d}
	limit := web.RateLimit(d.DB, "public-helpdesk", 120, time.Minute, nil)
	r.Get("/public/kb/:workspaceId/categories", limit, h.publicCategories)
	r.Get("/public/kb/:workspaceId/search", limit, h.publicSearch)
	r.Get("/public/kb/:workspaceId/articles/:slug", limit, h.publicArticle)
	r.Get("/notifications/vapidPublicKey", limit, h.vapidPublicKey)
}

// Routes mounts the authenticated Helpdesk routes on r (the /helpdesk
// group, behind the Helpdesk credential middleware).
func Routes(r fiber.Router, d Deps) {
	h := &handlers{d}
	transfers.Routes(r, transfers.Deps{App: "helpdesk", DB: d.DB, Starter: d.Starter,
		Org: func(c *fiber.Ctx, _ string) (*auth.Principal, error) { return auth.From(c), nil }})
	r.Get("/tickets", h.listTickets)
	r.Post("/tickets", h.createTicket)
	r.Get("/tickets/:id", h.getTicket)
	r.Put("/tickets/:id", h.updateTicket)
	r.Delete("/tickets/:id", h.deleteTicket)
	r.Get("/tickets/:id/comments", h.listComments)
	r.Post("/tickets/:id/comments", h.addComment)
	r.Get("/tickets/:id/attachments", h.listAttachments)
	r.Get("/tickets/:id/attachments/:attachmentId", h.attachment)

	r.Get("/customers", h.listCustomers)
	r.Post("/customers", h.createCustomer)
	r.Get("/customers/:id", h.getCustomer)
	r.Put("/customers/:id", h.updateCustomer)
	r.Delete("/customers/:id", h.deleteCustomer)
	r.Get("/customers/:id/tickets", h.customerTickets)
	r.Get("/customers/:id/interactions", h.customerInteractions)
	r.Get("/customers/:id/activity", h.customerActivity)
	r.Get("/customers/:id/timeline", h.customerTimeline)
	r.Post("/customers/:id/merge", h.mergeCustomer)
	r.Get("/customers/:id/time-entries", h.listTimeEntries)
	r.Post("/customers/:id/time-entries", h.addTimeEntry)

	r.Get("/knowledge-base/categories", h.listCategories)
	r.Post("/knowledge-base/categories", h.createCategory)
	r.Get("/knowledge-base/categories/:id", h.getCategory)
	r.Put("/knowledge-base/categories/:id", h.updateCategory)
	r.Delete("/knowledge-base/categories/:id", h.deleteCategory)
	r.Get("/knowledge-base/articles", h.listArticles)
	r.Post("/knowledge-base/articles", h.createArticle)
	r.Get("/knowledge-base/articles/:id", h.getArticle)
	r.Put("/knowledge-base/articles/:id", h.updateArticle)
	r.Delete("/knowledge-base/articles/:id", h.deleteArticle)

	r.Get("/notifications", h.listNotifications)
	r.Post("/notifications/read", h.readNotifications)
	r.Post("/notifications/subscribe", h.subscribe)

	r.Get("/analytics/dashboard", h.dashboard)
	r.Get("/analytics/sla", h.slaAnalytics)

	r.Get("/sla-policy", h.getSLAPolicy)
	r.Put("/sla-policy", h.putSLAPolicy)
	r.Post("/sla-policy/apply", h.applySLAPolicy)

	r.Get("/channels/email", h.emailChannel)
	r.Put("/channels/email", h.updateEmailChannel)
	r.Post("/channels/email/addresses", h.addSupportAddress)
	r.Delete("/channels/email/addresses/:id", h.removeSupportAddress)
	r.Post("/inbound/email", h.receiveEmail)
	r.Get("/inbound/email", h.inboundEmails)
	r.Get("/inbound/email/:id", h.inboundEmail)
	r.Post("/inbound/email/:id/retry", h.retryInbound)
}

// workspace is the rows the caller sees: the workspace's (x-workspace-id,
// resolved by the credential middleware).
func workspace(c *fiber.Ctx) web.Scope { return web.Scope{OrgID: auth.From(c).OrgID} }

// inWorkspace is the Helpdesk's Scoper (workspace).
func inWorkspace(c *fiber.Ctx) (web.Scope, error) { return workspace(c), nil }
