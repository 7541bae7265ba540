package activities

import (
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// A DeliverWebhooks batch as it reads its deliveries, their events and its
// endpoint: once, and again once a second.

// webhookRecheck is how long a batch goes on with what it read: a change
// to the endpoint (disabled, deleted, a new URL or secret) or to a
// delivery still to make (deleted with its event by an erasure, or made
// by another attempt) applies to the deliveries that start at most this
// long after it, even in a batch that takes minutes against a slow
// receiver.
const webhookRecheck = time.Second

// webhookBatch is a DeliverWebhooks batch as last read, by the activity's
// clock: its pending deliveries, their events and its endpoint.
type webhookBatch struct {
	db         *gorm.DB
	now        func() time.Time
	deliveries map[string]*models.WebhookDelivery // pending
	events     map[string]*models.WebhookEvent
	endpoints  map[string]*models.WebhookEndpoint // nil: deleted
	readAt     time.Time
}

// read reads the deliveries ids and their events, in two statements (the
// id lists padded, database.InList).
func (b *webhookBatch) read(ids []string) error {
	var ds []models.WebhookDelivery
	if err := b.db.Where("id IN ? AND status = ?", database.InList(ids), models.DeliveryPending).Find(&ds).Error; err != nil {
		return err
	}
	b.deliveries = make(map[string]*models.WebhookDelivery, len(ds))
	eventIDs := make([]string, len(ds))
	for i := range ds {
		b.deliveries[ds[i].ID], eventIDs[i] = &ds[i], ds[i].EventID
	}
	var evs []models.WebhookEvent
	if err := b.db.Where("id IN ?", database.InList(eventIDs)).Find(&evs).Error; err != nil {
		return err
	}
	b.events = make(map[string]*models.WebhookEvent, len(evs))
	for i := range evs {
		b.events[evs[i].ID] = &evs[i]
	}
	b.endpoints, b.readAt = map[string]*models.WebhookEndpoint{}, b.now()
	return nil
}

// refresh, once webhookRecheck has passed since the batch was read (or
// the clock went back), forgets the deliveries of rest that are no longer
// pending and the endpoint read.
func (b *webhookBatch) refresh(rest []string) error {
	if age := b.now().Sub(b.readAt); age >= 0 && age < webhookRecheck {
		return nil
	}
	var pending []string
	if err := b.db.Model(&models.WebhookDelivery{}).Where("id IN ? AND status = ?", database.InList(rest), models.DeliveryPending).
		Pluck("id", &pending).Error; err != nil {
		return err
	}
	still := make(map[string]*models.WebhookDelivery, len(pending))
	for _, id := range pending {
		if d := b.deliveries[id]; d != nil {
			still[id] = d
		}
	}
	b.deliveries, b.endpoints, b.readAt = still, map[string]*models.WebhookEndpoint{}, b.now()
	return nil
}

// endpoint is the endpoint id, read once until the batch is refreshed;
// nil when it was deleted.
func (b *webhookBatch) endpoint(id string) (*models.WebhookEndpoint, error) {
	if e, ok := b.endpoints[id]; ok {
		return e, nil
	}
	var e models.WebhookEndpoint
	err := b.db.Take(&e, "id = ?", id).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		b.endpoints[id] = nil
	case err != nil:
		return nil, err
	default:
		b.endpoints[id] = &e
	}
	return b.endpoints[id], nil
}
