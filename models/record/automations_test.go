package record_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// Each change is matched against the rules as they stand, whoever changed
// them and however (the API, an operator's SQL), though a process reads
// the rules only when the organization's revision has moved.
func TestRulesAreReadAgainAfterEveryChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _, _, _ := seed(t, db)
		var rulesRead int
		cb := "test:count_rule_reads"
		if err := db.Callback().Query().After("gorm:query").Register(cb, func(d *gorm.DB) {
			if d.Statement.Table == "automations" {
				rulesRead++
			}
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Callback().Query().Remove(cb) })
		revision := func() string {
			t.Helper()
			r, err := models.AutomationsRevision(db, orgID)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		// created emits ticket.created for a new ticket of priority and
		// tells whether the rule started a run for it.
		created := func(ruleID, priority string) bool {
			t.Helper()
			ticketID := models.NewID()
			ev := models.Event{OrgID: orgID, Type: "ticket.created",
				Object: map[string]any{"id": ticketID, "priority": priority, "status": "open"}}
			if err := record.Transact(context.Background(), db, func(tx *record.Tx) error { return tx.Emit(ev) }); err != nil {
				t.Fatal(err)
			}
			return len(starts(t, db, names.AutomationRunID(ruleID, ticketID))) == 1
		}

		if revision() != "" || created(models.NewID(), "urgent") || rulesRead != 0 {
			t.Fatalf("an organization that never had a rule: revision %q, %d reads of its rules", revision(), rulesRead)
		}
		now := models.Now()
		rule := &models.Automation{ID: models.NewID(), OrgID: orgID, Version: 1, CreatedAt: now, UpdatedAt: now}
		rule.SetDefinition(models.AutomationDefinition{Name: "Urgent", Active: true, Object: models.AutomationTicket, On: []string{"created"},
			Conditions: models.Conditions{All: []models.Condition{{Field: "priority", Operator: "is", Value: "urgent"}}},
			Steps:      []models.AutomationStep{{Action: "add_tags", Value: []any{"hot"}}}, Refire: models.RefireOnce})
		if err := db.Create(rule).Error; err != nil {
			t.Fatal(err)
		}
		first := revision()
		if first == "" || !created(rule.ID, "urgent") || created(rule.ID, "low") || rulesRead != 1 {
			t.Fatalf("after the rule's insert (revision %q): %d reads of the rules for two changes, want 1", first, rulesRead)
		}

		// A change by SQL, not through the API, is seen at once.
		if err := db.Model(&models.Automation{}).Where("id = ?", rule.ID).
			Update("conditions", `{"all":[{"field":"priority","operator":"is","value":"low"}],"any":[]}`).Error; err != nil {
			t.Fatal(err)
		}
		if r := revision(); r == "" || r == first || created(rule.ID, "urgent") || !created(rule.ID, "low") || rulesRead != 2 {
			t.Fatalf("after the rule's update (revision %q, was %q): %d reads of the rules, want 2", r, first, rulesRead)
		}
		// Saving the organization does not put an old revision back.
		var org models.Organization
		if err := db.Take(&org, "id = ?", orgID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.Automation{}).Where("id = ?", rule.ID).Update("active", false).Error; err != nil {
			t.Fatal(err)
		}
		org.Name = "Acme Corp"
		if err := db.Save(&org).Error; err != nil {
			t.Fatal(err)
		}
		if created(rule.ID, "low") {
			t.Fatal("a disabled rule started a run")
		}
		if err := db.Delete(&models.Automation{}, "id = ?", rule.ID).Error; err != nil {
			t.Fatal(err)
		}
		before := revision()
		if before == "" || created(rule.ID, "low") {
			t.Fatalf("after the rule's delete: revision %q, or a run of a deleted rule", before)
		}
	})
}
