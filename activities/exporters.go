package activities

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// The rows of each object an export writes, read a chunk at a time: the
// API's view of a row (NDJSON) and its cell of each column (CSV). The
// export's workflow and its file are exports.go.

// exportRow is a row as an export writes it: its position (the next
// chunk starts after it), the API's view (NDJSON) and its cell of a
// column (CSV).
type exportRow struct {
	at   time.Time
	id   string
	view func() any
	cell func(column string) string
}

// readRows reads the next n rows of q, each made an exportRow by row
// (which keeps a pointer to its row, into the slice read).
func readRows[T any](q *gorm.DB, n int, row func(*T) exportRow) ([]exportRow, error) {
	var rows []T
	err := q.Limit(n).Find(&rows).Error
	out := make([]exportRow, len(rows))
	for i := range rows {
		out[i] = row(&rows[i])
	}
	return out, err
}

// exporters read the next n rows of an object's export query as
// exportRows.
var exporters = map[string]func(q *gorm.DB, n int) ([]exportRow, error){
	"contacts": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(ct *models.Contact) exportRow {
			return exportRow{at: ct.CreatedAt, id: ct.ID, view: func() any { return views.ToContact(ct) }, cell: func(col string) string {
				switch col {
				case "id":
					return ct.ID
				case "name":
					return ct.Name
				case "email":
					return ct.Email
				case "phone":
					return ct.Phone
				case "company":
					return ct.Company
				case "designation":
					return ct.Designation
				case "type":
					return ct.Type
				case "notes":
					return ct.Notes
				case "customerId":
					return deref(ct.CustomerID)
				}
				return commonCell(col, ct.Fields, ct.CreatedAt, ct.UpdatedAt)
			}}
		})
	},
	"deals": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(d *models.Deal) exportRow {
			return exportRow{at: d.CreatedAt, id: d.ID, view: func() any { return views.ToDeal(d) }, cell: func(col string) string {
				switch col {
				case "id":
					return d.ID
				case "title":
					return d.Title
				case "amount":
					return strconv.FormatFloat(d.Amount, 'f', -1, 64)
				case "currency":
					return d.Currency
				case "stage":
					return d.Stage
				case "closeDate":
					return d.CloseDate
				case "companyName":
					return d.CompanyName
				case "contactEmail":
					return d.ContactEmail
				case "contactId":
					return deref(d.ContactID)
				case "assignedToId":
					return deref(d.AssignedToID)
				case "lostReason":
					return d.LostReason
				}
				return commonCell(col, d.Fields, d.CreatedAt, d.UpdatedAt)
			}}
		})
	},
	"leads": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(l *models.Lead) exportRow {
			return exportRow{at: l.CreatedAt, id: l.ID, view: func() any { return views.ToLead(l) }, cell: func(col string) string {
				switch col {
				case "id":
					return l.ID
				case "name":
					return l.Name
				case "email":
					return l.Email
				case "phone":
					return l.Phone
				case "company":
					return l.Company
				case "value":
					return strconv.FormatFloat(l.Value, 'f', -1, 64)
				case "source":
					return l.Source
				case "status":
					return l.Status
				case "score":
					return strconv.Itoa(l.Score)
				case "assignedToId":
					return deref(l.AssignedToID)
				case "contactId":
					return deref(l.ContactID)
				case "dealId":
					return deref(l.DealID)
				}
				return commonCell(col, l.Fields, l.CreatedAt, l.UpdatedAt)
			}}
		})
	},
	"tasks": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(t *models.Task) exportRow {
			return exportRow{at: t.CreatedAt, id: t.ID, view: func() any { return views.ToTask(t) }, cell: func(col string) string {
				switch col {
				case "id":
					return t.ID
				case "title":
					return t.Title
				case "description":
					return t.Description
				case "dueDate":
					return t.DueDate
				case "priority":
					return t.Priority
				case "status":
					return t.Status
				case "assignedToId":
					return deref(t.AssignedToID)
				case "leadId":
					return deref(t.LeadID)
				case "dealId":
					return deref(t.DealID)
				case "contactId":
					return deref(t.ContactID)
				case "completedAt":
					if t.CompletedAt == nil {
						return ""
					}
					return stamp(*t.CompletedAt)
				}
				return commonCell(col, nil, t.CreatedAt, t.UpdatedAt)
			}}
		})
	},
	"tickets": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(t *models.Ticket) exportRow {
			return exportRow{at: t.CreatedAt, id: t.ID, view: func() any { return views.ToTicket(t) }, cell: func(col string) string {
				switch col {
				case "id":
					return t.ID
				case "number":
					return strconv.Itoa(t.Number)
				case "subject":
					return t.Subject
				case "description":
					return t.Description
				case "status":
					return t.Status
				case "priority":
					return t.Priority
				case "channel":
					return t.Channel
				case "requesterEmail":
					return t.RequesterEmail
				case "customerId":
					return deref(t.CustomerID)
				case "agentId":
					return deref(t.AgentID)
				case "tags":
					var tags []string
					_ = json.Unmarshal([]byte(t.Tags), &tags)
					return strings.Join(tags, ";")
				}
				return commonCell(col, t.Fields, t.CreatedAt, t.UpdatedAt)
			}}
		})
	},
	"articles": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(a *models.KBArticle) exportRow {
			return exportRow{at: a.CreatedAt, id: a.ID, view: func() any { return views.ToArticle(a) }, cell: func(col string) string {
				switch col {
				case "id":
					return a.ID
				case "title":
					return a.Title
				case "slug":
					return a.Slug
				case "body":
					return a.Body
				case "status":
					return a.Status
				case "categoryId":
					return deref(a.CategoryID)
				case "views":
					return strconv.FormatInt(a.Views, 10)
				case "publishedAt":
					if a.PublishedAt == nil {
						return ""
					}
					return stamp(*a.PublishedAt)
				}
				return commonCell(col, nil, a.CreatedAt, a.UpdatedAt)
			}}
		})
	},
	"customers": func(q *gorm.DB, n int) ([]exportRow, error) {
		return readRows(q, n, func(c *models.Customer) exportRow {
			return exportRow{at: c.CreatedAt, id: c.ID, view: func() any { return views.ToCustomer(c) }, cell: func(col string) string {
				switch col {
				case "id":
					return c.ID
				case "name":
					return c.Name
				case "email":
					return c.Email
				case "phone":
					return c.Phone
				case "company":
					return c.Company
				case "notes":
					return c.Notes
				case "contactId":
					return deref(c.ContactID)
				}
				return commonCell(col, c.Fields, c.CreatedAt, c.UpdatedAt)
			}}
		})
	},
}

// commonCell is a column every object has: its times and its custom
// fields.
func commonCell(col string, fields models.FieldValues, created, updated time.Time) string {
	switch col {
	case "createdAt":
		return stamp(created)
	case "updatedAt":
		return stamp(updated)
	}
	if key, ok := strings.CutPrefix(col, "fields."); ok {
		return models.ExportCell(fields[key])
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
