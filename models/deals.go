package models

import (
	"time"

	"gorm.io/gorm"
)

// MoveDealStage moves d to the stage to (nothing when it is already there)
// under the pipeline rules (CheckStageMove: admin says whether the caller
// may reopen a closed deal), keeps WonAt and LostReason in step with the
// stage, and records the move in the deal's history in tx, by actor. The
// caller saves d.
func MoveDealStage(tx *gorm.DB, d *Deal, to string, admin bool, by Actor, now time.Time) error {
	from := d.Stage
	if to == from {
		return nil
	}
	if err := CheckStageMove(from, to, admin, d.LostReason); err != nil {
		return err
	}
	d.Stage, d.StageChangedAt = to, now
	switch {
	case to == StageWon:
		d.WonAt = &now
	case from == StageWon:
		d.WonAt = nil
	}
	if to != StageLost {
		d.LostReason = ""
	}
	return tx.Create(&DealStageChange{ID: NewID(), OrgID: d.OrgID, DealID: d.ID, FromStage: from,
		ToStage: to, ChangedBy: by, CreatedAt: now}).Error
}

// CheckDeal refuses a deal the pipeline does not let be saved: a LOST deal
// without a reason.
func CheckDeal(d *Deal) error {
	if d.Stage == StageLost && d.LostReason == "" {
		return Invalid(FieldError{Field: "lostReason", Code: "required", Message: "A LOST deal needs a lostReason."})
	}
	return nil
}

// DealStageHistory is the deal dealID's moves between stages, oldest
// first, read on db (a request's transaction after it moved the deal).
func DealStageHistory(db *gorm.DB, dealID string) ([]DealStageChange, error) {
	var changes []DealStageChange
	err := db.Where("deal_id = ?", dealID).Order("created_at, id").Find(&changes).Error
	return changes, err
}
