package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// Erasures are the activities of the Erasure workflow.
type Erasures struct {
	DB *gorm.DB
}

// running is the erasure in, locked in tx; nil once it is done.
func (a *Erasures) running(tx *gorm.DB, in models.ErasureInput) (*models.Erasure, error) {
	var e models.Erasure
	err := models.LockForUpdate(tx).Take(&e, "id = ? AND org_id = ?", in.ErasureID, in.OrgID).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, temporal.NewNonRetryableApplicationError("no erasure "+in.ErasureID, ErrTypeNotFound, err)
	case err != nil:
		return nil, err
	case e.State != models.ErasureRunning:
		return nil, nil
	}
	return &e, nil
}

// EraseStep erases step (one of models.ErasureSteps) of the erasure's
// person in one transaction and returns what it erased by kind. A step
// retried finds only what is left (nothing, once it has committed); an
// erasure already done erases nothing.
func (a *Erasures) EraseStep(ctx context.Context, in models.ErasureInput, step string) (map[string]int64, error) {
	out := map[string]int64{}
	err := a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		e, err := a.running(tx, in)
		if err != nil || e == nil {
			return err
		}
		out, err = models.EraseStep(tx, e, step)
		return err
	})
	return out, err
}

// FinishErasure records what the steps erased and forgets the address.
func (a *Erasures) FinishErasure(ctx context.Context, in models.ErasureInput, erased map[string]int64) error {
	return a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		e, err := a.running(tx, in)
		if err != nil || e == nil {
			return err
		}
		return models.FinishErasure(tx, e, erased)
	})
}
