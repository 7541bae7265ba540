package models_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

func TestActiveOrgsRemembersOnlyActiveOrganizations(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := models.Now()
		org := models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgProvisioning, Plan: models.PlanFree,
			Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&org).Error; err != nil {
			t.Fatal(err)
		}
		var orgs models.ActiveOrgs
		check := func(id string, want bool) {
			t.Helper()
			got, err := orgs.Active(ctx, db, id)
			if err != nil || got != want {
				t.Fatalf("Active(%q) = %v, %v; want %v", id, got, err, want)
			}
		}
		check(models.NewID(), false)
		check("not-an-id", false)
		check(org.ID, false) // provisioning: not remembered, asked again
		dbtest.MustExec(t, db, "UPDATE organizations SET status = ? WHERE id = ?", models.OrgActive, org.ID)
		check(org.ID, true)
		// Remembered: the process asks the database no more (active is
		// final, so nothing it could read there would change the answer).
		dbtest.MustExec(t, db, "DELETE FROM organizations WHERE id = ?", org.ID)
		check(org.ID, true)
	})
}
