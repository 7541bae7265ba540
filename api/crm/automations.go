package crm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows/names"
)

// Automations: an organization's rules (OWNER and ADMIN users), beside
// its webhooks. A rule is matched against every change of its object in
// the change's transaction (record.Tx.Emit); each match is a run, an
// AutomationRun workflow, listed here with what each step did.

// automationRequest is a rule as created or replaced (PUT): the whole
// definition.
type automationRequest struct {
	Name       string                  `json:"name"`
	Active     *bool                   `json:"active"`
	Position   int                     `json:"position"`
	Object     string                  `json:"object"`
	On         []string                `json:"on"`
	Conditions models.Conditions       `json:"conditions"`
	Steps      []models.AutomationStep `json:"steps"`
	Refire     string                  `json:"refire"`
}

// definition is the request's rule, with the defaults: active, once per
// object.
func (r *automationRequest) definition() models.AutomationDefinition {
	d := models.AutomationDefinition{Name: r.Name, Active: r.Active == nil || *r.Active, Position: r.Position, Object: r.Object,
		On: dedupe(r.On), Conditions: r.Conditions, Steps: r.Steps, Refire: r.Refire}
	if d.Refire == "" {
		d.Refire = models.RefireOnce
	}
	return d
}

// stepKeys are the fields a step takes (a misspelt one is a 422, not a
// step that silently does less).
var stepKeys = []string{"action", "field", "value", "duration", "businessHours", "public", "body", "to", "event", "where", "timeout", "onTimeout",
	"title", "priority", "dueIn", "length"}

// decodeAutomation reads and checks a rule: its definition (every problem
// named by its JSON path), the steps' keys, the members it names, and
// the plan's steps per rule.
func (h *handlers) decodeAutomation(c *fiber.Ctx) (models.AutomationDefinition, error) {
	p := auth.From(c)
	var req automationRequest
	var def models.AutomationDefinition
	err := web.Decode(c, &req, func() error {
		org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
		if err != nil {
			return err
		}
		plan, err := models.FindPlan(c.UserContext(), h.DB, org.Plan)
		if err != nil {
			return err
		}
		_, maxSteps := models.AutomationLimits(org.Plan)
		def = req.definition()
		bad := append(unknownStepKeys(c.Body()), def.Validate(maxSteps)...)
		var errs []error
		db := h.DB.WithContext(c.UserContext())
		for i, s := range def.Steps {
			at := fmt.Sprintf("steps[%d]", i)
			if id, ok := s.Value.(string); ok && s.Action == models.StepSet && slices.Contains(models.MemberFields, s.Field) && models.ValidID(id) {
				errs = append(errs, models.CheckMember(db, p.OrgID, at+".value", &id))
			}
			if s.Action == models.StepCreateTask && models.ValidID(s.To) {
				errs = append(errs, models.CheckMember(db, p.OrgID, at+".to", &s.To))
			}
			if s.Action == models.StepSummarize && !plan.AI {
				bad = append(bad, models.FieldError{Field: at + ".action", Code: models.CodePlanUpgradeRequired,
					Message: "The " + org.Plan + " plan does not include AI; upgrade to business or enterprise."})
			}
		}
		if len(bad) > 0 {
			errs = append(errs, models.Invalid(bad...))
		}
		return web.MergeInvalid(errs...)
	})
	return def, err
}

// unknownStepKeys names the keys of the body's steps that no step takes.
func unknownStepKeys(body []byte) []models.FieldError {
	var raw struct {
		Steps []map[string]json.RawMessage `json:"steps"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return nil // the decoder names the type error
	}
	var bad []models.FieldError
	for i, step := range raw.Steps {
		for key := range step {
			if !slices.Contains(stepKeys, key) {
				bad = append(bad, models.FieldError{Field: fmt.Sprintf("steps[%d].%s", i, key), Code: "unknown_field",
					Message: "A step takes " + strings.Join(stepKeys, ", ") + "."})
			}
		}
	}
	return bad
}

func automationCursor(a *models.Automation) web.Cursor {
	return web.Cursor{CreatedAt: a.CreatedAt, ID: a.ID}
}

func (h *handlers) listAutomations(c *fiber.Ctx) error {
	return web.List(c, h.DB, web.In(web.Scope{OrgID: auth.From(c).OrgID}),
		web.Listing[models.Automation, views.Automation]{Cursor: automationCursor, View: views.ToAutomation})
}

// createAutomation adds a rule, within the plan's number of rules.
func (h *handlers) createAutomation(c *fiber.Ctx) error {
	p := auth.From(c)
	def, err := h.decodeAutomation(c)
	if err != nil {
		return err
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, p.OrgID)
	if err != nil {
		return err
	}
	maxRules, _ := models.AutomationLimits(org.Plan)
	tx := web.Tx(c)
	if err := models.WithinOrgLimit(tx, &models.Automation{}, p.OrgID, maxRules, "too_many_automations",
		"An organization on this plan has at most %d automation rules; remove one first."); err != nil {
		return err
	}
	now := models.Now()
	a := &models.Automation{ID: models.NewID(), OrgID: p.OrgID, Version: 1, CreatedBy: string(p.Actor()), CreatedAt: now, UpdatedAt: now}
	a.SetDefinition(def)
	if err := tx.Create(a).Error; err != nil {
		return err
	}
	c.Location("/crm/organization/" + p.OrgID + "/automations/" + a.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToAutomation(a))
}

// findAutomation is the rule the path's :aid names in the caller's
// organization, read on db.
func findAutomation(c *fiber.Ctx, db *gorm.DB) (*models.Automation, error) {
	return web.Find[models.Automation](db.WithContext(c.UserContext()), endpointScope(c), c.Params("aid"), "The automation")
}

func (h *handlers) getAutomation(c *fiber.Ctx) error {
	a, err := findAutomation(c, h.DB)
	if err != nil {
		return err
	}
	return c.JSON(views.ToAutomation(a))
}

// automationChange is a rule after a change, and how many of its runs
// the change cancelled (disabling a rule cancels its runs under way;
// editing an active rule does not: a run keeps the version it matched).
type automationChange struct {
	views.Automation
	CancelledRuns int `json:"cancelledRuns"`
}

// updateAutomation replaces the rule's definition (its version goes up).
func (h *handlers) updateAutomation(c *fiber.Ctx) error {
	def, err := h.decodeAutomation(c)
	if err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	a, err := findAutomation(c, models.LockForUpdate(tx.DB))
	if err != nil {
		return err
	}
	a.SetDefinition(def)
	a.Version++
	a.UpdatedAt = models.Now()
	if err := tx.Save(a).Error; err != nil {
		return err
	}
	cancelled := 0
	if !a.Active {
		if cancelled, err = cancelRuns(tx, a, "The rule was disabled."); err != nil {
			return err
		}
	}
	return c.JSON(automationChange{Automation: views.ToAutomation(a), CancelledRuns: cancelled})
}

// deleteAutomation removes a rule with its runs' records, cancelling the
// runs under way; it answers how many.
func (h *handlers) deleteAutomation(c *fiber.Ctx) error {
	tx := h.Starter.In(c, web.Tx(c))
	a, err := findAutomation(c, models.LockForUpdate(tx.DB))
	if err != nil {
		return err
	}
	cancelled, err := cancelRuns(tx, a, "The rule was deleted.")
	if err != nil {
		return err
	}
	if err := tx.Delete(a).Error; err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": a.ID, "deleted": true, "cancelledRuns": cancelled})
}

// cancelRuns marks the rule's open runs cancelled and records a cancel
// signal to each run's workflow.
func cancelRuns(tx *record.Tx, a *models.Automation, reason string) (int, error) {
	runs, err := models.CancelAutomationRuns(tx.DB, a.OrgID, a.ID, reason, models.Now())
	if err != nil {
		return 0, err
	}
	for _, run := range runs {
		if err := signalCancel(tx, &run); err != nil {
			return 0, err
		}
	}
	return len(runs), nil
}

func signalCancel(tx *record.Tx, run *models.AutomationRun) error {
	return tx.Signal(record.Signal{WorkflowID: run.WorkflowID, Name: names.SignalAutomationCancel, OrgID: run.OrgID,
		Kind: names.KindAutomationRun})
}

func runCursor(r *models.AutomationRun) web.Cursor {
	return web.Cursor{CreatedAt: r.CreatedAt, ID: r.ID}
}

// listRuns lists a rule's runs, newest first, optionally of one status or
// one object.
func (h *handlers) listRuns(c *fiber.Ctx) error {
	a, err := findAutomation(c, h.DB)
	if err != nil {
		return err
	}
	var f struct {
		Status   string `json:"status" validate:"omitempty,oneof=running waiting completed stopped failed cancelled"`
		ObjectID string `json:"objectId" validate:"omitempty,max=64"`
	}
	return web.List(c, h.DB, web.In(endpointScope(c)), web.Listing[models.AutomationRun, views.AutomationRun]{Filter: &f, Cursor: runCursor,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.Equal(models.Equal(q.Where("automation_id = ?", a.ID), "status", f.Status), "object_id", f.ObjectID)
		},
		View: func(r *models.AutomationRun) views.AutomationRun { return views.ToAutomationRun(r, h.runURL(r)) }})
}

// runURL is the run's workflow in the Temporal UI ("" without a UI, or
// for a run that never started).
func (h *handlers) runURL(r *models.AutomationRun) string {
	if r.Depth > models.MaxAutomationDepth {
		return ""
	}
	return h.temporalUI.Workflow(r.WorkflowID)
}

// findRun is the run the path's :rid names, of the path's rule.
func findRun(c *fiber.Ctx, db *gorm.DB) (*models.AutomationRun, error) {
	a, err := findAutomation(c, db)
	if err != nil {
		return nil, err
	}
	return web.Find[models.AutomationRun](db.WithContext(c.UserContext()).Where("automation_id = ?", a.ID), endpointScope(c), c.Params("rid"),
		"The run")
}

func (h *handlers) getRun(c *fiber.Ctx) error {
	r, err := findRun(c, h.DB)
	if err != nil {
		return err
	}
	return c.JSON(views.ToAutomationRun(r, h.runURL(r)))
}

// cancelRun ends a run where it stands; a finished run is a 409.
func (h *handlers) cancelRun(c *fiber.Ctx) error {
	tx := h.Starter.In(c, web.Tx(c))
	r, err := findRun(c, models.LockForUpdate(tx.DB))
	if err != nil {
		return err
	}
	if !r.Open() {
		return models.Err(models.ErrConflict, "run_finished", "The run has finished (%s); there is nothing to cancel.", r.Status)
	}
	if _, err := models.SetRunState(tx.DB, r.OrgID, r.ID, models.RunCancelled, "", "Cancelled through the API.", models.Now()); err != nil {
		return err
	}
	if err := signalCancel(tx, r); err != nil {
		return err
	}
	if err := tx.Take(r, "id = ?", r.ID).Error; err != nil {
		return err
	}
	return c.JSON(views.ToAutomationRun(r, h.runURL(r)))
}

type testAutomationRequest struct {
	ObjectID string `json:"objectId" validate:"required,max=64"`
}

// stepPreview is what a step would do, in words.
type stepPreview struct {
	Index  int    `json:"index"`
	Action string `json:"action"`
	Would  string `json:"would"`
}

// testAutomation tells whether the rule matches an object as it is now —
// each condition and whether it holds — and what its steps would do,
// changing nothing. The change operators (changed, changed_to,
// changed_from) are about a change, and hold here.
func (h *handlers) testAutomation(c *fiber.Ctx) error {
	var req testAutomationRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	// Read in the request's transaction, as every POST is: it writes
	// nothing, and commits nothing.
	tx := web.Tx(c)
	a, err := findAutomation(c, tx)
	if err != nil {
		return err
	}
	def, err := a.Definition()
	if err != nil {
		return err
	}
	subject, err := automationSubject(tx, a.Object, a.OrgID, req.ObjectID)
	if err != nil {
		return err
	}
	matches, conditions := def.Conditions.Evaluate(subject, nil, models.Now())
	if conditions == nil {
		conditions = []models.ConditionResult{}
	}
	steps := make([]stepPreview, len(def.Steps))
	for i, s := range def.Steps {
		steps[i] = stepPreview{Index: i, Action: s.Action, Would: previewStep(s, a.Object, subject)}
	}
	return c.JSON(fiber.Map{"matches": matches, "conditions": conditions, "steps": steps})
}

// previewStep says what step s would do for subject.
func previewStep(s models.AutomationStep, object string, subject map[string]any) string {
	switch s.Action {
	case models.StepSet:
		return fmt.Sprintf("set %s to %v", s.Field, s.Value)
	case models.StepAddTags, models.StepRemoveTags:
		return fmt.Sprintf("%s %v", strings.ReplaceAll(s.Action, "_", " "), s.Value)
	case models.StepComment:
		kind := "an internal note"
		if s.Public {
			kind = "a public reply (e-mailed to the requester)"
		}
		return "add " + kind + ": " + models.RenderTemplate(s.Body, object, subject)
	case models.StepNotify:
		return "notify " + s.To
	case models.StepWebhook:
		return "send " + s.Event + " to the endpoints that subscribe to it"
	case models.StepDelay:
		hours := ""
		if s.BusinessHours {
			hours = " of business hours"
		}
		return "wait " + s.Duration + hours + ", then check the conditions again"
	case models.StepWaitFor:
		return "wait up to " + s.Timeout + " for " + s.Event
	}
	return s.Action
}

// automationSubject is the organization's object, as the API shows it,
// as a JSON map (404 when it is not the organization's).
func automationSubject(db *gorm.DB, object, orgID, id string) (map[string]any, error) {
	if !models.ValidID(id) {
		return nil, models.NotFound("The " + object)
	}
	subject, err := record.Subject(db, object, orgID, id, views.Subject)
	if errors.Is(err, models.ErrNotFound) {
		return nil, models.NotFound("The " + object)
	}
	return subject, err
}
