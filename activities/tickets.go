package activities

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// Tickets are the activities of ticket workflows.
type Tickets struct {
	DB *gorm.DB
}

// CloseIfStillSolved closes a ticket that is still in the solved state it
// was in when its auto-close timer started (generation solveCount). A
// ticket reopened meanwhile — or solved again, which starts a new timer —
// is left alone. It reports whether the ticket was closed.
func (a *Tickets) CloseIfStillSolved(ctx context.Context, ticketID string, solveCount int) (bool, error) {
	closed := false
	err := a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var t models.Ticket
		err := models.LockForUpdate(tx).Take(&t, "id = ?", ticketID).Error
		if err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil // deleted meanwhile: nothing to close
			}
			return err
		}
		if t.Status != models.TicketSolved || t.SolveCount != solveCount {
			return nil
		}
		now := models.Now()
		if err := tx.Model(&models.Ticket{}).Where("id = ?", t.ID).
			Updates(map[string]any{"status": models.TicketClosed, "closed_at": &now, "updated_at": now}).Error; err != nil {
			return err
		}
		closed = true
		if t.CustomerID == nil {
			return nil
		}
		return models.RecordCustomerEvent(tx, t.OrgID, *t.CustomerID, &t.ID, "ticket_closed",
			"Ticket #"+models.Itoa(t.Number)+" closed automatically after being solved", "system")
	})
	return closed, err
}
