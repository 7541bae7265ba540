package views

import (
	"fmt"
	"time"

	"github.com/business-suite/suite/models"
)

// Automation is a rule as the API shows it.
type Automation struct {
	ID string `json:"id"`
	models.AutomationDefinition
	OrgID     string    `json:"orgId"`
	Version   int       `json:"version"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ToAutomation is a's view (a definition that cannot be read shows
// empty: it was written by this code, and never fails to read).
func ToAutomation(a *models.Automation) Automation {
	def, _ := a.Definition()
	if def.On == nil {
		def.On = []string{}
	}
	return Automation{ID: a.ID, AutomationDefinition: def, OrgID: a.OrgID, Version: a.Version, CreatedBy: a.CreatedBy,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

// AutomationRun is a rule's run as the API shows it.
type AutomationRun struct {
	ID           string                         `json:"id"`
	OrgID        string                         `json:"orgId"`
	AutomationID string                         `json:"automationId"`
	Version      int                            `json:"version"`
	Object       string                         `json:"object"`
	ObjectID     string                         `json:"objectId"`
	Event        string                         `json:"event"`
	Status       string                         `json:"status"`
	WaitingFor   string                         `json:"waitingFor"`
	Depth        int                            `json:"depth"`
	Steps        []models.AutomationStepOutcome `json:"steps"`
	Reason       string                         `json:"reason"`
	WorkflowID   string                         `json:"workflowId"`
	// TemporalURL is the run's workflow in the Temporal UI ("" when no UI
	// is configured, or the run never started: a chain stopped at depth).
	TemporalURL string     `json:"temporalUrl"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	FinishedAt  *time.Time `json:"finishedAt"`
}

// ToAutomationRun is r's view, with its workflow's Temporal UI link.
func ToAutomationRun(r *models.AutomationRun, temporalURL string) AutomationRun {
	steps := r.Outcomes()
	if steps == nil {
		steps = []models.AutomationStepOutcome{}
	}
	return AutomationRun{ID: r.ID, OrgID: r.OrgID, AutomationID: r.AutomationID, Version: r.Version, Object: r.Object, ObjectID: r.ObjectID,
		Event: r.Event, Status: r.Status, WaitingFor: r.WaitingFor, Depth: r.Depth, Steps: steps, Reason: r.Reason, WorkflowID: r.WorkflowID,
		TemporalURL: temporalURL, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt}
}

// Subject is an object a rule is about (models.FindAutomationObject) as
// the API shows it, as a JSON map: what conditions and templates read.
func Subject(row any) (map[string]any, error) {
	var view any
	switch r := row.(type) {
	case *models.Ticket:
		view = ToTicket(r)
	case *models.Lead:
		view = ToLead(r)
	case *models.Deal:
		view = ToDeal(r)
	case *models.Contact:
		view = ToContact(r)
	case *models.Customer:
		view = ToCustomer(r)
	default:
		return nil, fmt.Errorf("views.Subject: no view of %T", row)
	}
	return models.JSONObject(view)
}
