package helpdesk

import (
	"cmp"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
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
	t, err := web.Load[models.Ticket](c, h.DB, inWorkspace, "The ticket")
	if err != nil {
		return err
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.TicketComment, commentResponse]{View: toComment,
		Narrow: func(q *gorm.DB) *gorm.DB { return q.Where("ticket_id = ?", t.ID) },
		Cursor: func(cm *models.TicketComment) web.Cursor { return web.Cursor{CreatedAt: cm.CreatedAt, ID: cm.ID} }})
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
	now := models.Now()
	cm := &models.TicketComment{ID: models.NewID(), OrgID: p.OrgID, AuthorType: cmp.Or(req.Author, models.AuthorAgent),
		Body: req.Body, Public: req.Public == nil || *req.Public, CreatedAt: now}
	if cm.AuthorType == models.AuthorAgent && !p.IsKey() {
		cm.AuthorMemberID = &p.MemberID
	}
	tx := h.Starter.In(c, web.Tx(c))
	t, change, err := models.AddTicketComment(tx.DB, p.OrgID, c.Params("id"), cm, p.Actor(), now)
	if err != nil {
		return err
	}
	if cm.AuthorType == models.AuthorCustomer && change.Notify != nil {
		err := RecordNotification(tx, &models.Notification{ID: models.NewID(), OrgID: t.OrgID, MemberID: *change.Notify,
			Type: "customer_replied", Title: "Customer replied on ticket #" + models.Itoa(t.Number), Body: t.Subject,
			ResourceType: "ticket", ResourceID: t.ID, CreatedAt: now})
		if err != nil {
			return err
		}
	}
	if err := h.followStatus(tx, t, change); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toComment(cm))
}
