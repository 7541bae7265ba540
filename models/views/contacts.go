package views

import (
	"time"

	"github.com/business-suite/suite/models"
)

// Contact is a contact as the CRM shows it.
type Contact struct {
	ID          string `json:"id"`
	OrgID       string `json:"orgId"`
	Name        string `json:"name"`
	Email       string `json:"email"`
	Phone       string `json:"phone"`
	Company     string `json:"company"`
	Designation string `json:"designation"`
	Type        string `json:"type"`
	Notes       string `json:"notes"`
	// CustomerID is the Helpdesk customer with the same e-mail: the same
	// person (null when there is none).
	CustomerID *string   `json:"customerId"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// Fields are the custom fields' values by key ({} when none).
	Fields map[string]any `json:"fields"`
}

// ToContact is ct as the CRM shows it.
func ToContact(ct *models.Contact) Contact {
	return Contact{ID: ct.ID, OrgID: ct.OrgID, Name: ct.Name, Email: ct.Email, Phone: ct.Phone, Company: ct.Company,
		Designation: ct.Designation, Type: ct.Type, Notes: ct.Notes, CustomerID: ct.CustomerID, CreatedAt: ct.CreatedAt, UpdatedAt: ct.UpdatedAt,
		Fields: ct.Fields.Clone()}
}
