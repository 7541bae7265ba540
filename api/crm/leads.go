package crm

import (
	"cmp"
	"encoding/json"

	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

func leadCursor(l *models.Lead) web.Cursor { return web.Cursor{CreatedAt: l.CreatedAt, ID: l.ID} }

// listLeads lists leads, newest first; AGENTs see only their own.
func (h *handlers) listLeads(c *fiber.Ctx) error {
	var f struct {
		Status       string `json:"status" validate:"omitempty,oneof=NEW CONTACTED QUALIFIED CONVERTED UNQUALIFIED"`
		AssignedToID string `json:"assignedToId" validate:"omitempty,uuid"`
		Q            string `json:"q" query:"trim" validate:"max=200"`
	}
	return web.List(c, h.DB, h.inOrg("assigned_to_id"), web.Listing[models.Lead, views.Lead]{Filter: &f, FieldsOf: models.AutomationLead, Cursor: leadCursor, View: views.ToLead,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.Containing(models.Equal(models.Equal(q, "status", f.Status), "assigned_to_id", f.AssignedToID), f.Q, "name", "email", "company")
		}})
}

// leadFields are the intake fields (spec §2), shared by the webhook, create
// and update.
type leadFields struct {
	Name    string  `json:"name" validate:"max=200"`
	Email   string  `json:"email" validate:"omitempty,email,max=254"`
	Phone   string  `json:"phone" validate:"max=50"`
	Company string  `json:"company" validate:"max=200"`
	Value   float64 `json:"value" validate:"gte=0,lte=999999999999"`
	Source  string  `json:"source" validate:"max=100"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

// reachable requires a way to reach the lead.
func (f *leadFields) reachable() error {
	if strings.TrimSpace(f.Email) == "" && strings.TrimSpace(f.Phone) == "" && strings.TrimSpace(f.Name) == "" {
		return models.Invalid(
			models.FieldError{Field: "email", Code: "required_without", Message: "Send at least a name, an e-mail address or a phone number."},
		)
	}
	return nil
}

func (f *leadFields) payload(channel string) models.IntakePayload {
	return models.IntakePayload{Name: strings.TrimSpace(f.Name), Email: models.NormalizeEmail(f.Email),
		Phone: strings.TrimSpace(f.Phone), Company: strings.TrimSpace(f.Company), Value: cents(f.Value),
		Source: strings.TrimSpace(f.Source), Channel: channel}
}

type createLeadRequest struct {
	OrgID        string `json:"orgId" validate:"omitempty,uuid"`
	AssignedToID string `json:"assignedToId" validate:"omitempty,uuid"`
	leadFields
}

// checkFormats: a lead needs a way to reach it.
func (r *createLeadRequest) checkFormats() error { return r.reachable() }

// createLead creates a scored lead at once (201). Assignment (round-robin
// when none is given), the timeline entry and the assignee's notification
// follow in the LeadIntake workflow, recorded in the same transaction.
func (h *handlers) createLead(c *fiber.Ctx) error {
	var req createLeadRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, func(db *gorm.DB, orgID string) error {
		return models.CheckMember(db, orgID, "assignedToId", &req.AssignedToID)
	})
	if err != nil {
		return err
	}
	assignee := nullable(&req.AssignedToID)
	if assignee == nil && agentScoped(p) {
		assignee = &p.MemberID
	}
	pl := req.payload("api")
	now := models.Now()
	lead := &models.Lead{ID: models.NewID(), OrgID: p.OrgID, Name: pl.Name, Email: pl.Email, Phone: pl.Phone,
		Company: pl.Company, Value: pl.Value, Source: pl.Source, Status: models.LeadNew, AssignedToID: assignee,
		CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now}
	intake := &models.LeadIntake{ID: models.NewID(), OrgID: p.OrgID, DedupeKey: "api:" + lead.ID, LeadID: lead.ID,
		Payload: mustJSON(pl), Status: models.IntakeReceived, Authenticated: true, CreatedAt: now}
	tx := h.Starter.In(c, web.Tx(c))
	if lead.Email != "" {
		var existing models.Lead
		if err := tx.Select("id").Scopes(models.LeadWithEmail(p.OrgID, lead.Email)).Take(&existing).Error; err == nil {
			return models.Err(models.ErrConflict, "duplicate_lead", "Lead %s already has this e-mail address.", existing.ID)
		}
	}
	if err := models.RescoreLead(tx.DB, lead, now); err != nil {
		return err
	}
	if lead.Fields, err = models.ApplyFields(tx.DB, p.OrgID, models.AutomationLead, nil, req.Fields, true); err != nil {
		return err
	}
	if err := tx.Create(lead).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "duplicate_lead", "A lead with this e-mail address exists.")
		}
		return err
	}
	if err := tx.Create(intake).Error; err != nil {
		return err
	}
	view := views.ToLead(lead)
	for _, typ := range []string{models.EventLeadCreated, models.EventLeadScored} {
		if err := tx.Emit(models.Event{OrgID: p.OrgID, Type: typ, Object: view}); err != nil {
			return err
		}
	}
	err = tx.Start(record.Start{WorkflowID: names.LeadIntakeID(p.OrgID, intake.DedupeKey), Workflow: names.LeadIntakeWorkflow,
		Input: workflows.LeadIntakeInput{IntakeID: intake.ID, OrgID: p.OrgID}, OrgID: p.OrgID, Kind: names.KindLeadIntake})
	if err != nil {
		return err
	}
	c.Location("/crm/leads/" + lead.ID)
	return c.Status(fiber.StatusCreated).JSON(view)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (h *handlers) getLead(c *fiber.Ctx) error {
	return web.Get(c, h.DB, h.inOrg("assigned_to_id"), "The lead", views.ToLead)
}

type updateLeadRequest struct {
	OrgID        string   `json:"orgId" validate:"omitempty,uuid"`
	Name         *string  `json:"name" validate:"omitnil,max=200"`
	Email        *string  `json:"email" validate:"omitnil,max=254,eq=|email"`
	Phone        *string  `json:"phone" validate:"omitnil,max=50"`
	Company      *string  `json:"company" validate:"omitnil,max=200"`
	Value        *float64 `json:"value" validate:"omitnil,gte=0,lte=999999999999"`
	Source       *string  `json:"source" validate:"omitnil,max=100"`
	Status       *string  `json:"status" validate:"omitnil,oneof=NEW CONTACTED QUALIFIED CONVERTED UNQUALIFIED"`
	AssignedToID *string  `json:"assignedToId" validate:"omitnil,eq=|uuid"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

// updateLead changes a lead and recomputes its score; status changes
// follow the lifecycle.
func (h *handlers) updateLead(c *fiber.Ctx) error {
	var req updateLeadRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, func(db *gorm.DB, orgID string) error {
		return models.CheckMember(db, orgID, "assignedToId", req.AssignedToID)
	})
	if err != nil {
		return err
	}
	var before views.Lead
	l, err := web.Update(c, rowScope(p, "assigned_to_id"), "The lead", func(tx *gorm.DB, l *models.Lead) error {
		before = views.ToLead(l)
		if req.Status != nil {
			if err := models.CheckLeadMove(l.Status, *req.Status); err != nil {
				return err
			}
			l.Status = *req.Status
		}
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = strings.TrimSpace(*v)
			}
		}
		set(&l.Name, req.Name)
		set(&l.Phone, req.Phone)
		set(&l.Company, req.Company)
		set(&l.Source, req.Source)
		if req.Email != nil {
			l.Email = models.NormalizeEmail(*req.Email)
		}
		if req.Value != nil {
			l.Value = cents(*req.Value)
		}
		if req.AssignedToID != nil {
			l.AssignedToID = nullable(req.AssignedToID)
		}
		if err := (&leadFields{Name: l.Name, Email: l.Email, Phone: l.Phone}).reachable(); err != nil {
			return err
		}
		now := models.Now()
		if err := models.RescoreLead(tx, l, now); err != nil {
			return err
		}
		l.UpdatedAt = now
		var err error
		l.Fields, err = models.ApplyFields(tx, l.OrgID, models.AutomationLead, l.Fields, req.Fields, false)
		return err
	})
	if err != nil {
		if database.IsUniqueViolation(err) {
			return models.Err(models.ErrConflict, "duplicate_lead", "Another lead has this e-mail address.")
		}
		return err
	}
	after := views.ToLead(l)
	if err := emitLeadChange(h.Starter.In(c, web.Tx(c)), before, after, models.EventLeadUpdated); err != nil {
		return err
	}
	return c.JSON(after)
}

// emitLeadChange records, in tx, the events of a lead's change from before
// to after (views.LeadChangeTypes).
func emitLeadChange(tx *record.Tx, before, after views.Lead, typ string) error {
	return tx.EmitChange(after.OrgID, before, after, after, views.LeadChangeTypes(before, after, typ)...)
}

func (h *handlers) deleteLead(c *fiber.Ctx) error {
	return web.Delete(c, h.inOrg("assigned_to_id"), "The lead", func(tx *gorm.DB, l *models.Lead) error {
		return h.Starter.In(c, tx).Emit(models.Event{OrgID: l.OrgID, Type: models.EventLeadDeleted, Object: views.ToLead(l)})
	})
}

type activityResponse struct {
	ID         string    `json:"id"`
	LeadID     string    `json:"leadId"`
	Type       string    `json:"type"`
	Body       string    `json:"body"`
	OccurredAt time.Time `json:"occurredAt"`
	CreatedBy  string    `json:"createdBy"`
	CreatedAt  time.Time `json:"createdAt"`
}

func toActivity(a *models.LeadActivity) activityResponse {
	return activityResponse{ID: a.ID, LeadID: a.LeadID, Type: a.Type, Body: a.Body, OccurredAt: a.OccurredAt,
		CreatedBy: views.CRMActor(a.CreatedBy), CreatedAt: a.CreatedAt}
}

// listLeadActivities is the lead's timeline, most recent occurrence first.
func (h *handlers) listLeadActivities(c *fiber.Ctx) error {
	l, err := web.Load[models.Lead](c, h.DB, h.inOrg("assigned_to_id"), "The lead")
	if err != nil {
		return err
	}
	return web.List(c, h.DB, web.In(web.Scope{OrgID: l.OrgID}), web.Listing[models.LeadActivity, activityResponse]{
		Narrow:     func(q *gorm.DB) *gorm.DB { return q.Where("lead_id = ?", l.ID) },
		TimeColumn: "occurred_at", View: toActivity,
		Cursor: func(a *models.LeadActivity) web.Cursor { return web.Cursor{CreatedAt: a.OccurredAt, ID: a.ID} }})
}

type addActivityRequest struct {
	OrgID      string     `json:"orgId" validate:"omitempty,uuid"`
	Type       string     `json:"type" validate:"required,oneof=note call email meeting message system"`
	Body       string     `json:"body" validate:"required,notblank,max=10000"`
	OccurredAt *time.Time `json:"occurredAt"`
}

// checkFormats: an activity cannot have happened in the future (five
// minutes of clock skew are tolerated).
func (r *addActivityRequest) checkFormats() error {
	if r.OccurredAt != nil && r.OccurredAt.After(models.Now().Add(5*time.Minute)) {
		return models.Invalid(models.FieldError{Field: "occurredAt", Code: "future", Message: "Must not be in the future."})
	}
	return nil
}

// addLeadActivity adds to the timeline and rescores the lead.
func (h *handlers) addLeadActivity(c *fiber.Ctx) error {
	var req addActivityRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, nil)
	if err != nil {
		return err
	}
	now := models.Now()
	when := now
	if req.OccurredAt != nil {
		when = req.OccurredAt.UTC().Truncate(time.Microsecond)
	}
	a, err := h.logActivity(c, p, c.Params("id"), &models.LeadActivity{Type: req.Type, Body: strings.TrimSpace(req.Body),
		OccurredAt: when, CreatedBy: p.Actor(), CreatedAt: now})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toActivity(a))
}

// logActivity adds an activity to a lead visible to p, rescoring it, in
// the request's transaction.
func (h *handlers) logActivity(c *fiber.Ctx, p *auth.Principal, leadID string, a *models.LeadActivity) (*models.LeadActivity, error) {
	tx := web.Tx(c)
	l, err := web.Find[models.Lead](models.LockForUpdate(tx), rowScope(p, "assigned_to_id"), leadID, "The lead")
	if err != nil {
		return nil, err
	}
	a.ID, a.OrgID, a.LeadID = models.NewID(), l.OrgID, l.ID
	before := views.ToLead(l)
	if err := models.AddLeadActivity(tx, l, a); err != nil {
		return nil, err
	}
	return a, emitLeadChange(h.Starter.In(c, tx), before, views.ToLead(l), "")
}

type sendMessageRequest struct {
	OrgID   string `json:"orgId" validate:"omitempty,uuid"`
	Channel string `json:"channel" validate:"required,oneof=whatsapp sms"`
	Text    string `json:"text" validate:"required,notblank,max=1000"`
}

// sendMessage builds a WhatsApp or SMS deep link to the lead's phone (in
// E.164) and logs it on the timeline.
func (h *handlers) sendMessage(c *fiber.Ctx) error {
	var req sendMessageRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, nil)
	if err != nil {
		return err
	}
	l, err := web.Find[models.Lead](h.DB.WithContext(c.UserContext()), rowScope(p, "assigned_to_id"), c.Params("id"), "The lead")
	if err != nil {
		return err
	}
	phone := models.NormalizePhone(l.Phone)
	if phone == "" {
		return models.Err(models.ErrInvalid, "no_valid_phone", "The lead has no valid phone number.")
	}
	var link string
	if req.Channel == "whatsapp" {
		link = "https://wa.me/" + strings.TrimPrefix(phone, "+") + "?text=" + url.QueryEscape(req.Text)
	} else {
		link = "sms:" + phone + "?body=" + url.QueryEscape(req.Text)
	}
	now := models.Now()
	if _, err := h.logActivity(c, p, l.ID, &models.LeadActivity{Type: "message",
		Body: req.Channel + " message to " + phone + ": " + strings.TrimSpace(req.Text), OccurredAt: now, CreatedBy: p.Actor(), CreatedAt: now}); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"channel": req.Channel, "phone": phone, "url": link})
}

type convertRequest struct {
	OrgID       string   `json:"orgId" validate:"omitempty,uuid"`
	DealTitle   string   `json:"dealTitle" validate:"max=300"`
	Amount      *float64 `json:"amount" validate:"omitnil,gte=0,lte=999999999999"`
	Stage       string   `json:"stage" validate:"omitempty,oneof=NEW QUALIFIED MEETING PROPOSAL NEGOTIATION"`
	ContactType string   `json:"contactType" validate:"omitempty,oneof=person company"`
}

// convertLead turns a lead into a contact and a deal and marks it
// CONVERTED, in one transaction. The body is optional.
func (h *handlers) convertLead(c *fiber.Ctx) error {
	var req convertRequest
	if len(c.Body()) > 0 {
		if err := web.Decode(c, &req); err != nil {
			return err
		}
	}
	p, err := h.orgOf(c, req.OrgID)
	if err != nil {
		return err
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	var out struct {
		Lead    views.Lead `json:"lead"`
		Contact struct {
			ID string `json:"id"`
		} `json:"contact"`
		Deal views.Deal `json:"deal"`
	}
	tx := web.Tx(c)
	l, err := web.Find[models.Lead](models.LockForUpdate(tx), rowScope(p, "assigned_to_id"), c.Params("id"), "The lead")
	if err != nil {
		return err
	}
	if l.Status == models.LeadConverted {
		return models.Err(models.ErrConflict, "already_converted", "The lead was already converted.")
	}
	if l.Status == models.LeadUnqualified {
		return models.Err(models.ErrConflict, "illegal_status_transition", "An UNQUALIFIED lead cannot be converted; requalify it first.")
	}
	before := views.ToLead(l)
	now := models.Now()
	contact := &models.Contact{ID: models.NewID(), OrgID: l.OrgID, Name: cmp.Or(l.Name, l.Email), Email: l.Email,
		Company: l.Company, Type: cmp.Or(req.ContactType, models.ContactPerson),
		Notes: "Converted from lead " + l.ID, CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now}
	contact.SetPhone(l.Phone)
	if contact.Name == "" {
		contact.Name = l.Phone
	}
	amount := l.Value
	if req.Amount != nil {
		amount = cents(*req.Amount)
	}
	title := strings.TrimSpace(req.DealTitle)
	if title == "" {
		title = cmp.Or(l.Company, contact.Name) + " deal"
	}
	deal := &models.Deal{ID: models.NewID(), OrgID: l.OrgID, Title: title, Amount: amount, Currency: org.Currency,
		Stage: cmp.Or(req.Stage, models.StageQualified), CompanyName: l.Company, ContactEmail: l.Email,
		ContactID: &contact.ID, LeadID: &l.ID, AssignedToID: l.AssignedToID, CreatedBy: p.Actor(),
		StageChangedAt: now, CreatedAt: now, UpdatedAt: now}
	// The contact and the deal start with their custom fields' defaults.
	if contact.Fields, err = models.FieldDefaults(tx, l.OrgID, models.AutomationContact); err != nil {
		return err
	}
	if deal.Fields, err = models.FieldDefaults(tx, l.OrgID, models.AutomationDeal); err != nil {
		return err
	}
	for _, row := range []any{contact, deal, &models.DealStageChange{ID: models.NewID(), OrgID: l.OrgID, DealID: deal.ID,
		ToStage: deal.Stage, ChangedBy: p.Actor(), CreatedAt: now}} {
		if err := tx.Create(row).Error; err != nil {
			return err
		}
	}
	if err := models.LinkContact(tx, contact, ""); err != nil {
		return err
	}
	l.Status, l.ContactID, l.DealID = models.LeadConverted, &contact.ID, &deal.ID
	if err := models.AddLeadActivity(tx, l, &models.LeadActivity{ID: models.NewID(), OrgID: l.OrgID, LeadID: l.ID,
		Type: "system", Body: "Converted to contact " + contact.ID + " and deal " + deal.ID, OccurredAt: now,
		CreatedBy: p.Actor(), CreatedAt: now}); err != nil {
		return err
	}
	out.Lead, out.Contact.ID, out.Deal = views.ToLead(l), contact.ID, views.ToDeal(deal)
	// One record.Tx for the three objects' events: each endpoint they
	// reach is woken once.
	rec := h.Starter.In(c, tx)
	err = rec.Emit(models.Event{OrgID: l.OrgID, Type: models.EventContactCreated, Object: views.ToContact(contact)},
		models.Event{OrgID: l.OrgID, Type: models.EventDealCreated, Object: out.Deal})
	if err != nil {
		return err
	}
	if err := emitLeadChange(rec, before, out.Lead, models.EventLeadConverted); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}
