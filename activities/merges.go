package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows/names"
)

// Merges are the activities of the PersonMerge workflow.
type Merges struct {
	DB *gorm.DB
}

// mergeBatch is how many rows of a reference one transaction moves.
const mergeBatch = 500

// merge is the merge in.MergeID, read on db.
func (a *Merges) merge(db *gorm.DB, in models.MergeInput) (*models.PersonMerge, error) {
	var m models.PersonMerge
	err := db.Take(&m, "id = ? AND org_id = ?", in.MergeID, in.OrgID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("no merge "+in.MergeID, ErrTypeNotFound, err)
	}
	return &m, err
}

// MoveMergeReferences moves every row that points at the duplicate to the
// survivor, reference by reference, 500 rows a transaction, heartbeating
// its count. Moving is idempotent (a row moved is no longer the
// duplicate's), so an activity retried after a worker's death goes on
// where the last commit left it. It returns the rows moved by reference.
func (a *Merges) MoveMergeReferences(ctx context.Context, in models.MergeInput) (map[string]int64, error) {
	db := a.DB.WithContext(ctx)
	m, err := a.merge(db, in)
	if err != nil || m.Status == models.MergeDone {
		return map[string]int64{}, err
	}
	moved := map[string]int64{}
	for _, ref := range models.MergeRefs[m.Object] {
		for {
			var n int64
			err := db.Transaction(func(tx *gorm.DB) error {
				var err error
				n, err = models.MoveMergeRows(tx, m, ref, mergeBatch)
				return err
			})
			if err != nil {
				return nil, err
			}
			moved[ref.Name()] += n
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, moved)
			}
			if n < mergeBatch {
				break
			}
		}
	}
	return moved, nil
}

// FinishMerge folds the duplicate into the survivor and deletes it
// (models.FinishMerge), and emits contact.merged or customer.merged with
// the merge, in one transaction; a merge done before does nothing.
func (a *Merges) FinishMerge(ctx context.Context, in models.MergeInput, moved map[string]int64) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		m, err := a.merge(models.LockForUpdate(tx.DB), in)
		if err != nil {
			return err
		}
		survivor, err := models.FinishMerge(tx.DB, m, moved)
		if err != nil || survivor == nil {
			return err
		}
		typ := models.EventContactMerged
		if m.Object == models.AutomationCustomer {
			typ = models.EventCustomerMerged
		}
		return tx.Emit(models.Event{OrgID: m.OrgID, Type: typ,
			Object: views.ToPersonMerge(m, names.PersonMergeID(m.OrgID, m.FromID, m.IntoID))})
	})
}
