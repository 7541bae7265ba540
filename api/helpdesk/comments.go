package helpdesk

import (
	"cmp"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

type commentResponse struct {
	ID               string    `json:"id"`
	TicketID         string    `json:"ticketId"`
	AuthorType       string    `json:"authorType"`
	AuthorMemberID   *string   `json:"authorMemberId"`
	AuthorCustomerID *string   `json:"authorCustomerId"`
	Body             string    `json:"body"`
	Public           bool      `json:"public"`
	CreatedAt        time.Time `json:"createdAt"`
}

func toComment(c *models.TicketComment) commentResponse {
	return commentResponse{ID: c.ID, TicketID: c.TicketID, AuthorType: c.AuthorType, AuthorMemberID: c.AuthorMemberID,
		AuthorCustomerID: c.AuthorCustomerID, Body: c.Body, Public: c.Public, CreatedAt: c.CreatedAt}
}

func (h *handlers) listComments(c *fiber.Ctx) error {
	p := auth.From(c)
	t, err := findTicket(c.UserContext(), h.DB, p.OrgID, c.Params("id"))
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(h.DB.WithContext(c.UserContext()).Model(&models.TicketComment{}).Where("ticket_id = ?", t.ID), page,
		func(cm *models.TicketComment) web.Cursor { return web.Cursor{CreatedAt: cm.CreatedAt, ID: cm.ID} })
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toComment)
}

type addCommentRequest struct {
	Body   string `json:"body" validate:"required,notblank,max=20000"`
	Public *bool  `json:"public"`
	// Author is "agent" (the caller; default) or "customer" (the ticket's
	// requester, e.g. a reply relayed by an e-mail integration).
	Author string `json:"author" validate:"omitempty,oneof=agent customer"`
}

// addComment adds a reply or internal note. The first public agent reply
// records the first-response time; a customer reply is always public,
// reopens a pending, on-hold or solved ticket and notifies the assignee.
func (h *handlers) addComment(c *fiber.Ctx) error {
	p := auth.From(c)
	var req addCommentRequest
	if err := web.Decode(c, &req, func() error {
		if req.Author == models.AuthorCustomer && req.Public != nil && !*req.Public {
			return models.Invalid(models.FieldError{Field: "public", Code: "customer_public", Message: "A customer's comment is always public."})
		}
		return nil
	}); err != nil {
		return err
	}
	ctx := c.UserContext()
	now := models.Now()
	cm := &models.TicketComment{ID: models.NewID(), OrgID: p.OrgID, AuthorType: cmp.Or(req.Author, models.AuthorAgent),
		Body: req.Body, Public: req.Public == nil || *req.Public, CreatedAt: now}
	err := h.Starter.Transact(ctx, func(tx *outbox.Tx) error {
		t, err := findTicket(ctx, models.LockForUpdate(tx.DB), p.OrgID, c.Params("id"))
		if err != nil {
			return err
		}
		if t.Status == models.TicketClosed {
			return errTicketClosed
		}
		cm.TicketID = t.ID
		var event string
		if cm.AuthorType == models.AuthorCustomer {
			cm.Public, cm.AuthorCustomerID = true, t.CustomerID
			event = "Customer replied on ticket #" + models.Itoa(t.Number)
			if models.CustomerReopens(t.Status) {
				if err := h.setStatus(tx, t, models.TicketOpen, now); err != nil {
					return err
				}
				event += " (reopened)"
			}
			if t.AgentID != nil {
				if err := RecordNotification(tx, &models.Notification{ID: models.NewID(), OrgID: t.OrgID, MemberID: *t.AgentID,
					Type: "customer_replied", Title: "Customer replied on ticket #" + models.Itoa(t.Number), Body: t.Subject,
					ResourceType: "ticket", ResourceID: t.ID, CreatedAt: now}); err != nil {
					return err
				}
			}
		} else {
			if !p.IsKey() {
				cm.AuthorMemberID = &p.MemberID
			}
			if cm.Public {
				if t.FirstResponseAt == nil {
					t.FirstResponseAt = &now
				}
				if t.Status == models.TicketNew {
					t.Status = models.TicketOpen // an agent's reply opens a new ticket
				}
				event = "Agent replied on ticket #" + models.Itoa(t.Number)
			}
		}
		if err := tx.Create(cm).Error; err != nil {
			return err
		}
		t.UpdatedAt = now
		if err := tx.Save(t).Error; err != nil {
			return err
		}
		if event != "" && t.CustomerID != nil {
			return models.RecordCustomerEvent(tx.DB, t.OrgID, *t.CustomerID, &t.ID, "comment_added", event, p.Actor())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toComment(cm))
}
