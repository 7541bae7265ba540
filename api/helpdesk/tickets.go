package helpdesk

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
)

// defaultAutoClose is how long a solved ticket waits before closing.
const defaultAutoClose = 4 * 24 * time.Hour

var errTicketClosed = models.Err(models.ErrConflict, "ticket_closed", "The ticket is closed; open a new one.")

type ticketResponse struct {
	ID              string     `json:"id"`
	WorkspaceID     string     `json:"workspaceId"`
	Number          int        `json:"number"`
	Subject         string     `json:"subject"`
	Description     string     `json:"description"`
	Status          string     `json:"status"`
	Priority        string     `json:"priority"`
	Channel         string     `json:"channel"`
	Email           string     `json:"email"`
	CustomerID      *string    `json:"customerId"`
	AgentID         *string    `json:"agentId"`
	Tags            []string   `json:"tags"`
	AllowedStatuses []string   `json:"allowedStatuses"`
	FirstResponseAt *time.Time `json:"firstResponseAt"`
	SolvedAt        *time.Time `json:"solvedAt"`
	ClosedAt        *time.Time `json:"closedAt"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
}

func toTicket(t *models.Ticket) ticketResponse {
	tags := []string{}
	_ = json.Unmarshal([]byte(t.Tags), &tags)
	allowed := []string{}
	for _, st := range models.AllowedTicketMoves(t.Status) {
		if st != models.TicketSolved || t.AgentID != nil {
			allowed = append(allowed, st)
		}
	}
	return ticketResponse{ID: t.ID, WorkspaceID: t.OrgID, Number: t.Number, Subject: t.Subject, Description: t.Description,
		Status: t.Status, Priority: t.Priority, Channel: t.Channel, Email: t.RequesterEmail, CustomerID: t.CustomerID,
		AgentID: t.AgentID, Tags: tags, AllowedStatuses: allowed, FirstResponseAt: t.FirstResponseAt,
		SolvedAt: t.SolvedAt, ClosedAt: t.ClosedAt, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func ticketCursor(t *models.Ticket) web.Cursor { return web.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} }

// ticketQuery lists a workspace's tickets with the list filters applied.
func (h *handlers) listTickets(c *fiber.Ctx) error {
	p := auth.From(c)
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	filter := struct {
		Status     string `json:"status" validate:"omitempty,oneof=new open pending on_hold solved closed"`
		Priority   string `json:"priority" validate:"omitempty,oneof=low normal high urgent"`
		AgentID    string `json:"agentId" validate:"omitempty,uuid"`
		CustomerID string `json:"customerId" validate:"omitempty,uuid"`
		Q          string `json:"q" validate:"max=200"`
	}{c.Query("status"), c.Query("priority"), c.Query("agentId"), c.Query("customerId"), strings.TrimSpace(c.Query("q"))}
	if err := web.Validate(&filter); err != nil {
		return err
	}
	q := h.DB.WithContext(c.UserContext()).Model(&models.Ticket{}).Where("org_id = ?", p.OrgID)
	for col, v := range map[string]string{"status": filter.Status, "priority": filter.Priority, "agent_id": filter.AgentID, "customer_id": filter.CustomerID} {
		if v != "" {
			q = q.Where(col+" = ?", v)
		}
	}
	if filter.Q != "" {
		q = web.ContainsText(q, filter.Q, "subject", "description", "requester_email")
	}
	rows, err := web.Paginate(q, page, ticketCursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toTicket)
}

type createTicketRequest struct {
	Subject     string   `json:"subject" validate:"required,notblank,max=300"`
	Description string   `json:"description" validate:"max=20000"`
	Priority    string   `json:"priority" validate:"omitempty,oneof=low normal high urgent"`
	Email       string   `json:"email" validate:"required,email,max=254"`
	Name        string   `json:"name" validate:"max=200"`
	Channel     string   `json:"channel" validate:"omitempty,oneof=email web chat phone api portal sms whatsapp other"`
	Tags        []string `json:"tags" validate:"max=20,dive,notblank,max=50"`
}

// createTicket opens a ticket for the requester's e-mail (linking or
// creating the customer), numbered per workspace. The plan's limits are
// checked in the same transaction, under a lock on the workspace's ticket
// counter, so two creations can never both take the last slot.
func (h *handlers) createTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createTicketRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	org, err := models.FindOrg(ctx, h.DB, p.OrgID)
	if err != nil {
		return err
	}
	now := models.Now()
	t := &models.Ticket{ID: models.NewID(), OrgID: p.OrgID, Subject: strings.TrimSpace(req.Subject),
		Description: req.Description, Status: models.TicketNew, Priority: cmp.Or(req.Priority, "normal"),
		Channel: cmp.Or(req.Channel, "web"), RequesterEmail: models.NormalizeEmail(req.Email),
		Tags: tagsJSON(req.Tags), CreatedAt: now, UpdatedAt: now}
	if err := models.OpenTicket(ctx, h.DB, org, t, strings.TrimSpace(req.Name), p.Actor()); err != nil {
		return err
	}
	c.Location("/helpdesk/tickets/" + t.ID)
	return c.Status(fiber.StatusCreated).JSON(toTicket(t))
}

func tagsJSON(tags []string) string {
	clean := []string{}
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			clean = append(clean, t)
		}
	}
	b, _ := json.Marshal(clean)
	return string(b)
}

// findTicket loads one of the workspace's tickets; anything else is a 404.
func findTicket(ctx context.Context, db *gorm.DB, orgID, id string) (*models.Ticket, error) {
	return findIn[models.Ticket](ctx, db, orgID, id, "The ticket")
}

func (h *handlers) getTicket(c *fiber.Ctx) error {
	return getIn(c, h.DB, auth.From(c).OrgID, "The ticket", toTicket)
}

type updateTicketRequest struct {
	Status   *string `json:"status" validate:"omitnil,oneof=new open pending on_hold solved closed"`
	Priority *string `json:"priority" validate:"omitnil,oneof=low normal high urgent"`
	// AgentID is a member id, or null to unassign; "" is refused (see
	// checkAgent).
	AgentID web.Nullable[string] `json:"agentId"`
	Subject *string              `json:"subject" validate:"omitnil,notblank,max=300"`
	Tags    *[]string            `json:"tags" validate:"omitnil,max=20,dive,notblank,max=50"`
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

// updateTicket changes status, priority, assignee, subject or tags. Status
// changes follow the workflow (409 names the allowed moves); solving starts
// the auto-close timer; assigning notifies the agent.
func (h *handlers) updateTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	var req updateTicketRequest
	ctx := c.UserContext()
	if err := web.Decode(c, &req, req.checkAgent, func() error {
		if !req.AgentID.HasValue() || req.AgentID.Value == "" {
			return nil
		}
		return models.CheckMember(h.DB.WithContext(ctx), p.OrgID, "agentId", &req.AgentID.Value)
	}); err != nil {
		return err
	}
	var t *models.Ticket
	err := h.Starter.Transact(ctx, func(tx *outbox.Tx) error {
		var err error
		if t, err = findTicket(ctx, models.LockForUpdate(tx.DB), p.OrgID, c.Params("id")); err != nil {
			return err
		}
		if t.Status == models.TicketClosed {
			return errTicketClosed
		}
		now := models.Now()
		var events []string
		if req.AgentID.Set {
			var agent *string
			if !req.AgentID.Null {
				agent = &req.AgentID.Value
			}
			if !sameID(agent, t.AgentID) {
				t.AgentID = agent
				if agent == nil {
					events = append(events, "Ticket #"+models.Itoa(t.Number)+" unassigned")
				} else {
					events = append(events, "Ticket #"+models.Itoa(t.Number)+" assigned to an agent")
					if err := RecordNotification(tx, &models.Notification{ID: models.NewID(), OrgID: t.OrgID, MemberID: *agent,
						Type: "ticket_assigned", Title: "Ticket #" + models.Itoa(t.Number) + " assigned to you", Body: t.Subject,
						ResourceType: "ticket", ResourceID: t.ID, CreatedAt: now}); err != nil {
						return err
					}
				}
			}
		}
		if req.Status != nil && *req.Status != t.Status {
			from := t.Status
			if err := models.CheckTicketMove(from, *req.Status, t.AgentID != nil); err != nil {
				return err
			}
			if err := h.setStatus(tx, t, *req.Status, now); err != nil {
				return err
			}
			events = append(events, "Ticket #"+models.Itoa(t.Number)+" moved from "+from+" to "+t.Status)
		}
		if t.Status == models.TicketSolved && t.AgentID == nil {
			return models.Err(models.ErrConflict, "assignee_required", "A solved ticket keeps its assignee; reopen it first.")
		}
		if req.Priority != nil {
			t.Priority = *req.Priority
		}
		if req.Subject != nil {
			t.Subject = strings.TrimSpace(*req.Subject)
		}
		if req.Tags != nil {
			t.Tags = tagsJSON(*req.Tags)
		}
		t.UpdatedAt = now
		if err := tx.Save(t).Error; err != nil {
			return err
		}
		if t.CustomerID != nil {
			for _, e := range events {
				if err := models.RecordCustomerEvent(tx.DB, t.OrgID, *t.CustomerID, &t.ID, "ticket_updated", e, p.Actor()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(toTicket(t))
}

// setStatus moves t to status, keeping the solved bookkeeping: solving
// records solvedAt, counts the solve and starts its auto-close timer;
// leaving solved clears solvedAt.
func (h *handlers) setStatus(tx *outbox.Tx, t *models.Ticket, status string, now time.Time) error {
	wasSolved := t.Status == models.TicketSolved
	t.Status = status
	switch {
	case status == models.TicketSolved:
		t.SolvedAt = &now
		t.SolveCount++
		after := h.AutoCloseAfter
		if after <= 0 {
			after = defaultAutoClose
		}
		return tx.Start(outbox.Start{WorkflowID: workflows.TicketAutoCloseID(t.ID, t.SolveCount), Workflow: workflows.TicketAutoCloseWorkflow,
			Input: workflows.TicketAutoCloseInput{TicketID: t.ID, SolveCount: t.SolveCount, After: after}, OrgID: t.OrgID,
			Kind: workflows.KindTicketAutoClose})
	case wasSolved:
		t.SolvedAt = nil
		return cancelAutoClose(tx, t)
	}
	return nil
}

// cancelAutoClose records, in tx, the cancellation of the auto-close timer
// of the solved state t is leaving, so that only live timers stay in the
// Temporal UI. (The timer would not close the ticket anyway: it closes only
// the solved state it was started for.)
func cancelAutoClose(tx *outbox.Tx, t *models.Ticket) error {
	err := tx.Start(outbox.Start{WorkflowID: workflows.TicketAutoCloseCancelID(t.ID, t.SolveCount), Workflow: workflows.TicketAutoCloseCancelWorkflow,
		Input: workflows.TicketAutoCloseCancelInput{TicketID: t.ID, SolveCount: t.SolveCount}, OrgID: t.OrgID,
		Kind: workflows.KindTicketAutoCloseCancel})
	if errors.Is(err, outbox.ErrDuplicate) {
		return nil // already requested
	}
	return err
}

func sameID(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func (h *handlers) deleteTicket(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	ctx := c.UserContext()
	err := h.Starter.Transact(ctx, func(tx *outbox.Tx) error {
		t, err := findTicket(ctx, models.LockForUpdate(tx.DB), p.OrgID, c.Params("id"))
		if err != nil {
			return err
		}
		if err := tx.Delete(t).Error; err != nil {
			return err
		}
		if t.Status == models.TicketSolved {
			if err := cancelAutoClose(tx, t); err != nil {
				return err
			}
		}
		if t.CustomerID == nil {
			return nil
		}
		return models.RecordCustomerEvent(tx.DB, t.OrgID, *t.CustomerID, nil, "ticket_deleted",
			"Ticket #"+models.Itoa(t.Number)+" deleted", p.Actor())
	})
	if err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
