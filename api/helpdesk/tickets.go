package helpdesk

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

func ticketCursor(t *models.Ticket) web.Cursor { return web.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} }

// listTickets lists a workspace's tickets with the list filters applied,
// always in the same order: one SQL text per set of filters.
func (h *handlers) listTickets(c *fiber.Ctx) error {
	var f struct {
		Status     string `json:"status" validate:"omitempty,oneof=new open pending on_hold solved closed"`
		Priority   string `json:"priority" validate:"omitempty,oneof=low normal high urgent"`
		AgentID    string `json:"agentId" validate:"omitempty,uuid"`
		CustomerID string `json:"customerId" validate:"omitempty,uuid"`
		Q          string `json:"q" query:"trim" validate:"max=200"`
		SLA        string `json:"sla" validate:"omitempty,oneof=breached at_risk"`
	}
	now := models.Now()
	return web.List(c, h.DB, inWorkspace, web.Listing[models.Ticket, views.Ticket]{Filter: &f, FieldsOf: models.AutomationTicket, Cursor: ticketCursor, View: views.ToTicket,
		Narrow: func(q *gorm.DB) *gorm.DB {
			q = models.Equal(models.Equal(q, "status", f.Status), "priority", f.Priority)
			q = models.Equal(models.Equal(q, "agent_id", f.AgentID), "customer_id", f.CustomerID)
			switch f.SLA {
			case "breached":
				q = q.Where("sla_breached")
			case "at_risk": // past a warning, not breached
				q = q.Where("NOT sla_breached AND sla_next_warn_at <= ?", now)
			}
			return models.Containing(q, f.Q, "subject", "description", "requester_email")
		}})
}

type createTicketRequest struct {
	Subject     string   `json:"subject" validate:"required,notblank,max=300"`
	Description string   `json:"description" validate:"max=20000"`
	Priority    string   `json:"priority" validate:"omitempty,oneof=low normal high urgent"`
	Email       string   `json:"email" validate:"required,email,max=254"`
	Name        string   `json:"name" validate:"max=200"`
	Channel     string   `json:"channel" validate:"omitempty,oneof=email web chat phone api portal sms whatsapp other"`
	Tags        []string `json:"tags" validate:"max=20,dive,notblank,max=50"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

// createTicket opens a ticket for the requester's e-mail (linking or
// creating the customer), numbered per workspace. The plan's limits are
// checked in the same transaction (models.OpenTicket), so two creations
// can never both take the last slot.
func (h *handlers) createTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createTicketRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	now := models.Now()
	t := &models.Ticket{ID: models.NewID(), OrgID: p.OrgID, Subject: strings.TrimSpace(req.Subject),
		Description: req.Description, Status: models.TicketNew, Priority: cmp.Or(req.Priority, "normal"),
		Channel: cmp.Or(req.Channel, "web"), RequesterEmail: models.NormalizeEmail(req.Email),
		Tags: tagsJSON(req.Tags), CreatedAt: now, UpdatedAt: now}
	name := strings.TrimSpace(req.Name)
	// A workspace with no limit, SLA policy or webhook endpoint to mind
	// gets its ticket in one statement, which checks so itself; any other
	// goes on in the request's transaction.
	opened := false
	if req.Fields == nil { // custom fields sent are checked in the transaction
		var err error
		if opened, err = models.OpenTicketAtOnce(web.OneStatementTx(c), t, name, p.Actor()); err != nil {
			return err
		}
	}
	if !opened {
		var err error
		if t.Fields, err = models.ApplyFields(web.Tx(c), p.OrgID, models.AutomationTicket, nil, req.Fields, true); err != nil {
			return err
		}
		if err := h.openTicket(c, t, name); err != nil {
			return err
		}
	}
	c.Location("/helpdesk/tickets/" + t.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToTicket(t))
}

// openTicket opens t in the request's transaction, within its plan's
// limits, its SLA clocks set and its webhook events recorded.
func (h *handlers) openTicket(c *fiber.Ctx, t *models.Ticket, requesterName string) error {
	p := auth.From(c)
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	_, err = models.OpenTicket(tx.DB, org, t, requesterName, p.Actor(), func(newCustomer *models.Customer) error {
		if t.HasSLATimer() { // else it needs no SLA workflow yet
			if err := tx.WakeTicketSLA(t); err != nil {
				return err
			}
		}
		return tx.Emit(views.TicketOpenedEvents(t, newCustomer)...)
	})
	return err
}

func tagsJSON(tags []string) string { return models.TagsJSON(tags) }

func (h *handlers) getTicket(c *fiber.Ctx) error {
	return web.Get(c, h.DB, inWorkspace, "The ticket", views.ToTicket)
}

type updateTicketRequest struct {
	Status   *string `json:"status" validate:"omitnil,oneof=new open pending on_hold solved closed"`
	Priority *string `json:"priority" validate:"omitnil,oneof=low normal high urgent"`
	// AgentID is a member id, or null to unassign; "" is refused (see
	// checkAgent).
	AgentID web.Nullable[string] `json:"agentId"`
	Subject *string              `json:"subject" validate:"omitnil,notblank,max=300"`
	Tags    *[]string            `json:"tags" validate:"omitnil,max=20,dive,notblank,max=50"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

// checkAgent: agentId names a member, or is null to unassign. An empty
// string is refused rather than read as "unassign": it is what an unset
// variable in a script sends, and unassigning by accident is silent.
func (r *updateTicketRequest) checkAgent() error {
	if r.AgentID.HasValue() && !models.ValidID(r.AgentID.Value) {
		return models.Invalid(models.FieldError{Field: "agentId", Code: "uuid", Message: "Must be the id of a member; send null to unassign."})
	}
	return nil
}

// updateTicket changes status, priority, assignee, subject or tags
// (models.UpdateTicket: the rules). Solving starts the auto-close timer,
// reopening cancels it, and assigning notifies the agent, in the same
// transaction.
func (h *handlers) updateTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	var req updateTicketRequest
	if err := web.Decode(c, &req, req.checkAgent, func() error {
		if !req.AgentID.HasValue() || req.AgentID.Value == "" {
			return nil
		}
		return models.CheckMember(h.DB.WithContext(c.UserContext()), p.OrgID, "agentId", &req.AgentID.Value)
	}); err != nil {
		return err
	}
	u := models.TicketUpdate{Status: req.Status, Priority: req.Priority, Subject: req.Subject, SetAgent: req.AgentID.Set, Fields: req.Fields}
	if req.AgentID.HasValue() {
		u.Agent = &req.AgentID.Value
	}
	if req.Tags != nil {
		tags := tagsJSON(*req.Tags)
		u.Tags = &tags
	}
	tx := h.Starter.In(c, web.Tx(c))
	now := models.Now()
	t, change, err := models.UpdateTicket(tx.DB, p.OrgID, c.Params("id"), u, p.Actor(), now)
	if err != nil {
		return err
	}
	if change.Notify != nil {
		if _, err := tx.Notify(models.TicketAssignedNotice(t, *change.Notify, now)); err != nil {
			return err
		}
	}
	if err := h.followStatus(tx, t, change); err != nil {
		return err
	}
	if err := emitTicketChange(tx, &change.Before, t); err != nil {
		return err
	}
	return c.JSON(views.ToTicket(t))
}

// emitTicketChange records the webhook events of a ticket's change from
// before to after (views.TicketChangeEvents).
func emitTicketChange(tx *record.Tx, before, after *models.Ticket) error {
	events, err := views.TicketChangeEvents(before, after)
	if err != nil {
		return err
	}
	return tx.Emit(events...)
}

// followStatus records in tx the timers a change asks for
// (record.Tx.FollowTicketStatus), with the API's auto-close delay.
func (h *handlers) followStatus(tx *record.Tx, t *models.Ticket, change models.TicketChange) error {
	return tx.FollowTicketStatus(t, change, h.AutoCloseAfter)
}

func (h *handlers) deleteTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	t, err := models.DeleteTicket(tx.DB, p.OrgID, c.Params("id"), p.Actor())
	if err != nil {
		return err
	}
	if t.HasSLA() { // its clocks end: the workflow finds no ticket
		if err := tx.WakeTicketSLA(t); err != nil {
			return err
		}
	}
	if t.Status == models.TicketSolved {
		if err := tx.CancelAutoClose(t); err != nil {
			return err
		}
	}
	if err := tx.Emit(models.Event{OrgID: t.OrgID, Type: models.EventTicketDeleted, Object: views.ToTicket(t)}); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
