package helpdesk

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

type customerResponse struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspaceId"`
	Name        string    `json:"name"`
	Email       string    `json:"email"`
	Phone       string    `json:"phone"`
	Company     string    `json:"company"`
	Notes       string    `json:"notes"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

func toCustomer(c *models.Customer) customerResponse {
	return customerResponse{ID: c.ID, WorkspaceID: c.OrgID, Name: c.Name, Email: c.Email, Phone: c.Phone,
		Company: c.Company, Notes: c.Notes, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func customerCursor(c *models.Customer) web.Cursor {
	return web.Cursor{CreatedAt: c.CreatedAt, ID: c.ID}
}

func (h *handlers) listCustomers(c *fiber.Ctx) error {
	p := auth.From(c)
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	q := h.DB.WithContext(c.UserContext()).Model(&models.Customer{}).Where("org_id = ?", p.OrgID)
	if s := strings.TrimSpace(c.Query("q")); s != "" {
		if len(s) > 200 {
			return models.Invalid(models.FieldError{Field: "q", Code: "max", Message: "Must be at most 200 characters long."})
		}
		q = web.ContainsText(q, s, "name", "email", "company")
	}
	rows, err := web.Paginate(q, page, customerCursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toCustomer)
}

type customerFields struct {
	Phone   *string `json:"phone" validate:"omitnil,max=50"`
	Company *string `json:"company" validate:"omitnil,max=200"`
	Notes   *string `json:"notes" validate:"omitnil,max=10000"`
}

func (f *customerFields) apply(c *models.Customer) {
	if f.Phone != nil {
		c.Phone = strings.TrimSpace(*f.Phone)
	}
	if f.Company != nil {
		c.Company = strings.TrimSpace(*f.Company)
	}
	if f.Notes != nil {
		c.Notes = *f.Notes
	}
}

type createCustomerRequest struct {
	Name  string `json:"name" validate:"required,notblank,max=200"`
	Email string `json:"email" validate:"required,email,max=254"`
	customerFields
}

var errEmailTaken = models.Err(models.ErrConflict, "email_taken", "A customer of this workspace has this e-mail address.")

func (h *handlers) createCustomer(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createCustomerRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	now := models.Now()
	cust := &models.Customer{ID: models.NewID(), OrgID: p.OrgID, Name: strings.TrimSpace(req.Name),
		Email: models.NormalizeEmail(req.Email), CreatedAt: now, UpdatedAt: now}
	req.apply(cust)
	err := h.DB.WithContext(c.UserContext()).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(cust).Error; err != nil {
			return err
		}
		return models.RecordCustomerEvent(tx, p.OrgID, cust.ID, nil, "customer_created", "Customer created", p.Actor())
	})
	if models.IsUniqueViolation(err) {
		return errEmailTaken
	}
	if err != nil {
		return err
	}
	c.Location("/helpdesk/customers/" + cust.ID)
	return c.Status(fiber.StatusCreated).JSON(toCustomer(cust))
}

// findCustomer loads one of the workspace's customers; anything else is a 404.
func findCustomer(ctx context.Context, db *gorm.DB, orgID, id string) (*models.Customer, error) {
	return findIn[models.Customer](ctx, db, orgID, id, "The customer")
}

func (h *handlers) getCustomer(c *fiber.Ctx) error {
	return getIn(c, h.DB, auth.From(c).OrgID, "The customer", toCustomer)
}

type updateCustomerRequest struct {
	Name  *string `json:"name" validate:"omitnil,notblank,max=200"`
	Email *string `json:"email" validate:"omitnil,email,max=254"`
	customerFields
}

func (h *handlers) updateCustomer(c *fiber.Ctx) error {
	p := auth.From(c)
	var req updateCustomerRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	var cust *models.Customer
	err := h.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if cust, err = findCustomer(ctx, models.LockForUpdate(tx), p.OrgID, c.Params("id")); err != nil {
			return err
		}
		if req.Name != nil {
			cust.Name = strings.TrimSpace(*req.Name)
		}
		if req.Email != nil {
			cust.Email = models.NormalizeEmail(*req.Email)
		}
		req.apply(cust)
		cust.UpdatedAt = models.Now()
		if err := tx.Save(cust).Error; err != nil {
			return err
		}
		return models.RecordCustomerEvent(tx, p.OrgID, cust.ID, nil, "customer_updated", "Customer details updated", p.Actor())
	})
	if models.IsUniqueViolation(err) {
		return errEmailTaken
	}
	if err != nil {
		return err
	}
	return c.JSON(toCustomer(cust))
}

// deleteCustomer removes a customer with their history and time entries;
// their tickets stay, unlinked (ADMIN only).
func (h *handlers) deleteCustomer(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	cust, err := findCustomer(c.UserContext(), h.DB, p.OrgID, c.Params("id"))
	if err != nil {
		return err
	}
	if err := h.DB.WithContext(c.UserContext()).Delete(cust).Error; err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *handlers) customerTickets(c *fiber.Ctx) error {
	p, cust, page, err := h.customerList(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(h.DB.WithContext(c.UserContext()).Model(&models.Ticket{}).
		Where("org_id = ? AND customer_id = ?", p.OrgID, cust.ID), page, ticketCursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toTicket)
}

// customerList resolves /customers/:id for one of its list routes.
func (h *handlers) customerList(c *fiber.Ctx) (*auth.Principal, *models.Customer, web.PageRequest, error) {
	p := auth.From(c)
	cust, err := findCustomer(c.UserContext(), h.DB, p.OrgID, c.Params("id"))
	if err != nil {
		return nil, nil, web.PageRequest{}, err
	}
	page, err := web.ParsePage(c)
	return p, cust, page, err
}

// interaction is a ticket or a public comment in a customer's history.
type interaction struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	TicketID     string    `json:"ticketId"`
	TicketNumber int       `json:"ticketNumber"`
	AuthorType   string    `json:"authorType"`
	Text         string    `json:"text"`
	CreatedAt    time.Time `json:"createdAt"`
}

// customerInteractions lists the customer's tickets and the public
// comments on them, newest first, in one keyset-paginated SQL union.
func (h *handlers) customerInteractions(c *fiber.Ctx) error {
	p, cust, page, err := h.customerList(c)
	if err != nil {
		return err
	}
	db := h.DB.WithContext(c.UserContext())
	tickets := db.Model(&models.Ticket{}).
		Select("id, 'ticket' AS kind, id AS ticket_id, number AS ticket_number, 'customer' AS author_type, subject AS text, created_at").
		Where("org_id = ? AND customer_id = ?", p.OrgID, cust.ID)
	comments := db.Table("ticket_comments AS c").
		Select("c.id, 'comment' AS kind, c.ticket_id, t.number AS ticket_number, c.author_type, c.body AS text, c.created_at").
		Joins("JOIN tickets t ON t.id = c.ticket_id").
		Where("t.org_id = ? AND t.customer_id = ? AND c.public = ?", p.OrgID, cust.ID, true)
	union := db.Table("(? UNION ALL ?) AS interactions", tickets, comments)
	rows, err := web.Paginate(union, page, func(i *interaction) web.Cursor { return web.Cursor{CreatedAt: i.CreatedAt, ID: i.ID} })
	if err != nil {
		return err
	}
	return c.JSON(rows)
}

type eventResponse struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Summary   string    `json:"summary"`
	TicketID  *string   `json:"ticketId"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"createdAt"`
}

func (h *handlers) customerActivity(c *fiber.Ctx) error {
	p, cust, page, err := h.customerList(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(h.DB.WithContext(c.UserContext()).Model(&models.CustomerEvent{}).
		Where("org_id = ? AND customer_id = ?", p.OrgID, cust.ID), page,
		func(e *models.CustomerEvent) web.Cursor { return web.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} })
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, func(e *models.CustomerEvent) eventResponse {
		return eventResponse{ID: e.ID, Type: e.Type, Summary: e.Summary, TicketID: e.TicketID, Actor: string(e.Actor), CreatedAt: e.CreatedAt}
	})
}
