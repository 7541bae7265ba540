package activities

import (
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// emit records events of a change made by an activity in tx, the
// transaction of the change, as a request does through the API's outbox
// (outbox.Tx.Emit): each event with a delivery to every endpoint that
// subscribes to it, and for each endpoint reached a wake-up of its
// delivery workflow as an outbox signal row, which the outbox relay of an
// API process delivers within its poll interval (the worker runs no relay
// of its own). A retried activity whose transaction rolled back records
// them again with the change; one that committed does not run again.
func emit(tx *gorm.DB, events ...models.Event) error {
	reached, err := models.RecordEvents(tx, events, models.Now())
	if err != nil {
		return err
	}
	woken := map[string]bool{}
	for i, ev := range events {
		for _, id := range reached[i] {
			if woken[id] {
				continue
			}
			woken[id] = true
			if err := models.InsertWorkflowSignal(tx, models.WebhookWake(ev.OrgID, id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitChange records the events types of an object's change from before
// to after (its views), as models.ChangeEvents builds them; a change that
// changed nothing emits nothing.
func emitChange(tx *gorm.DB, orgID string, before, after any, types ...string) error {
	events, err := models.ChangeEvents(orgID, before, after, after, types...)
	if err != nil {
		return err
	}
	return emit(tx, events...)
}
