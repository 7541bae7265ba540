package billing

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// The Helpdesk's payments routes (/helpdesk/payments/…). Every one of them
// is for the workspace's OWNER and ADMIN users: API keys act as ADMIN for
// data but never change billing, and AGENTs are refused. The checks run in
// that order — credential, role, then billing being configured — so that a
// refusal never depends on the server's configuration.

// PaymentRoutes mounts the authenticated payments routes on r (the
// /helpdesk group, behind the Helpdesk credential and idempotency
// middleware).
func PaymentRoutes(r fiber.Router, s *Service) {
	h := &payments{s}
	r.Post("/payments/create-order", h.createOrder)
	r.Post("/payments/downgrade", h.downgrade)
	r.Get("/payments/subscription", h.subscription)
	r.Get("/payments/changes", h.listChanges)
	r.Get("/payments/changes/:id", h.getChange)
}

type payments struct{ s *Service }

func changeCursor(c *models.SubscriptionChange) web.Cursor {
	return web.Cursor{CreatedAt: c.CreatedAt, ID: c.ID}
}

// admin checks the caller may manage the workspace's billing and that
// billing is on.
func (h *payments) admin(c *fiber.Ctx) (*auth.Principal, error) {
	p := auth.From(c)
	if err := auth.RequireUserAdmin(p); err != nil {
		return nil, err
	}
	if !h.s.Configured() {
		return nil, ErrNotConfigured
	}
	return p, nil
}

// Unknown plans are refused with the other fields; which of the known
// plans fits (not the current one, higher or lower) is the billing core's
// rule and comes after.
type createOrderRequest struct {
	Plan     string `json:"plan" validate:"required,oneof=free starter business enterprise"`
	Interval string `json:"interval" validate:"omitempty,oneof=month year"`
}

type downgradeRequest struct {
	Plan string `json:"plan" validate:"required,oneof=free starter business enterprise"`
}

func (h *payments) createOrder(c *fiber.Ctx) error {
	p, err := h.admin(c)
	if err != nil {
		return err
	}
	var req createOrderRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	return h.open(c, models.OpenChange{OrgID: p.OrgID, Plan: strings.Clone(req.Plan), Interval: strings.Clone(req.Interval),
		RequestedBy: requester(p)})
}

func (h *payments) downgrade(c *fiber.Ctx) error {
	p, err := h.admin(c)
	if err != nil {
		return err
	}
	var req downgradeRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	return h.open(c, models.OpenChange{OrgID: p.OrgID, Plan: strings.Clone(req.Plan), Downgrade: true, RequestedBy: requester(p)})
}

func requester(p *auth.Principal) string {
	if p.Email != "" {
		return p.Email
	}
	return p.UserID
}

// open records the change and its workflow start, then answers 202 —
// after waiting for the workflow's first steps when the caller asked with
// Prefer: wait=N.
func (h *payments) open(c *fiber.Ctx, req models.OpenChange) error {
	change, err := h.s.Open(h.s.Starter.In(c, web.Tx(c)), req)
	if err != nil {
		return downgradeProblem(err)
	}
	c.Location("/helpdesk/payments/changes/" + change.ID)
	if wait, ok := web.PreferWait(c); ok && wait > 0 {
		// The worker must see the change before the wait can end; a retry
		// after a crash during the wait gets the change as opened.
		if err := web.CommitAccepted(c, views.ToSubscriptionChange(change)); err != nil {
			return err
		}
		defer web.Waiting(c)()
		if waited, err := h.s.Wait(c.UserContext(), change.OrgID, change.ID, wait); err == nil {
			change = waited
		}
	}
	return c.Status(fiber.StatusAccepted).JSON(views.ToSubscriptionChange(change))
}

// downgradeProblem adds the numbers to a downgrade_blocked refusal, so that
// a client can tell the user how many seats to free.
func downgradeProblem(err error) error {
	var blocked *models.DowngradeBlocked
	if !errors.As(err, &blocked) {
		return err
	}
	return web.ToProblem(err).WithExtensions(map[string]any{
		"plan": blocked.Plan, "seats": blocked.Seats, "seatsInUse": blocked.SeatsInUse,
		"seatsToFree": blocked.SeatsInUse - blocked.Seats})
}

func (h *payments) subscription(c *fiber.Ctx) error {
	p, err := h.admin(c)
	if err != nil {
		return err
	}
	o, err := models.OrgBilling(c.UserContext(), h.s.DB, p.OrgID)
	if err != nil {
		return err
	}
	return c.JSON(views.ToSubscription(o))
}

// pageOfChanges is the page of changes a list route asks for: of orgID
// ("" — every organization, for billing staff), with the ?status= filter.
func pageOfChanges(c *fiber.Ctx, s *Service, orgID string) (web.Page[models.SubscriptionChange], error) {
	page, err := web.ParsePage(c)
	if err != nil {
		return web.Page[models.SubscriptionChange]{}, err
	}
	f := models.ChangeFilter{OrgID: orgID, Status: strings.Clone(c.Query("status"))}
	if err := f.Validate(); err != nil {
		return web.Page[models.SubscriptionChange]{}, err
	}
	return web.Paginate(models.SubscriptionChanges(s.DB.WithContext(c.UserContext()), f), page, changeCursor)
}

// findChange loads the change the :id parameter names, of orgID ("" — any
// organization, for billing staff); anything else is a 404.
func findChange(c *fiber.Ctx, s *Service, orgID string) (*models.SubscriptionChange, error) {
	change, err := models.FindSubscriptionChange(c.UserContext(), s.DB, orgID, c.Params("id"))
	if errors.Is(err, models.ErrNotFound) {
		return nil, models.NotFound("The subscription change")
	}
	return change, err
}

func (h *payments) listChanges(c *fiber.Ctx) error {
	p, err := h.admin(c)
	if err != nil {
		return err
	}
	rows, err := pageOfChanges(c, h.s, p.OrgID)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, views.ToSubscriptionChange)
}

func (h *payments) getChange(c *fiber.Ctx) error {
	p, err := h.admin(c)
	if err != nil {
		return err
	}
	change, err := findChange(c, h.s, p.OrgID)
	if err != nil {
		return err
	}
	return c.JSON(views.ToSubscriptionChange(change))
}

// Webhook is POST /helpdesk/payments/webhook: Stripe's events. It takes no
// suite credential — the Stripe-Signature header, verified with
// STRIPE_WEBHOOK_SECRET, is the credential — so it is mounted before the
// Helpdesk's credential check. A bad, missing or stale signature is a 400
// and records nothing; a replayed event id is a 200 that does nothing.
func Webhook(s *Service) fiber.Handler {
	return func(c *fiber.Ctx) error {
		// The body is Fiber's buffer, reused after the handler returns.
		payload := append([]byte(nil), c.Body()...)
		route, err := s.ReceiveEvent(func() *record.Tx { return s.Starter.In(c, web.Tx(c)) }, payload, strings.Clone(c.Get("Stripe-Signature")))
		switch {
		case errors.Is(err, ErrBadSignature):
			return web.NewProblem(fiber.StatusBadRequest, "invalid_signature",
				"The Stripe-Signature header is missing, malformed, stale or not made with this endpoint's secret.")
		case errors.Is(err, ErrBadPayload):
			return web.NewProblem(fiber.StatusBadRequest, "invalid_event", "The body is not a Stripe event.")
		case err != nil:
			return err
		}
		return c.JSON(webhookResponse{Received: true, EventID: route.Event.ID, Duplicate: route.Duplicate})
	}
}

type webhookResponse struct {
	Received  bool   `json:"received"`
	EventID   string `json:"eventId"`
	Duplicate bool   `json:"duplicate"`
}
