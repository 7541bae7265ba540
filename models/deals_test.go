package models_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// A stage move has one home, reachable without HTTP: it follows the
// pipeline rules, keeps WonAt and LostReason in step and writes the history,
// which DealStageHistory reads back oldest first.
func TestMoveDealStage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := billingOrg(t, db, models.PlanFree, 1, 0, false)
		now := models.Now()
		d := &models.Deal{ID: models.NewID(), OrgID: orgID, Title: "Big one", Currency: "USD", Stage: models.StageQualified,
			CreatedBy: models.MemberActor("m1"), StageChangedAt: now, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(d).Error; err != nil {
			t.Fatal(err)
		}
		by := models.MemberActor("m1")
		move := func(to string, admin bool) error {
			return db.Transaction(func(tx *gorm.DB) error {
				if err := models.MoveDealStage(tx, d, to, admin, by, models.Now()); err != nil {
					return err
				}
				return tx.Save(d).Error
			})
		}
		if err := move(models.StageWon, false); err != nil || d.WonAt == nil {
			t.Fatalf("won: %v, wonAt %v", err, d.WonAt)
		}
		var problem *models.DomainError
		if err := move(models.StageNegotiation, false); !errors.As(err, &problem) {
			t.Fatalf("an agent reopened a won deal: %v", err)
		}
		if err := move(models.StageNegotiation, true); err != nil || d.WonAt != nil {
			t.Fatalf("an admin's reopening: %v, wonAt %v", err, d.WonAt)
		}
		if err := move(models.StageNegotiation, true); err != nil {
			t.Fatalf("a move to the same stage: %v", err)
		}
		d.LostReason = "budget"
		if err := move(models.StageLost, false); err != nil || models.CheckDeal(d) != nil {
			t.Fatalf("lost with a reason: %v", err)
		}
		d.LostReason = ""
		if err := models.CheckDeal(d); err == nil {
			t.Fatal("a LOST deal without a reason passes")
		}
		history, err := models.DealStageHistory(db, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		var moves []string
		for _, h := range history {
			moves = append(moves, h.FromStage+"→"+h.ToStage)
		}
		if got, want := len(moves), 3; got != want || moves[0] != "QUALIFIED→WON" || moves[2] != "NEGOTIATION→LOST" || history[0].ChangedBy != by {
			t.Fatalf("history %v", moves)
		}
	})
}
