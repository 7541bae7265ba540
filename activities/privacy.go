package activities

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// personArchive writes the export of a person's data (GDPR article 15):
// one JSON document of every section of models.GatherPerson — the records
// the API shows as the API shows them, the others (comments, e-mails,
// files with their content, time, history, AI documents and jobs,
// notifications, webhook events) with their columns — in one transaction
// with the export's end.
func (a *Transfers) personArchive(ctx context.Context, exp *models.Export) (ImportStep, error) {
	db := a.DB.WithContext(ctx)
	var filters map[string]string
	_ = json.Unmarshal([]byte(exp.Filters), &filters)
	p, err := models.GatherPerson(db, exp.OrgID, filters["email"])
	if err != nil {
		return ImportStep{}, err
	}
	sections := []struct {
		name string
		rows any
		n    int
	}{
		{"contacts", mapRows(p.Contacts, views.ToContact), len(p.Contacts)},
		{"customers", mapRows(p.Customers, views.ToCustomer), len(p.Customers)},
		{"leads", mapRows(p.Leads, views.ToLead), len(p.Leads)},
		{"leadActivities", columns(p.LeadActivities), len(p.LeadActivities)},
		{"leadIntakes", columns(p.LeadIntakes), len(p.LeadIntakes)},
		{"deals", mapRows(p.Deals, views.ToDeal), len(p.Deals)},
		{"dealHistory", columns(p.DealHistory), len(p.DealHistory)},
		{"tasks", mapRows(p.Tasks, views.ToTask), len(p.Tasks)},
		{"tickets", mapRows(p.Tickets, views.ToTicket), len(p.Tickets)},
		{"comments", columns(p.Comments), len(p.Comments)},
		{"emails", columns(p.Emails), len(p.Emails)},
		{"attachments", columns(p.Attachments), len(p.Attachments)},
		{"inboundEmails", columns(p.InboundEmails), len(p.InboundEmails)},
		{"timeEntries", columns(p.TimeEntries), len(p.TimeEntries)},
		{"customerEvents", columns(p.CustomerEvents), len(p.CustomerEvents)},
		{"aiDocuments", columns(p.AIDocuments), len(p.AIDocuments)},
		{"aiJobs", columns(p.AIJobs), len(p.AIJobs)},
		{"notifications", columns(p.Notifications, "memberId", "readAt"), len(p.Notifications)},
		{"webhookEvents", columns(p.WebhookEvents), len(p.WebhookEvents)},
	}
	var total int64
	err = db.Transaction(func(tx *gorm.DB) error {
		w := models.NewFileWriter(tx, exp.OrgID, exp.ID, 0)
		bw := bufio.NewWriterSize(w, 64<<10)
		_, _ = bw.WriteString(`{"email":`)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(p.Email); err != nil {
			return err
		}
		_, _ = bw.WriteString(`,"generatedAt":`)
		if err := enc.Encode(models.Now()); err != nil {
			return err
		}
		for _, s := range sections {
			_, _ = bw.WriteString(`,"` + s.name + `":`)
			if err := enc.Encode(s.rows); err != nil {
				return err
			}
			total += int64(s.n)
		}
		_, _ = bw.WriteString("}\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		now := models.Now()
		res := tx.Model(&models.Export{}).Where("id = ? AND state IN ?", exp.ID, []string{models.ExportQueued, models.ExportRunning}).
			Updates(map[string]any{"state": models.ExportDone, "total": total, "processed": total, "size": w.Size, "parts": w.Seq,
				"started_at": now, "finished_at": now, "updated_at": now, "expires_at": now.Add(models.ExportRetention)})
		if res.Error == nil && res.RowsAffected != 1 {
			return errChunkTaken
		}
		return res.Error
	})
	if err != nil && err != errChunkTaken {
		return ImportStep{}, err
	}
	return ImportStep{Done: true}, nil
}

// mapRows is rows as the API shows them ([] for none).
func mapRows[T, R any](rows []T, view func(*T) R) []R {
	out := make([]R, len(rows))
	for i := range rows {
		out[i] = view(&rows[i])
	}
	return out
}

// columns is rows with their columns, named as the API names fields
// (orgId, ticketId…), but those left out: another person's (the member a
// notification went to, when they read it) ([] for none).
func columns[T any](rows []T, leftOut ...string) []map[string]any {
	out := make([]map[string]any, 0, len(rows))
	for i := range rows {
		raw, _ := json.Marshal(&rows[i])
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		row := make(map[string]any, len(m))
		for k, v := range m {
			if k = camel(k); !slices.Contains(leftOut, k) {
				row[k] = v
			}
		}
		out = append(out, row)
	}
	return out
}

// camel is a Go field's name as a JSON member: OrgID is orgId, ID is id.
func camel(name string) string {
	if name == "ID" {
		return "id"
	}
	if base, ok := strings.CutSuffix(name, "ID"); ok {
		name = base + "Id"
	}
	r := []rune(name)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}
