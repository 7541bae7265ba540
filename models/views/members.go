package views

import (
	"time"

	"github.com/business-suite/suite/models"
)

// Member is an organization's member as the CRM shows it.
type Member struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	UserID    *string   `json:"userId"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Status    string    `json:"status"`
	Target    float64   `json:"target"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ToMember is m as the CRM shows it.
func ToMember(m *models.Member) Member {
	return Member{ID: m.ID, OrgID: m.OrgID, UserID: m.UserID, Email: m.Email, Name: m.Name, Role: m.Role,
		Status: m.Status, Target: m.Target, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}
