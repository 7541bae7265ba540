package crm

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

func dealCursor(d *models.Deal) web.Cursor { return web.Cursor{CreatedAt: d.CreatedAt, ID: d.ID} }

// listDeals lists deals, newest first; AGENTs see only deals assigned to them.
func (h *handlers) listDeals(c *fiber.Ctx) error {
	var f struct {
		Stage        string `validate:"omitempty,oneof=NEW QUALIFIED MEETING PROPOSAL NEGOTIATION WON LOST" json:"stage"`
		AssignedToID string `validate:"omitempty,uuid" json:"assignedToId"`
	}
	return web.List(c, h.DB, h.inOrg("assigned_to_id"), web.Listing[models.Deal, views.Deal]{Filter: &f, FieldsOf: models.AutomationDeal, Cursor: dealCursor, View: views.ToDeal,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.Equal(models.Equal(q, "stage", f.Stage), "assigned_to_id", f.AssignedToID)
		}})
}

type dealFields struct {
	Amount       *float64 `json:"amount" validate:"omitnil,gte=0,lte=999999999999"`
	Currency     *string  `json:"currency" validate:"omitnil,iso4217"`
	CloseDate    *string  `json:"closeDate" validate:"omitnil,eq=|datetime=2006-01-02"`
	CompanyName  *string  `json:"companyName" validate:"omitnil,max=200"`
	ContactEmail *string  `json:"contactEmail" validate:"omitnil,max=254,eq=|email"`
	ContactID    *string  `json:"contactId" validate:"omitnil,eq=|uuid"`
	LeadID       *string  `json:"leadId" validate:"omitnil,eq=|uuid"`
	AssignedToID *string  `json:"assignedToId" validate:"omitnil,eq=|uuid"`
	LostReason   *string  `json:"lostReason" validate:"omitnil,max=1000"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

func (f *dealFields) apply(d *models.Deal) {
	if f.Amount != nil {
		d.Amount = cents(*f.Amount)
	}
	if f.Currency != nil {
		d.Currency = *f.Currency
	}
	if f.CloseDate != nil {
		d.CloseDate = *f.CloseDate
	}
	if f.CompanyName != nil {
		d.CompanyName = strings.TrimSpace(*f.CompanyName)
	}
	if f.ContactEmail != nil {
		d.ContactEmail = models.NormalizeEmail(*f.ContactEmail)
	}
	if f.ContactID != nil {
		d.ContactID = nullable(f.ContactID)
	}
	if f.LeadID != nil {
		d.LeadID = nullable(f.LeadID)
	}
	if f.AssignedToID != nil {
		d.AssignedToID = nullable(f.AssignedToID)
	}
	if f.LostReason != nil {
		d.LostReason = strings.TrimSpace(*f.LostReason)
	}
}

// check validates every reference against the organization.
func (f *dealFields) check(db *gorm.DB, orgID string) error {
	return web.MergeInvalid(
		models.CheckMember(db, orgID, "assignedToId", f.AssignedToID),
		models.CheckReference(db, &models.Contact{}, orgID, "contactId", f.ContactID, linked),
		models.CheckReference(db, &models.Lead{}, orgID, "leadId", f.LeadID, linked),
	)
}

type createDealRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	Title string `json:"title" validate:"required,notblank,max=300"`
	Stage string `json:"stage" validate:"omitempty,oneof=NEW QUALIFIED MEETING PROPOSAL NEGOTIATION WON LOST"`
	dealFields
}

// checkFormats: a deal created as LOST says why.
func (r *createDealRequest) checkFormats() error {
	if r.Stage == models.StageLost && (r.LostReason == nil || strings.TrimSpace(*r.LostReason) == "") {
		return models.Invalid(models.FieldError{Field: "lostReason", Code: "required", Message: "A deal created as LOST needs a lostReason."})
	}
	return nil
}

func (h *handlers) createDeal(c *fiber.Ctx) error {
	var req createDealRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, req.check)
	if err != nil {
		return err
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	now := models.Now()
	d := &models.Deal{ID: models.NewID(), OrgID: p.OrgID, Title: strings.TrimSpace(req.Title), Currency: org.Currency,
		Stage: models.StageNew, CreatedBy: p.Actor(), StageChangedAt: now, CreatedAt: now, UpdatedAt: now}
	if req.Stage != "" {
		d.Stage = req.Stage
	}
	req.apply(d)
	if d.AssignedToID == nil && agentScoped(p) {
		d.AssignedToID = &p.MemberID // an AGENT's own deal stays visible to them
	}
	if d.Stage == models.StageWon {
		d.WonAt = &now
	}
	tx := web.Tx(c)
	if d.Fields, err = models.ApplyFields(tx, p.OrgID, models.AutomationDeal, nil, req.Fields, true); err != nil {
		return err
	}
	if err := tx.Create(d).Error; err != nil {
		return err
	}
	first := &models.DealStageChange{ID: models.NewID(), OrgID: d.OrgID, DealID: d.ID, FromStage: "",
		ToStage: d.Stage, ChangedBy: p.Actor(), CreatedAt: now}
	if err := tx.Create(first).Error; err != nil {
		return err
	}
	view, err := withHistory(tx, d)
	if err != nil {
		return err
	}
	if err := h.Starter.In(c, tx).Emit(models.Event{OrgID: d.OrgID, Type: models.EventDealCreated, Object: view}); err != nil {
		return err
	}
	c.Location("/crm/deals/" + d.ID)
	return c.Status(fiber.StatusCreated).JSON(view)
}

// withHistory is d as the CRM shows it with its stage history, read on db
// (the request's transaction after a change).
func withHistory(db *gorm.DB, d *models.Deal) (views.Deal, error) {
	history, err := models.DealStageHistory(db, d.ID)
	if err != nil {
		return views.Deal{}, err
	}
	return views.DealWithHistory(d, history), nil
}

func (h *handlers) getDeal(c *fiber.Ctx) error {
	d, err := web.Load[models.Deal](c, h.DB, h.inOrg("assigned_to_id"), "The deal")
	if err != nil {
		return err
	}
	view, err := withHistory(h.DB.WithContext(c.UserContext()), d)
	if err != nil {
		return err
	}
	return c.JSON(view)
}

type updateDealRequest struct {
	OrgID string  `json:"orgId" validate:"omitempty,uuid"`
	Title *string `json:"title" validate:"omitnil,notblank,max=300"`
	Stage *string `json:"stage" validate:"omitnil,oneof=NEW QUALIFIED MEETING PROPOSAL NEGOTIATION WON LOST"`
	dealFields
}

// updateDeal changes a deal; a stage change follows the pipeline rules and
// is recorded in the deal's history in the same transaction.
func (h *handlers) updateDeal(c *fiber.Ctx) error {
	var req updateDealRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, req.check)
	if err != nil {
		return err
	}
	var before views.Deal
	d, err := web.Update(c, rowScope(p, "assigned_to_id"), "The deal", func(tx *gorm.DB, d *models.Deal) error {
		before = views.ToDeal(d)
		if req.Title != nil {
			d.Title = strings.TrimSpace(*req.Title)
		}
		req.apply(d)
		now := models.Now()
		if req.Stage != nil {
			if err := models.MoveDealStage(tx, d, *req.Stage, p.IsAdmin(), p.Actor(), now); err != nil {
				return err
			}
		}
		if err := models.CheckDeal(d); err != nil {
			return err
		}
		d.UpdatedAt = now
		var err error
		d.Fields, err = models.ApplyFields(tx, d.OrgID, models.AutomationDeal, d.Fields, req.Fields, false)
		return err
	})
	if err != nil {
		return err
	}
	tx := web.Tx(c)
	view, err := withHistory(tx, d)
	if err != nil {
		return err
	}
	if err := h.emitDealChange(c, tx, before, view); err != nil {
		return err
	}
	return c.JSON(view)
}

// emitDealChange records the events of a deal's change from before to
// after (models.DealChangeTypes), with the fields' earlier values. A
// change that changed nothing emits nothing.
func (h *handlers) emitDealChange(c *fiber.Ctx, tx *gorm.DB, before, after views.Deal) error {
	b, a := before, after
	b.History, a.History = nil, nil // compared without the history
	return h.Starter.In(c, tx).EmitChange(after.OrgID, b, a, after, models.DealChangeTypes(before.Stage, after.Stage)...)
}

func (h *handlers) deleteDeal(c *fiber.Ctx) error {
	return web.Delete(c, h.inOrg("assigned_to_id"), "The deal", func(tx *gorm.DB, d *models.Deal) error {
		return h.Starter.In(c, tx).Emit(models.Event{OrgID: d.OrgID, Type: models.EventDealDeleted, Object: views.ToDeal(d)})
	})
}
