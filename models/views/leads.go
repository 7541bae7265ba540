package views

import (
	"encoding/json"
	"time"

	"github.com/business-suite/suite/models"
)

// Lead is a lead as the CRM shows it.
type Lead struct {
	ID             string               `json:"id"`
	OrgID          string               `json:"orgId"`
	Name           string               `json:"name"`
	Email          string               `json:"email"`
	Phone          string               `json:"phone"`
	Company        string               `json:"company"`
	Value          float64              `json:"value"`
	Source         string               `json:"source"`
	Status         string               `json:"status"`
	Score          int                  `json:"score"`
	Probability    float64              `json:"probability"`
	ScoreFactors   []models.ScoreFactor `json:"scoreFactors"`
	AssignedToID   *string              `json:"assignedToId"`
	ContactID      *string              `json:"contactId"`
	DealID         *string              `json:"dealId"`
	LastActivityAt *time.Time           `json:"lastActivityAt"`
	CreatedAt      time.Time            `json:"createdAt"`
	UpdatedAt      time.Time            `json:"updatedAt"`
	// Fields are the custom fields' values by key ({} when none).
	Fields map[string]any `json:"fields"`
}

// ToLead is l as the CRM shows it.
func ToLead(l *models.Lead) Lead {
	factors := []models.ScoreFactor{}
	_ = json.Unmarshal([]byte(l.ScoreFactors), &factors)
	return Lead{ID: l.ID, OrgID: l.OrgID, Name: l.Name, Email: l.Email, Phone: l.Phone, Company: l.Company,
		Value: l.Value, Source: l.Source, Status: l.Status, Score: l.Score, Probability: l.Probability,
		ScoreFactors: factors, AssignedToID: l.AssignedToID, ContactID: l.ContactID, DealID: l.DealID,
		LastActivityAt: l.LastActivityAt, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt,
		Fields: l.Fields.Clone()}
}
