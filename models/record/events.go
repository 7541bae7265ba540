package record

import (
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// Emit records events for the organization's webhook endpoints in the
// transaction (models.RecordEvents: a delivery to every endpoint that
// subscribes to each) and wakes the delivery workflow of each endpoint
// they reach once the transaction commits: a change rolled back emits
// nothing, a committed one is delivered. It matches them against the
// organization's automation rules too (matchAutomations).
func (tx *Tx) Emit(events ...models.Event) error {
	reached, err := models.RecordEvents(tx.DB, events, models.Now())
	if err != nil {
		return err
	}
	for i, ev := range events {
		for _, id := range reached[i] {
			if err := tx.WakeWebhook(ev.OrgID, id); err != nil {
				return err
			}
		}
	}
	return tx.matchAutomations(events)
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

// WakeWebhook wakes the delivery workflow of the organization's endpoint
// once the transaction commits, at most once per Tx. The workflow is
// started with the endpoint (it runs for as long as the endpoint exists),
// so a plain signal: one to an endpoint deleted meanwhile is skipped.
func (tx *Tx) WakeWebhook(orgID, endpointID string) error {
	if tx.woken[endpointID] {
		return nil
	}
	err := tx.Signal(Signal{WorkflowID: names.WebhookEndpointID(orgID, endpointID), Name: names.SignalWebhookWake,
		OrgID: orgID, Kind: names.KindWebhookEndpoint})
	if err != nil {
		return err
	}
	tx.markWoken(endpointID)
	return nil
}

func (tx *Tx) markWoken(endpointID string) {
	if tx.woken == nil {
		tx.woken = map[string]bool{}
	}
	tx.woken[endpointID] = true
}
