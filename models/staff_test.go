package models_test

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// A staff session is found by its secret only while it is live; the purge
// deletes the ones that are over and keeps the rest.
func TestStaffSessionsLiveAndPurge(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
		user := &models.IdentityUser{ID: models.NewID(), Email: "staff@example.com", Name: "Staff", PasswordHash: "x", Staff: true,
			CreatedAt: now, UpdatedAt: now}
		if err := db.Create(user).Error; err != nil {
			t.Fatal(err)
		}
		open := func(at time.Time) (string, *models.StaffSession) {
			secret, s, err := models.OpenStaffSession(db, user, "127.0.0.1", at, 8*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return secret, s
		}
		live, _ := open(now)
		_, ended := open(now)
		if err := models.EndStaffSession(db, ended.ID, now); err != nil {
			t.Fatal(err)
		}
		old, _ := open(now.Add(-9 * time.Hour))
		if _, err := models.FindStaffSession(ctx, db, live, now, 15*time.Minute); err != nil {
			t.Fatalf("the live session: %v", err)
		}
		for what, secret := range map[string]string{"a wrong secret": live + "x", "the expired session": old, "no secret": ""} {
			if _, err := models.FindStaffSession(ctx, db, secret, now, 15*time.Minute); !errors.Is(err, models.ErrStaffSessionEnded) {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if _, err := models.FindStaffSession(ctx, db, live, now.Add(16*time.Minute), 15*time.Minute); !errors.Is(err, models.ErrStaffSessionEnded) {
			t.Fatalf("an idle session: %v", err)
		}
		n, err := models.PurgeStaffSessions(ctx, db, now)
		if err != nil || n != 2 {
			t.Fatalf("purged %d, %v; want the ended and the expired session", n, err)
		}
		if _, err := models.FindStaffSession(ctx, db, live, now, 15*time.Minute); err != nil {
			t.Fatalf("the purge took the live session: %v", err)
		}
	})
}
