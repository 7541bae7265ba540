package views

import (
	"encoding/json"
	"time"

	"github.com/business-suite/suite/models"
)

// CustomField is a custom field's definition as the API shows it.
type CustomField struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"orgId"`
	Object      string          `json:"object"`
	Key         string          `json:"key"`
	Label       string          `json:"label"`
	Type        string          `json:"type"`
	Options     []string        `json:"options"`
	Required    bool            `json:"required"`
	Default     json.RawMessage `json:"default"`
	Description string          `json:"description"`
	// Status is active, or deleting while its FieldChange workflow removes
	// its values (Progress says how far).
	Status    string                `json:"status"`
	Progress  *models.FieldProgress `json:"progress"`
	CreatedAt time.Time             `json:"createdAt"`
	UpdatedAt time.Time             `json:"updatedAt"`
}

// ToCustomField is f's view.
func ToCustomField(f *models.CustomField) CustomField {
	v := CustomField{ID: f.ID, OrgID: f.OrgID, Object: f.Object, Key: f.Key, Label: f.Label, Type: f.Type, Options: f.OptionList(),
		Required: f.Required, Default: json.RawMessage("null"), Description: f.Description, Status: f.Status,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
	if v.Options == nil {
		v.Options = []string{}
	}
	if f.DefaultValue != nil {
		v.Default = json.RawMessage(*f.DefaultValue)
	}
	if f.Progress != "" {
		var p models.FieldProgress
		if json.Unmarshal([]byte(f.Progress), &p) == nil {
			v.Progress = &p
		}
	}
	return v
}

// PersonMerge is a merge as the API (and the merged webhook events) show
// it.
type PersonMerge struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// FromID is the duplicate, merged away; IntoID the survivor.
	FromID     string           `json:"fromId"`
	IntoID     string           `json:"intoId"`
	Status     string           `json:"status"`
	Moved      map[string]int64 `json:"moved"`
	WorkflowID string           `json:"workflowId"`
	CreatedBy  string           `json:"createdBy"`
	CreatedAt  time.Time        `json:"createdAt"`
	FinishedAt *time.Time       `json:"finishedAt"`
}

// ToPersonMerge is m's view; workflowID is its PersonMerge workflow's.
func ToPersonMerge(m *models.PersonMerge, workflowID string) PersonMerge {
	return PersonMerge{ID: m.ID, Object: m.Object, FromID: m.FromID, IntoID: m.IntoID, Status: m.Status, Moved: m.MovedCounts(),
		WorkflowID: workflowID, CreatedBy: string(m.CreatedBy), CreatedAt: m.CreatedAt, FinishedAt: m.FinishedAt}
}
