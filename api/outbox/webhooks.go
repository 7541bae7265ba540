package outbox

import (
	"github.com/business-suite/suite/models"
)

// Emit records events for the organization's webhook endpoints in the
// transaction (models.RecordEvents) and wakes the delivery workflow of each
// endpoint they reach once the transaction commits: a change rolled back
// emits nothing, a committed one is delivered.
func (tx *Tx) Emit(events ...models.Event) error {
	reached, err := models.RecordEvents(tx.DB, events, models.Now())
	if err != nil {
		return err
	}
	for i, ev := range events {
		if err := tx.WakeWebhooks(ev.OrgID, reached[i]...); err != nil {
			return err
		}
	}
	return nil
}

// EmitChange records the events types of a change of an organization's
// object, shown as object, from before to after (their views), each with
// the changed fields' earlier values (models.ChangeEvents); a change that
// changed nothing emits nothing.
func (tx *Tx) EmitChange(orgID string, before, after, object any, types ...string) error {
	events, err := models.ChangeEvents(orgID, before, after, object, types...)
	if err != nil {
		return err
	}
	return tx.Emit(events...)
}

// WakeWebhooks wakes the delivery workflows of the organization's
// endpoints once the transaction commits, each at most once per Tx.
func (tx *Tx) WakeWebhooks(orgID string, endpointIDs ...string) error {
	for _, id := range endpointIDs {
		if tx.woken[id] {
			continue
		}
		if err := tx.insertSignal(models.WebhookWake(orgID, id)); err != nil {
			return err
		}
		if tx.woken == nil {
			tx.woken = map[string]bool{}
		}
		tx.woken[id] = true
	}
	return nil
}
