package crm

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// Outbound webhooks: an organization's endpoints (OWNER and ADMIN users),
// their delivery log and replays. The events are recorded by the routes
// that change things (record.Tx.Emit) and delivered by each endpoint's
// WebhookEndpoint workflow.

type endpointResponse struct {
	ID             string    `json:"id"`
	OrgID          string    `json:"orgId"`
	URL            string    `json:"url"`
	Description    string    `json:"description"`
	Events         []string  `json:"events"`
	Status         string    `json:"status"`
	DisabledReason string    `json:"disabledReason"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Secret is shown once: in the response that creates it (creation,
	// rotation).
	Secret string `json:"secret,omitempty"`
}

func toEndpoint(e *models.WebhookEndpoint) endpointResponse {
	return endpointResponse{ID: e.ID, OrgID: e.OrgID, URL: e.URL, Description: e.Description, Events: e.Patterns(),
		Status: e.Status, DisabledReason: e.DisabledReason, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

func endpointCursor(e *models.WebhookEndpoint) web.Cursor {
	return web.Cursor{CreatedAt: e.CreatedAt, ID: e.ID}
}

func (h *handlers) listWebhooks(c *fiber.Ctx) error {
	return web.List(c, h.DB, web.In(web.Scope{OrgID: auth.From(c).OrgID}),
		web.Listing[models.WebhookEndpoint, endpointResponse]{Cursor: endpointCursor, View: toEndpoint})
}

type endpointFields struct {
	URL         *string   `json:"url" validate:"omitnil,notblank,max=2000"`
	Events      *[]string `json:"events" validate:"omitnil,min=1,max=50"`
	Description *string   `json:"description" validate:"omitnil,max=500"`
}

// check validates the URL (a public https URL, or an allow-listed host:
// SUITE_WEBHOOK_ALLOW_HOSTS) and the event patterns, each error naming
// its field.
func (f *endpointFields) check(c *fiber.Ctx, egress netguard.Policy) error {
	var bad []models.FieldError
	if f.URL != nil && *f.URL != "" {
		switch err := egress.CheckURL(c.UserContext(), *f.URL); {
		case errors.Is(err, netguard.ErrNotHTTPS):
			bad = append(bad, models.FieldError{Field: "url", Code: "not_https",
				Message: "The URL must be an https:// URL with a host, without credentials."})
		case err != nil:
			bad = append(bad, models.FieldError{Field: "url", Code: "not_public",
				Message: "The URL's host is not on the public internet (loopback, private and reserved addresses are refused)."})
		}
	}
	if f.Events != nil {
		for i, p := range *f.Events {
			if !models.ValidEventPattern(p) {
				bad = append(bad, models.FieldError{Field: "events[" + strconv.Itoa(i) + "]", Code: "unknown_event",
					Message: "No event type is named " + strconv.Quote(p) + `; use a type, a group ("deal.*") or "*".`})
			}
		}
	}
	if len(bad) > 0 {
		return models.Invalid(bad...)
	}
	return nil
}

// apply writes the fields present to e.
func (f *endpointFields) apply(e *models.WebhookEndpoint) {
	if f.URL != nil {
		e.URL = *f.URL
	}
	if f.Events != nil {
		events, _ := json.Marshal(dedupe(*f.Events))
		e.Events = string(events)
	}
	if f.Description != nil {
		e.Description = strings.TrimSpace(*f.Description)
	}
}

type createEndpointRequest struct {
	URL         string   `json:"url" validate:"required,max=2000"`
	Events      []string `json:"events" validate:"required,min=1,max=50"`
	Description string   `json:"description" validate:"max=500"`
}

func (r *createEndpointRequest) fields() *endpointFields {
	return &endpointFields{URL: &r.URL, Events: &r.Events, Description: &r.Description}
}

// createWebhook adds an endpoint and starts its delivery workflow; the
// secret that signs its deliveries is in this response only.
func (h *handlers) createWebhook(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createEndpointRequest
	if err := web.Decode(c, &req, func() error { return req.fields().check(c, h.WebhookEgress) }); err != nil {
		return err
	}
	tx := web.Tx(c)
	if err := models.WithinOrgLimit(tx, &models.WebhookEndpoint{}, p.OrgID, models.MaxWebhookEndpoints, "too_many_webhooks",
		"An organization has at most %d webhook endpoints; remove one first."); err != nil {
		return err
	}
	now := models.Now()
	e := &models.WebhookEndpoint{ID: models.NewID(), OrgID: p.OrgID, Secret: models.NewWebhookSecret(), Status: models.WebhookEnabled,
		CreatedAt: now, UpdatedAt: now}
	req.fields().apply(e)
	if err := tx.Create(e).Error; err != nil {
		return err
	}
	err := h.Starter.In(c, tx).Start(record.Start{WorkflowID: names.WebhookEndpointID(p.OrgID, e.ID), Workflow: names.WebhookEndpointWorkflow,
		Input: workflows.WebhookEndpointInput{OrgID: p.OrgID, EndpointID: e.ID}, OrgID: p.OrgID, Kind: names.KindWebhookEndpoint})
	if err != nil {
		return err
	}
	out := toEndpoint(e)
	out.Secret = e.Secret
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Location("/crm/organization/" + p.OrgID + "/webhooks/" + e.ID)
	return c.Status(fiber.StatusCreated).JSON(out)
}

// endpointScope is the caller's organization, from the path (inPathOrg).
func endpointScope(c *fiber.Ctx) web.Scope { return web.Scope{OrgID: auth.From(c).OrgID} }

// findEndpoint is the endpoint the path's :wid names in the caller's
// organization, read on db.
func findEndpoint(c *fiber.Ctx, db *gorm.DB) (*models.WebhookEndpoint, error) {
	return web.Find[models.WebhookEndpoint](db.WithContext(c.UserContext()), endpointScope(c), c.Params("wid"), "The webhook endpoint")
}

func (h *handlers) getWebhook(c *fiber.Ctx) error {
	e, err := findEndpoint(c, h.DB)
	if err != nil {
		return err
	}
	return c.JSON(toEndpoint(e))
}

type updateEndpointRequest struct {
	endpointFields
	Status *string `json:"status" validate:"omitnil,oneof=enabled disabled"`
}

// updateWebhook changes the fields present; enabling a disabled endpoint
// resumes its deliveries where they stopped.
func (h *handlers) updateWebhook(c *fiber.Ctx) error {
	var req updateEndpointRequest
	if err := web.Decode(c, &req, func() error { return req.check(c, h.WebhookEgress) }); err != nil {
		return err
	}
	tx := web.Tx(c)
	e, err := findEndpoint(c, models.LockForUpdate(tx))
	if err != nil {
		return err
	}
	req.apply(e)
	if req.Status != nil && *req.Status != e.Status {
		e.Status, e.DisabledReason, e.DisabledBy = *req.Status, "", ""
		if e.Status == models.WebhookDisabled {
			e.DisabledReason, e.DisabledBy = "Disabled through the API.", models.DisabledByAPI
		}
	}
	e.UpdatedAt = models.Now()
	if err := tx.Save(e).Error; err != nil {
		return err
	}
	if e.Status == models.WebhookEnabled {
		if err := h.Starter.In(c, tx).WakeWebhook(e.OrgID, e.ID); err != nil {
			return err
		}
	}
	return c.JSON(toEndpoint(e))
}

// deleteWebhook removes an endpoint with its deliveries; its workflow ends.
func (h *handlers) deleteWebhook(c *fiber.Ctx) error {
	tx := web.Tx(c)
	e, err := findEndpoint(c, tx)
	if err != nil {
		return err
	}
	if err := tx.Delete(e).Error; err != nil {
		return err
	}
	if err := h.Starter.In(c, tx).WakeWebhook(e.OrgID, e.ID); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// secretOverlap is how long a rotated-out secret keeps signing beside the
// new one, so receivers can switch without missing a delivery.
const secretOverlap = 24 * time.Hour

// rotateWebhookSecret gives the endpoint a new secret, shown in this
// response only; the old one signs alongside for 24 hours.
func (h *handlers) rotateWebhookSecret(c *fiber.Ctx) error {
	tx := web.Tx(c)
	e, err := findEndpoint(c, models.LockForUpdate(tx))
	if err != nil {
		return err
	}
	now := models.Now()
	until := now.Add(secretOverlap)
	e.PreviousSecret, e.PreviousSecretUntil, e.Secret, e.UpdatedAt = e.Secret, &until, models.NewWebhookSecret(), now
	if err := tx.Save(e).Error; err != nil {
		return err
	}
	out := toEndpoint(e)
	out.Secret = e.Secret
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// testWebhook sends the endpoint a webhook.test event (202: queued behind
// its other deliveries).
func (h *handlers) testWebhook(c *fiber.Ctx) error {
	tx := web.Tx(c)
	e, err := findEndpoint(c, tx)
	if err != nil {
		return err
	}
	d, err := models.RecordTestEvent(tx, e, models.Now())
	if err != nil {
		return err
	}
	return h.queued(c, tx, e, d, models.WebhookTestEvent)
}

// queued wakes e's workflow for the delivery d the request queued, once tx
// commits, and answers 202 with d.
func (h *handlers) queued(c *fiber.Ctx, tx *gorm.DB, e *models.WebhookEndpoint, d *models.WebhookDelivery, eventType string) error {
	if err := h.Starter.In(c, tx).WakeWebhook(e.OrgID, e.ID); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(toDelivery(d, eventType))
}

type deliveryResponse struct {
	ID             string     `json:"id"`
	EndpointID     string     `json:"endpointId"`
	EventID        string     `json:"eventId"`
	EventType      string     `json:"eventType"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode *int       `json:"lastStatusCode"`
	LastError      string     `json:"lastError"`
	LastDurationMS *int       `json:"lastDurationMs"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt"`
	CreatedAt      time.Time  `json:"createdAt"`
	FinishedAt     *time.Time `json:"finishedAt"`
}

func toDelivery(d *models.WebhookDelivery, eventType string) deliveryResponse {
	out := deliveryResponse{ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: eventType, Status: d.Status,
		Attempts: d.Attempts, LastError: d.LastError, NextAttemptAt: d.NextAttemptAt, CreatedAt: d.CreatedAt, FinishedAt: d.FinishedAt}
	if d.Attempts > 0 {
		code, ms := d.LastStatus, d.LastDurationMS
		out.LastStatusCode, out.LastDurationMS = &code, &ms
	}
	return out
}

func deliveryCursor(d *models.WebhookDelivery) web.Cursor {
	return web.Cursor{CreatedAt: d.CreatedAt, ID: d.ID}
}

// listDeliveries is an endpoint's delivery log, newest first, optionally
// of one status.
func (h *handlers) listDeliveries(c *fiber.Ctx) error {
	e, err := findEndpoint(c, h.DB)
	if err != nil {
		return err
	}
	var f struct {
		Status string `validate:"omitempty,oneof=pending succeeded failed" json:"status"`
	}
	db := h.DB.WithContext(c.UserContext())
	return web.List(c, h.DB, web.In(endpointScope(c)), web.Listing[models.WebhookDelivery, deliveryResponse]{Filter: &f, Cursor: deliveryCursor,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.Equal(q.Where("endpoint_id = ?", e.ID), "status", f.Status)
		},
		PageView: func(rows []models.WebhookDelivery) (func(*models.WebhookDelivery) deliveryResponse, error) {
			ids := make([]string, len(rows))
			for i := range rows {
				ids[i] = rows[i].EventID
			}
			var events []models.WebhookEvent
			if err := db.Select("id", "type").Where("id IN ?", ids).Find(&events).Error; err != nil {
				return nil, err
			}
			types := make(map[string]string, len(events))
			for _, ev := range events {
				types[ev.ID] = ev.Type
			}
			return func(d *models.WebhookDelivery) deliveryResponse { return toDelivery(d, types[d.EventID]) }, nil
		}})
}

// replayDelivery sends a delivery's event again, with the same webhook-id,
// queued behind the endpoint's other deliveries (202).
func (h *handlers) replayDelivery(c *fiber.Ctx) error {
	tx := web.Tx(c)
	e, err := findEndpoint(c, tx)
	if err != nil {
		return err
	}
	d, err := web.Find[models.WebhookDelivery](tx.Where("endpoint_id = ?", e.ID), endpointScope(c), c.Params("did"), "The delivery")
	if err != nil {
		return err
	}
	r, err := models.ReplayDelivery(tx, d, models.Now())
	if err != nil {
		return err
	}
	var ev models.WebhookEvent
	if err := tx.Select("type").Take(&ev, "id = ?", d.EventID).Error; err != nil {
		return err
	}
	return h.queued(c, tx, e, r, ev.Type)
}

// dedupe keeps the first of each repeated string, in order.
func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
