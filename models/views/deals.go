package views

import (
	"time"

	"github.com/business-suite/suite/models"
)

// Deal is a deal as the CRM shows it. History, its moves between stages,
// is shown where the caller read it (DealWithHistory).
type Deal struct {
	ID             string     `json:"id"`
	OrgID          string     `json:"orgId"`
	Title          string     `json:"title"`
	Amount         float64    `json:"amount"`
	Currency       string     `json:"currency"`
	Stage          string     `json:"stage"`
	Probability    float64    `json:"probability"`
	CloseDate      string     `json:"closeDate"`
	CompanyName    string     `json:"companyName"`
	ContactEmail   string     `json:"contactEmail"`
	ContactID      *string    `json:"contactId"`
	LeadID         *string    `json:"leadId"`
	AssignedToID   *string    `json:"assignedToId"`
	LostReason     string     `json:"lostReason"`
	StageChangedAt time.Time  `json:"stageChangedAt"`
	WonAt          *time.Time `json:"wonAt"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	// Fields are the custom fields' values by key ({} when none).
	Fields  map[string]any `json:"fields"`
	History []StageChange  `json:"history,omitempty"`
}

// StageChange is one move of a deal between stages.
type StageChange struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	ChangedBy string    `json:"changedBy"`
	ChangedAt time.Time `json:"changedAt"`
}

// ToDeal is d as the CRM shows it, without its history.
func ToDeal(d *models.Deal) Deal {
	return Deal{ID: d.ID, OrgID: d.OrgID, Title: d.Title, Amount: d.Amount, Currency: d.Currency, Stage: d.Stage,
		Probability: models.StageProbability[d.Stage], CloseDate: d.CloseDate, CompanyName: d.CompanyName,
		ContactEmail: d.ContactEmail, ContactID: d.ContactID, LeadID: d.LeadID, AssignedToID: d.AssignedToID,
		LostReason: d.LostReason, StageChangedAt: d.StageChangedAt, WonAt: d.WonAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
		Fields: d.Fields.Clone()}
}

// DealWithHistory is d as the CRM shows it with its history, given its
// moves between stages (models.DealStageHistory).
func DealWithHistory(d *models.Deal, history []models.DealStageChange) Deal {
	out := ToDeal(d)
	out.History = make([]StageChange, len(history))
	for i, ch := range history {
		out.History[i] = StageChange{From: ch.FromStage, To: ch.ToStage, ChangedBy: CRMActor(ch.ChangedBy), ChangedAt: ch.CreatedAt}
	}
	return out
}

// CRMActor is an actor as the CRM interface publishes it (createdBy,
// changedBy): a member by their bare member id, anything else as stored
// (`key:<API key id>`, `intake`). Only the presentation differs from the
// Helpdesk's; what is stored is one encoding (models.Actor).
func CRMActor(a models.Actor) string {
	if id, ok := a.MemberID(); ok {
		return id
	}
	return string(a)
}
