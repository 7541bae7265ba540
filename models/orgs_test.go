package models_test

import (
	"context"
	"errors"
	"fmt"
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

// An organization's limit on rows of a kind: a 409 with the caller's code
// and the limit in its message once it is reached, and only then.
func TestWithinOrgLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := newOrg(t, db, models.PlanBusiness, "UTC")
		for i := range 2 {
			a := models.EmailAddress{ID: models.NewID(), OrgID: org.ID, Address: fmt.Sprintf("help-%d@acme.example", i),
				Token: models.NewAddressToken(), CreatedAt: models.Now()}
			if err := db.Create(&a).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := models.WithinOrgLimit(db, &models.EmailAddress{}, org.ID, 3, "too_many", "at most %d"); err != nil {
			t.Fatalf("below the limit: %v", err)
		}
		err := models.WithinOrgLimit(db, &models.EmailAddress{}, org.ID, 2, "too_many", "at most %d")
		var de *models.DomainError
		if !errors.As(err, &de) || de.Code != "too_many" || de.Message != "at most 2" || !errors.Is(de.Kind, models.ErrConflict) {
			t.Fatalf("at the limit: %v", err)
		}
		if err := models.WithinOrgLimit(db, &models.EmailAddress{}, models.NewID(), 0, "too_many", "at most %d"); err == nil {
			t.Fatal("an organization that does not exist passed")
		}
	})
}
