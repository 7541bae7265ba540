package helpdesk

import (
	"cmp"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

type timeEntryResponse struct {
	ID          string    `json:"id"`
	CustomerID  string    `json:"customerId"`
	TicketID    string    `json:"ticketId"`
	MemberID    *string   `json:"memberId"`
	Minutes     int       `json:"minutes"`
	Description string    `json:"description"`
	Billable    bool      `json:"billable"`
	CreatedAt   time.Time `json:"createdAt"`
}

func toTimeEntry(t *models.TimeEntry) timeEntryResponse {
	return timeEntryResponse{ID: t.ID, CustomerID: t.CustomerID, TicketID: t.TicketID, MemberID: t.MemberID,
		Minutes: t.Minutes, Description: t.Description, Billable: t.Billable, CreatedAt: t.CreatedAt}
}

type timeEntryPage struct {
	web.Page[timeEntryResponse]
	TotalMinutes    int64 `json:"totalMinutes"`
	BillableMinutes int64 `json:"billableMinutes"`
}

// listTimeEntries pages through the entries and adds the customer's totals
// (all entries, not just the page), summed in SQL.
func (h *handlers) listTimeEntries(c *fiber.Ctx) error {
	cust, page, err := h.customerPage(c)
	if err != nil {
		return err
	}
	db := h.DB.WithContext(c.UserContext())
	scoped := func() *gorm.DB {
		return workspace(c).Narrow(db.Model(&models.TimeEntry{})).Where("customer_id = ?", cust.ID)
	}
	rows, err := web.Paginate(scoped(), page, func(t *models.TimeEntry) web.Cursor { return web.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} })
	if err != nil {
		return err
	}
	total, billable, err := models.TimeTotals(scoped())
	if err != nil {
		return err
	}
	return web.SendJSON(c, timeEntryPage{Page: web.MapPage(rows, toTimeEntry), TotalMinutes: total, BillableMinutes: billable})
}

type addTimeEntryRequest struct {
	Minutes     int    `json:"minutes" validate:"required,gte=1,lte=1440"`
	Description string `json:"description" validate:"max=2000"`
	TicketID    string `json:"ticketId" validate:"required,uuid"`
	Billable    *bool  `json:"billable"`
}

// addTimeEntry logs time on one of the customer's tickets.
func (h *handlers) addTimeEntry(c *fiber.Ctx) error {
	p := auth.From(c)
	var req addTimeEntryRequest
	// The ticket is checked against the customer, so the customer is
	// looked up first; a bad body is still reported before a 404.
	err := web.Decode(c, &req)
	if err != nil && !errors.Is(err, models.ErrInvalid) {
		return err
	}
	cust, custErr := h.pathCustomer(c)
	if custErr != nil {
		return cmp.Or(err, custErr)
	}
	t, ticketErr := web.Find[models.Ticket](h.DB.WithContext(c.UserContext()), workspace(c), req.TicketID, "The ticket")
	if ticketErr != nil && !errors.Is(ticketErr, models.ErrNotFound) {
		return ticketErr
	}
	if ticketErr != nil || t.CustomerID == nil || *t.CustomerID != cust.ID {
		err = web.MergeInvalid(err, models.Invalid(models.FieldError{Field: "ticketId", Code: "not_customer_ticket", Message: "Must be one of this customer's tickets."}))
	}
	if err != nil {
		return err
	}
	entry := &models.TimeEntry{ID: models.NewID(), OrgID: p.OrgID, CustomerID: cust.ID, TicketID: t.ID,
		Minutes: req.Minutes, Description: strings.TrimSpace(req.Description), Billable: req.Billable == nil || *req.Billable,
		CreatedAt: models.Now()}
	if !p.IsKey() {
		entry.MemberID = &p.MemberID
	}
	if err := models.LogTime(web.Tx(c), entry, t, p.Actor()); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toTimeEntry(entry))
}
