package helpdesk

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

func customerCursor(c *models.Customer) web.Cursor {
	return web.Cursor{CreatedAt: c.CreatedAt, ID: c.ID}
}

func (h *handlers) listCustomers(c *fiber.Ctx) error {
	var f struct {
		Q string `json:"q" query:"trim" validate:"max=200"`
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.Customer, views.Customer]{Filter: &f, FieldsOf: models.AutomationCustomer, Cursor: customerCursor, View: views.ToCustomer,
		Narrow: func(q *gorm.DB) *gorm.DB { return models.CustomersMatching(q, f.Q) }})
}

type customerFields struct {
	Phone   *string `json:"phone" validate:"omitnil,max=50"`
	Company *string `json:"company" validate:"omitnil,max=200"`
	Notes   *string `json:"notes" validate:"omitnil,max=10000"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
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
	tx := h.Starter.In(c, web.Tx(c))
	var err error
	if cust.Fields, err = models.ApplyFields(tx.DB, p.OrgID, models.AutomationCustomer, nil, req.Fields, true); err != nil {
		return err
	}
	if err := tx.Create(cust).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return errEmailTaken
		}
		return err
	}
	if err := models.RecordCustomerEvent(tx.DB, p.OrgID, cust.ID, nil, "customer_created", "Customer created", p.Actor()); err != nil {
		return err
	}
	if err := models.LinkCustomer(tx.DB, cust, ""); err != nil {
		return err
	}
	view := views.ToCustomer(cust)
	if err := tx.Emit(models.Event{OrgID: p.OrgID, Type: models.EventCustomerCreated, Object: view}); err != nil {
		return err
	}
	c.Location("/helpdesk/customers/" + cust.ID)
	return c.Status(fiber.StatusCreated).JSON(view)
}

// getCustomer answers a customer, or 301 to the one they were merged into.
func (h *handlers) getCustomer(c *fiber.Ctx) error {
	return web.GetPerson(c, h.DB, inWorkspace, models.AutomationCustomer, "The customer", "/helpdesk/customers/", views.ToCustomer)
}

type mergeCustomerRequest struct {
	// From is the duplicate merged into the path's customer.
	From string `json:"from" validate:"required"`
}

// mergeCustomer merges the customer from into the path's, as a
// PersonMerge workflow: 202 with the merge (ADMIN only: it deletes a
// customer).
func (h *handlers) mergeCustomer(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	var req mergeCustomerRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	into := string([]byte(c.Params("id")))
	m, err := h.Starter.In(c, web.Tx(c)).StartMerge(p.OrgID, models.AutomationCustomer, req.From, into, p.Actor())
	return web.AcceptedMerge(c, "The customer", m, err)
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
	var before views.Customer
	cust, err := web.Update(c, workspace(c), "The customer", func(tx *gorm.DB, cust *models.Customer) error {
		before = views.ToCustomer(cust)
		if req.Name != nil {
			cust.Name = strings.TrimSpace(*req.Name)
		}
		if req.Email != nil {
			cust.Email = models.NormalizeEmail(*req.Email)
		}
		req.apply(cust)
		cust.UpdatedAt = models.Now()
		var err error
		if cust.Fields, err = models.ApplyFields(tx, p.OrgID, models.AutomationCustomer, cust.Fields, req.Fields, false); err != nil {
			return err
		}
		return models.RecordCustomerEvent(tx, p.OrgID, cust.ID, nil, "customer_updated", "Customer details updated", p.Actor())
	})
	if database.IsUniqueViolation(err) {
		return errEmailTaken
	}
	if err != nil {
		return err
	}
	if cust.Email != before.Email {
		if err := models.LinkCustomer(web.Tx(c), cust, before.Email); err != nil {
			return err
		}
	}
	after := views.ToCustomer(cust)
	if err := h.Starter.In(c, web.Tx(c)).EmitChange(p.OrgID, before, after, after, models.EventCustomerUpdated); err != nil {
		return err
	}
	return c.JSON(after)
}

// deleteCustomer removes a customer with their history and time entries;
// their tickets stay, unlinked (ADMIN only).
func (h *handlers) deleteCustomer(c *fiber.Ctx) error {
	if err := auth.RequireAdmin(auth.From(c)); err != nil {
		return err
	}
	return web.Delete(c, inWorkspace, "The customer", func(tx *gorm.DB, cust *models.Customer) error {
		if err := models.LinkPeople(tx, cust.OrgID, cust.Email); err != nil {
			return err
		}
		return h.Starter.In(c, tx).Emit(models.Event{OrgID: cust.OrgID, Type: models.EventCustomerDeleted, Object: views.ToCustomer(cust)})
	})
}

func (h *handlers) customerTickets(c *fiber.Ctx) error {
	cust, err := h.pathCustomer(c)
	if err != nil {
		return err
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.Ticket, views.Ticket]{Cursor: ticketCursor, View: views.ToTicket,
		Narrow: func(q *gorm.DB) *gorm.DB { return q.Where("customer_id = ?", cust.ID) }})
}

// pathCustomer is the workspace's customer the :id parameter names (a 404
// for anything else), for the routes under /customers/:id.
func (h *handlers) pathCustomer(c *fiber.Ctx) (*models.Customer, error) {
	return web.Load[models.Customer](c, h.DB, inWorkspace, "The customer")
}

// customerPage is pathCustomer and the page asked for, for the lists
// under /customers/:id whose envelope is their own.
func (h *handlers) customerPage(c *fiber.Ctx) (*models.Customer, web.PageRequest, error) {
	cust, err := h.pathCustomer(c)
	if err != nil {
		return nil, web.PageRequest{}, err
	}
	page, err := web.ParsePage(c)
	return cust, page, err
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
	p := auth.From(c)
	cust, page, err := h.customerPage(c)
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

// customerTimeline is everything about the customer and the CRM contact
// who is the same person, newest first.
func (h *handlers) customerTimeline(c *fiber.Ctx) error {
	cust, err := h.pathCustomer(c)
	if err != nil {
		return err
	}
	person := models.Person{CustomerID: cust.ID}
	if cust.ContactID != nil {
		person.ContactID = *cust.ContactID
	}
	return web.Timeline(c, h.DB, cust.OrgID, person, models.TimelineScope{})
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
	cust, err := h.pathCustomer(c)
	if err != nil {
		return err
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.CustomerEvent, eventResponse]{
		Narrow: func(q *gorm.DB) *gorm.DB { return q.Where("customer_id = ?", cust.ID) },
		Cursor: func(e *models.CustomerEvent) web.Cursor { return web.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} },
		View: func(e *models.CustomerEvent) eventResponse {
			return eventResponse{ID: e.ID, Type: e.Type, Summary: e.Summary, TicketID: e.TicketID, Actor: string(e.Actor), CreatedAt: e.CreatedAt}
		}})
}
