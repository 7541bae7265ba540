package crm

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

func contactCursor(ct *models.Contact) web.Cursor {
	return web.Cursor{CreatedAt: ct.CreatedAt, ID: ct.ID}
}

// listContacts lists the organization's contacts, newest first. Contacts
// are shared by the whole team: they are not role-scoped.
func (h *handlers) listContacts(c *fiber.Ctx) error {
	var f struct {
		Type string `json:"type" validate:"omitempty,oneof=person company"`
		Q    string `json:"q" query:"trim" validate:"max=200"`
	}
	return web.List(c, h.DB, h.inOrg(""), web.Listing[models.Contact, views.Contact]{Filter: &f, FieldsOf: models.AutomationContact, Cursor: contactCursor, View: views.ToContact,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.ContactsMatching(q, f.Type, f.Q)
		}})
}

// contactFields are the optional fields of create and update.
type contactFields struct {
	Email       *string `json:"email" validate:"omitnil,max=254"` // or "": see checkFormats
	Phone       *string `json:"phone" validate:"omitnil,max=50"`
	Company     *string `json:"company" validate:"omitnil,max=200"`
	Designation *string `json:"designation" validate:"omitnil,max=200"`
	Type        *string `json:"type" validate:"omitnil,oneof=person company"`
	Notes       *string `json:"notes" validate:"omitnil,max=10000"`
	// Fields are custom field values by key (null clears one).
	Fields map[string]json.RawMessage `json:"fields"`
}

func (f *contactFields) checkFormats() error {
	return clearable("email", f.Email, "email", "email", "Must be a valid e-mail address.")
}

func (f *contactFields) apply(ct *models.Contact) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	if f.Email != nil {
		ct.Email = models.NormalizeEmail(*f.Email)
	}
	if f.Phone != nil {
		ct.SetPhone(strings.TrimSpace(*f.Phone))
	}
	set(&ct.Company, f.Company)
	set(&ct.Designation, f.Designation)
	set(&ct.Type, f.Type)
	if f.Notes != nil {
		ct.Notes = *f.Notes // free text: kept exactly as sent
	}
}

type createContactRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	Name  string `json:"name" validate:"required,notblank,max=200"`
	contactFields
}

func (h *handlers) createContact(c *fiber.Ctx) error {
	var req createContactRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, nil)
	if err != nil {
		return err
	}
	now := models.Now()
	ct := &models.Contact{ID: models.NewID(), OrgID: p.OrgID, Name: strings.TrimSpace(req.Name), Type: models.ContactPerson,
		CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now}
	req.apply(ct)
	// An organization without webhook endpoints or automation rules about
	// contacts — most — gets its contact in one statement, which checks so
	// itself, when no customer has the contact's e-mail; one with either
	// records contact.created with the contact, in the request's
	// transaction (models.AnyEventConsumer), and a contact who is a
	// customer too is linked to them there (models.LinkContact).
	// Custom fields sent, or a field with a default or required, are
	// checked against the definitions, in the transaction too.
	inserted := false
	if req.Fields == nil {
		inserted, err = database.InsertUnless(web.OneStatementTx(c), ct,
			models.AnyEventConsumer(models.AutomationContact)+" UNION ALL "+models.AnyCustomerOf+" UNION ALL "+models.AnyFieldRule,
			p.OrgID, p.OrgID, p.OrgID, ct.Email, p.OrgID, models.AutomationContact)
		if err != nil {
			return err
		}
	}
	if !inserted {
		tx := web.Tx(c)
		if ct.Fields, err = models.ApplyFields(tx, p.OrgID, models.AutomationContact, nil, req.Fields, true); err != nil {
			return err
		}
		if err := tx.Create(ct).Error; err != nil {
			return err
		}
		if err := models.LinkContact(tx, ct, ""); err != nil {
			return err
		}
		if err := h.Starter.In(c, tx).Emit(models.Event{OrgID: p.OrgID, Type: models.EventContactCreated, Object: views.ToContact(ct)}); err != nil {
			return err
		}
	}
	c.Location("/crm/contacts/" + ct.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToContact(ct))
}

// duplicate is a contact with its candidate duplicates among the older
// contacts, each with why.
type duplicate struct {
	views.Contact
	Candidates []candidate `json:"candidates"`
}

type candidate struct {
	Reason  string        `json:"reason"`
	Contact views.Contact `json:"contact"`
}

// listDuplicates lists the organization's contacts that may be a person
// another, older contact already is (the same e-mail, or the same name at
// the same company), newest first, each with its candidates: what a
// merge would take.
func (h *handlers) listDuplicates(c *fiber.Ctx) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	db := h.DB.WithContext(c.UserContext())
	groups, err := web.Paginate(models.ContactDuplicates(db, p.OrgID), page,
		func(g *models.DuplicateGroup) web.Cursor { return web.Cursor{CreatedAt: g.CreatedAt, ID: g.ID} })
	if err != nil {
		return err
	}
	var ids []string
	for _, g := range groups.Data {
		ids = append(ids, g.ID)
	}
	pairs, err := models.DuplicatePairsOf(db, p.OrgID, ids)
	if err != nil {
		return err
	}
	byID := map[string]*models.Contact{}
	var contacts []models.Contact
	named := slices.Clone(ids)
	for _, pr := range pairs {
		named = append(named, pr.FirstID)
	}
	if len(named) > 0 {
		if err := db.Where("org_id = ? AND id IN ?", p.OrgID, named).Find(&contacts).Error; err != nil {
			return err
		}
	}
	for i := range contacts {
		byID[contacts[i].ID] = &contacts[i]
	}
	// A contact deleted between the reads shows by its id alone.
	view := func(id string) views.Contact {
		if ct := byID[id]; ct != nil {
			return views.ToContact(ct)
		}
		return views.Contact{ID: id, OrgID: p.OrgID, Fields: map[string]any{}}
	}
	return web.SendPage(c, groups, func(g *models.DuplicateGroup) duplicate {
		d := duplicate{Contact: view(g.ID), Candidates: []candidate{}}
		for _, pr := range pairs {
			if pr.SecondID == g.ID {
				d.Candidates = append(d.Candidates, candidate{Reason: pr.Reason, Contact: view(pr.FirstID)})
			}
		}
		return d
	})
}

// getContact answers a contact, or 301 to the one it was merged into.
func (h *handlers) getContact(c *fiber.Ctx) error {
	return web.GetPerson(c, h.DB, h.inOrg(""), models.AutomationContact, "The contact", "/crm/contacts/", views.ToContact)
}

type mergeRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	// From is the duplicate merged into the path's contact.
	From string `json:"from" validate:"required"`
}

// mergeContact merges the contact from into the path's, as a PersonMerge
// workflow: 202 with the merge.
func (h *handlers) mergeContact(c *fiber.Ctx) error {
	var req mergeRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, nil)
	if err != nil {
		return err
	}
	into := string([]byte(c.Params("id")))
	m, err := h.Starter.In(c, web.Tx(c)).StartMerge(p.OrgID, models.AutomationContact, req.From, into, p.Actor())
	return web.AcceptedMerge(c, "The contact", m, err)
}

type updateContactRequest struct {
	OrgID string  `json:"orgId" validate:"omitempty,uuid"`
	Name  *string `json:"name" validate:"omitnil,notblank,max=200"`
	contactFields
}

// updateContact changes the fields present in the body; absent fields keep
// their value, and "" clears an optional text field.
func (h *handlers) updateContact(c *fiber.Ctx) error {
	var req updateContactRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, nil)
	if err != nil {
		return err
	}
	var before views.Contact
	ct, err := web.Update(c, rowScope(p, ""), "The contact", func(tx *gorm.DB, ct *models.Contact) error {
		before = views.ToContact(ct)
		if req.Name != nil {
			ct.Name = strings.TrimSpace(*req.Name)
		}
		req.apply(ct)
		ct.UpdatedAt = models.Now()
		var err error
		ct.Fields, err = models.ApplyFields(tx, ct.OrgID, models.AutomationContact, ct.Fields, req.Fields, false)
		return err
	})
	if err != nil {
		return err
	}
	if ct.Email != before.Email {
		if err := models.LinkContact(web.Tx(c), ct, before.Email); err != nil {
			return err
		}
	}
	after := views.ToContact(ct)
	if err := h.Starter.In(c, web.Tx(c)).EmitChange(ct.OrgID, before, after, after, models.EventContactUpdated); err != nil {
		return err
	}
	return c.JSON(after)
}

// contactTimeline is everything about the contact and the customer who
// is the same person, newest first; an AGENT sees only the deals, tasks
// and leads assigned to them.
func (h *handlers) contactTimeline(c *fiber.Ctx) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	ct, err := web.Load[models.Contact](c, h.DB, h.inOrg(""), "The contact")
	if err != nil {
		return err
	}
	person := models.Person{ContactID: ct.ID}
	if ct.CustomerID != nil {
		person.CustomerID = *ct.CustomerID
	}
	var scope models.TimelineScope
	if agentScoped(p) {
		scope.AssignedTo = p.MemberID
	}
	return web.Timeline(c, h.DB, p.OrgID, person, scope)
}

// deleteContact deletes a contact; deals and tasks linked to it keep
// existing and lose the link (ON DELETE SET NULL), and the customer who
// was the same person is linked to the next contact of the e-mail, if any.
func (h *handlers) deleteContact(c *fiber.Ctx) error {
	return web.Delete(c, h.inOrg(""), "The contact", func(tx *gorm.DB, ct *models.Contact) error {
		if err := models.LinkPeople(tx, ct.OrgID, ct.Email); err != nil {
			return err
		}
		return h.Starter.In(c, tx).Emit(models.Event{OrgID: ct.OrgID, Type: models.EventContactDeleted, Object: views.ToContact(ct)})
	})
}
