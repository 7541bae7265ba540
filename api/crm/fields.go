package crm

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows/names"
)

// Custom fields: an organization's own fields on its contacts, deals,
// leads, tickets and customers. Every member reads the definitions (to
// fill them in); OWNER and ADMIN users change them. Deleting one is a
// FieldChange workflow that removes its values in batches.

func fieldCursor(f *models.CustomField) web.Cursor {
	return web.Cursor{CreatedAt: f.CreatedAt, ID: f.ID}
}

func (h *handlers) listFields(c *fiber.Ctx) error {
	var f struct {
		Object string `json:"object" validate:"omitempty,oneof=contact deal lead ticket customer"`
	}
	return web.List(c, h.DB, web.In(web.Scope{OrgID: auth.From(c).OrgID}), web.Listing[models.CustomField, views.CustomField]{
		Filter: &f, Cursor: fieldCursor, View: views.ToCustomField,
		Narrow: func(q *gorm.DB) *gorm.DB { return models.Equal(q, "object", f.Object) }})
}

var errFieldKeyTaken = models.Err(models.ErrConflict, "field_key_taken", "This object already has a custom field with this key.")

// createField defines a field, within the plan's number of fields.
func (h *handlers) createField(c *fiber.Ctx) error {
	p := auth.From(c)
	var def models.FieldDefinition
	if err := web.Decode(c, &def, func() error { return invalid(def.Validate(nil)) }); err != nil {
		return err
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	tx := web.Tx(c)
	if err := models.WithinOrgLimit(tx, &models.CustomField{}, p.OrgID, models.FieldLimit(org.Plan), "too_many_fields",
		"An organization on this plan has at most %d custom fields; delete one first."); err != nil {
		return err
	}
	now := models.Now()
	f := &models.CustomField{ID: models.NewID(), OrgID: p.OrgID, Object: def.Object, Key: def.Key, Type: def.Type,
		Status: models.FieldActive, CreatedAt: now, UpdatedAt: now}
	def.Apply(f)
	if err := tx.Create(f).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return errFieldKeyTaken
		}
		return err
	}
	c.Location("/crm/organization/" + p.OrgID + "/fields/" + f.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToCustomField(f))
}

// invalid is a 422 of bad, or nil.
func invalid(bad []models.FieldError) error {
	if len(bad) == 0 {
		return nil
	}
	return models.Invalid(bad...)
}

// findField is the field the path's :fid names in the caller's
// organization, read on db.
func findField(c *fiber.Ctx, db *gorm.DB) (*models.CustomField, error) {
	return web.Find[models.CustomField](db.WithContext(c.UserContext()), endpointScope(c), c.Params("fid"), "The custom field")
}

func (h *handlers) getField(c *fiber.Ctx) error {
	f, err := findField(c, h.DB)
	if err != nil {
		return err
	}
	return c.JSON(views.ToCustomField(f))
}

// fieldEdit is what PATCH changes: the label, the description, whether
// the field is required, its default (null: none), its options (added
// to, or taken from) and its type.
type fieldEdit struct {
	Label       *string         `json:"label"`
	Description *string         `json:"description"`
	Required    *bool           `json:"required"`
	Default     json.RawMessage `json:"default"`
	Options     *[]string       `json:"options"`
	Type        *string         `json:"type"`
}

// updateField changes the fields sent of a definition (its object and key
// stay). Options taken away are taken out of the stored values, and a new
// type's values are made from the old ones, by a FieldChange workflow
// (202, the definition's progress following it); another change of the
// field waits for it (409 field_changing).
func (h *handlers) updateField(c *fiber.Ctx) error {
	var req fieldEdit
	tx := web.Tx(c)
	var f *models.CustomField
	var def models.FieldDefinition
	err := web.Decode(c, &req, func() error {
		var err error
		if f, err = findField(c, models.LockForUpdate(tx)); err != nil {
			return err
		}
		if f.Status != models.FieldActive {
			return errFieldDeleting
		}
		if f.Changing() {
			return errFieldChanging
		}
		def = f.Definition()
		if req.Label != nil {
			def.Label = *req.Label
		}
		if req.Description != nil {
			def.Description = *req.Description
		}
		if req.Required != nil {
			def.Required = *req.Required
		}
		if req.Default != nil {
			def.Default = req.Default
		}
		if req.Options != nil {
			def.Options = *req.Options
		}
		if req.Type != nil && *req.Type != f.Type {
			retype(f, &def, *req.Type, req.Options != nil, req.Default != nil)
		}
		return invalid(def.Validate(f))
	})
	if err != nil {
		return err
	}
	from, removed := f.Type, f.RemovedOptions(&def)
	f.Type = def.Type
	def.Apply(f)
	f.UpdatedAt = models.Now()
	// A FieldChange rewrites the stored values: to the new type (which
	// also takes out options a select no longer has), or without the
	// options taken away. Until it has, the values not yet rewritten show
	// as they were.
	in := models.FieldChangeInput{OrgID: f.OrgID, FieldID: f.ID, Object: f.Object, Key: f.Key}
	var workflowID string
	switch {
	case from != f.Type:
		in.Change, in.From = models.FieldChangeConvert, from
		workflowID = names.FieldTypeChangeID(f.OrgID, f.ID, models.NewID())
	case len(removed) > 0:
		in.Change, in.Options = models.FieldChangeRemoveOptions, removed
		workflowID = names.FieldOptionsChangeID(f.OrgID, f.ID, models.NewID())
	default:
		if err := tx.Save(f).Error; err != nil {
			return err
		}
		return c.JSON(views.ToCustomField(f))
	}
	f.Progress = in.Progress(0, 0, f.Type, false)
	if err := tx.Save(f).Error; err != nil {
		return err
	}
	err = h.Starter.In(c, tx).Start(record.Start{WorkflowID: workflowID, Workflow: names.FieldChangeWorkflow, OrgID: f.OrgID,
		Kind: names.KindFieldChange, Input: in})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(views.ToCustomField(f))
}

// retype makes def, f's definition as edited, one of type to: a select's
// options go when the new type takes none and the edit sent none
// (optionsSent), and the default, unless the edit sent one (defaultSent),
// is f's converted to the new type, or none when it does not convert.
func retype(f *models.CustomField, def *models.FieldDefinition, to string, optionsSent, defaultSent bool) {
	def.Type = to
	if !optionsSent && to != models.FieldSelect && to != models.FieldMultiSelect {
		def.Options = nil
	}
	if defaultSent || f.DefaultValue == nil {
		return
	}
	def.Default = nil
	var old any
	options, _ := json.Marshal(def.Options)
	next := models.CustomField{Key: f.Key, Type: to, Options: string(options)}
	if json.Unmarshal([]byte(*f.DefaultValue), &old) == nil {
		if v, ok := next.Convert(old); ok {
			def.Default, _ = json.Marshal(v)
		}
	}
}

var (
	errFieldDeleting = models.Err(models.ErrConflict, "field_deleting", "The custom field is being deleted.")
	errFieldChanging = models.Err(models.ErrConflict, "field_changing",
		"The custom field's values are being rewritten (removed options, or a new type); change it once that has ended (its progress says when).")
)

// deleteField marks the field deleting and starts its FieldChange
// workflow, which removes its values in batches and then the definition:
// 202 with the definition, whose progress shows how far it is.
func (h *handlers) deleteField(c *fiber.Ctx) error {
	tx := h.Starter.In(c, web.Tx(c))
	f, err := findField(c, models.LockForUpdate(tx.DB))
	if err != nil {
		return err
	}
	if f.Status != models.FieldActive {
		return c.Status(fiber.StatusAccepted).JSON(views.ToCustomField(f))
	}
	if f.Changing() {
		return errFieldChanging
	}
	f.Status, f.UpdatedAt, f.Progress = models.FieldDeleting, models.Now(), `{"change":"delete","rewritten":0}`
	if err := tx.Save(f).Error; err != nil {
		return err
	}
	err = tx.Start(record.Start{WorkflowID: names.FieldChangeID(f.OrgID, f.ID), Workflow: names.FieldChangeWorkflow,
		Input: models.FieldChangeInput{OrgID: f.OrgID, FieldID: f.ID, Object: f.Object, Key: f.Key}, OrgID: f.OrgID, Kind: names.KindFieldChange})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(views.ToCustomField(f))
}
