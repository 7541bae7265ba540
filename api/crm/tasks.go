package crm

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// Task states and the default priority.
const (
	taskOpen            = models.TaskOpen
	taskDone            = models.TaskDone
	taskDefaultPriority = models.TaskDefaultPriority
)

func taskCursor(t *models.Task) web.Cursor { return web.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} }

// listTasks lists tasks, newest first; AGENTs see only tasks assigned to
// them. dueBefore keeps tasks that have a due date strictly before it.
func (h *handlers) listTasks(c *fiber.Ctx) error {
	var f struct {
		Status       string `json:"status" validate:"omitempty,oneof=OPEN DONE"`
		AssignedToID string `json:"assignedToId" validate:"omitempty,uuid"`
		DueBefore    string `json:"dueBefore" validate:"omitempty,datetime=2006-01-02"`
	}
	return web.List(c, h.DB, h.inOrg("assigned_to_id"), web.Listing[models.Task, views.Task]{Filter: &f, Cursor: taskCursor, View: views.ToTask,
		Narrow: func(q *gorm.DB) *gorm.DB {
			q = models.Equal(models.Equal(q, "status", f.Status), "assigned_to_id", f.AssignedToID)
			if f.DueBefore != "" {
				// YYYY-MM-DD text orders like the dates it holds.
				q = q.Where("due_date <> '' AND due_date < ?", f.DueBefore)
			}
			return q
		}})
}

// taskFields are the optional fields of create and update. References are
// checked against the organization (not by format), so a malformed id and
// another organization's id get the same answer.
type taskFields struct {
	Description  *string `json:"description" validate:"omitnil,max=10000"`
	DueDate      *string `json:"dueDate"` // YYYY-MM-DD, or "" for none: see checkFormats
	Priority     *string `json:"priority" validate:"omitnil,oneof=LOW MEDIUM HIGH URGENT"`
	Status       *string `json:"status" validate:"omitnil,oneof=OPEN DONE"`
	AssignedToID *string `json:"assignedToId"`
	LeadID       *string `json:"leadId"`
	DealID       *string `json:"dealId"`
	ContactID    *string `json:"contactId"`
}

// apply copies the fields present onto t; a move to DONE records when the
// task was completed, and a move back to OPEN clears it.
func (f *taskFields) apply(t *models.Task, now time.Time) {
	if f.Description != nil {
		t.Description = *f.Description
	}
	if f.DueDate != nil {
		t.DueDate = *f.DueDate
	}
	if f.Priority != nil {
		t.Priority = *f.Priority
	}
	if f.Status != nil && *f.Status != t.Status {
		t.Status = *f.Status
		if t.Status == taskDone {
			t.CompletedAt = &now
		} else {
			t.CompletedAt = nil
		}
	}
	if f.AssignedToID != nil {
		t.AssignedToID = nullable(f.AssignedToID)
	}
	if f.LeadID != nil {
		t.LeadID = nullable(f.LeadID)
	}
	if f.DealID != nil {
		t.DealID = nullable(f.DealID)
	}
	if f.ContactID != nil {
		t.ContactID = nullable(f.ContactID)
	}
}

func (f *taskFields) checkFormats() error {
	return clearable("dueDate", f.DueDate, dateRule, "datetime", "Must be a date in the form 2006-01-02.")
}

// check validates every reference against the organization.
func (f *taskFields) check(db *gorm.DB, orgID string) error {
	return web.MergeInvalid(
		models.CheckMember(db, orgID, "assignedToId", f.AssignedToID),
		models.CheckReference(db, &models.Lead{}, orgID, "leadId", f.LeadID, linked),
		models.CheckReference(db, &models.Deal{}, orgID, "dealId", f.DealID, linked),
		models.CheckReference(db, &models.Contact{}, orgID, "contactId", f.ContactID, linked),
	)
}

type createTaskRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	Title string `json:"title" validate:"required,notblank,max=300"`
	taskFields
}

func (h *handlers) createTask(c *fiber.Ctx) error {
	var req createTaskRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, req.check)
	if err != nil {
		return err
	}
	now := models.Now()
	t := &models.Task{ID: models.NewID(), OrgID: p.OrgID, Title: strings.TrimSpace(req.Title), Priority: taskDefaultPriority,
		Status: taskOpen, CreatedBy: p.Actor(), CreatedAt: now, UpdatedAt: now}
	req.apply(t, now)
	if t.AssignedToID == nil && agentScoped(p) {
		t.AssignedToID = &p.MemberID // an AGENT's own task stays visible to them
	}
	tx := web.Tx(c)
	if err := tx.Create(t).Error; err != nil {
		return err
	}
	if err := h.Starter.In(c, tx).Emit(models.Event{OrgID: t.OrgID, Type: models.EventTaskCreated, Object: views.ToTask(t)}); err != nil {
		return err
	}
	c.Location("/crm/tasks/" + t.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToTask(t))
}

type updateTaskRequest struct {
	OrgID string  `json:"orgId" validate:"omitempty,uuid"`
	Title *string `json:"title" validate:"omitnil,notblank,max=300"`
	taskFields
}

// updateTask changes the fields present in the body; "" clears dueDate and
// the references. AGENTs may change only tasks assigned to them.
func (h *handlers) updateTask(c *fiber.Ctx) error {
	var req updateTaskRequest
	p, err := h.decodeInOrg(c, &req, func() string { return req.OrgID }, req.check)
	if err != nil {
		return err
	}
	var before views.Task
	t, err := web.Update(c, rowScope(p, "assigned_to_id"), "The task", func(tx *gorm.DB, t *models.Task) error {
		before = views.ToTask(t)
		if req.Title != nil {
			t.Title = strings.TrimSpace(*req.Title)
		}
		now := models.Now()
		req.apply(t, now)
		t.UpdatedAt = now
		return nil
	})
	if err != nil {
		return err
	}
	after := views.ToTask(t)
	if err := h.Starter.In(c, web.Tx(c)).EmitChange(t.OrgID, before, after, after, models.EventTaskUpdated); err != nil {
		return err
	}
	return c.JSON(after)
}

func (h *handlers) getTask(c *fiber.Ctx) error {
	return web.Get(c, h.DB, h.inOrg("assigned_to_id"), "The task", views.ToTask)
}

func (h *handlers) deleteTask(c *fiber.Ctx) error {
	return web.Delete(c, h.inOrg("assigned_to_id"), "The task", func(tx *gorm.DB, t *models.Task) error {
		return h.Starter.In(c, tx).Emit(models.Event{OrgID: t.OrgID, Type: models.EventTaskDeleted, Object: views.ToTask(t)})
	})
}

// decodeInOrg decodes a write body into dst, resolves the organization it
// acts in (orgID reads the decoded body) and runs refs, when given, on the
// references. Unknown fields, values of the wrong type, broken rules,
// malformed optional values (checkFormats) and bad references are reported
// together in one 422, so a client sees every bad field at once. A body
// that is not JSON is refused before anything else is looked at;
// references are looked up only in an organization the caller may act in.
func (h *handlers) decodeInOrg(c *fiber.Ctx, dst any, orgID func() string, refs func(db *gorm.DB, orgID string) error) (*auth.Principal, error) {
	var checks []func() error
	if f, ok := dst.(interface{ checkFormats() error }); ok {
		checks = append(checks, f.checkFormats)
	}
	err := web.Decode(c, dst, checks...)
	if err != nil && (refs == nil || !errors.Is(err, models.ErrInvalid) || namesField(err, "orgId")) {
		return nil, err
	}
	p, orgErr := h.orgOf(c, orgID())
	if orgErr != nil {
		return nil, firstErr(err, orgErr)
	}
	if refs != nil {
		err = web.MergeInvalid(err, refs(h.DB.WithContext(c.UserContext()), p.OrgID))
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// namesField tells whether the 422 err lists field.
func namesField(err error, field string) bool {
	var de *models.DomainError
	return errors.As(err, &de) && slices.ContainsFunc(de.Fields, func(f models.FieldError) bool { return f.Field == field })
}

// clearable checks an optional text field that "" clears: absent and ""
// pass, any other value must pass rule (validator syntax). `validate` tags
// cannot say this for a *string: omitempty skips only a nil pointer.
func clearable(field string, v *string, rule, code, message string) error {
	if v == nil || *v == "" || web.Validator().Var(*v, rule) == nil {
		return nil
	}
	return models.Invalid(models.FieldError{Field: field, Code: code, Message: message})
}
