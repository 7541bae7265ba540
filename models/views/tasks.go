package views

import (
	"time"

	"github.com/business-suite/suite/models"
)

// Task is a task as the CRM shows it.
type Task struct {
	ID          string  `json:"id"`
	OrgID       string  `json:"orgId"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	DueDate     *string `json:"dueDate"`
	Priority    string  `json:"priority"`
	Status      string  `json:"status"`
	// References are null when unset.
	AssignedToID *string    `json:"assignedToId"`
	LeadID       *string    `json:"leadId"`
	DealID       *string    `json:"dealId"`
	ContactID    *string    `json:"contactId"`
	CompletedAt  *time.Time `json:"completedAt"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
}

// ToTask is t as the CRM shows it.
func ToTask(t *models.Task) Task {
	return Task{ID: t.ID, OrgID: t.OrgID, Title: t.Title, Description: t.Description, DueDate: orNull(t.DueDate),
		Priority: t.Priority, Status: t.Status, AssignedToID: t.AssignedToID, LeadID: t.LeadID, DealID: t.DealID,
		ContactID: t.ContactID, CompletedAt: t.CompletedAt, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// orNull is a copy of s, or nil when it is "": an optional field that is
// not set shows as null. A copy, not the row's own field: an update takes
// its view before changing the row.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
