package record_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/models/record"
)

// BenchmarkEmitWithRules is what matching a change against a workspace's
// active rules costs the change, on PostgreSQL: one ticket.updated event
// in a transaction of its own, against as many rules as a plan allows
// (Starter 20, Business 100, Enterprise 500), none of which holds (a
// match's run is the same work however many rules there are).
//
//	go test -run NONE -bench EmitWithRules ./models/record/
func BenchmarkEmitWithRules(b *testing.B) {
	if dbtest.PostgresURL(b) == "" {
		b.Skip("no PostgreSQL")
	}
	for _, n := range []int{0, 20, 100, 500} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			db := dbtest.Open(b, database.Postgres)
			now := models.Now()
			org := &models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: models.PlanEnterprise,
				Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
			if err := db.Create(org).Error; err != nil {
				b.Fatal(err)
			}
			for i := range n {
				rule := &models.Automation{ID: models.NewID(), OrgID: org.ID, Version: 1, CreatedAt: now, UpdatedAt: now}
				rule.SetDefinition(models.AutomationDefinition{Name: fmt.Sprintf("Rule %d", i), Active: true, Position: i,
					Object: models.AutomationTicket, On: []string{"created", "updated"},
					Conditions: models.Conditions{All: []models.Condition{{Field: "priority", Operator: "is", Value: "urgent"},
						{Field: "tags", Operator: "includes", Value: fmt.Sprintf("rule-%d", i)}}},
					Steps: []models.AutomationStep{{Action: "add_tags", Value: []any{"seen"}}}, Refire: models.RefireOnce})
				if err := db.Create(rule).Error; err != nil {
					b.Fatal(err)
				}
			}
			ticketID := models.NewID()
			ev := models.Event{OrgID: org.ID, Type: "ticket.updated", Previous: map[string]any{"status": "new"},
				Object: map[string]any{"id": ticketID, "number": 1042, "subject": "Printer on fire", "priority": "normal",
					"status": "open", "tags": []any{"billing"}, "email": "ops@bigco.example"}}
			ctx := context.Background()
			for b.Loop() {
				if err := record.Transact(ctx, db, func(tx *record.Tx) error { return tx.Emit(ev) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
