package models

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Outbound webhooks: an organization's endpoints subscribe to event types;
// an event is recorded in the transaction of the change it describes, with
// one delivery per endpoint it matches (RecordEvents), so a rolled-back
// change emits nothing and a committed one is never lost. Each endpoint's
// WebhookEndpoint workflow delivers its deliveries in their order (Seq).

// Endpoint statuses.
const (
	WebhookEnabled  = "enabled"
	WebhookDisabled = "disabled"
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Who disabled an endpoint.
const (
	DisabledByAPI      = "api"
	DisabledByDelivery = "delivery"
)

// MaxWebhookEndpoints is how many endpoints an organization may have.
const MaxWebhookEndpoints = 20

// WebhookTestEvent is the event POST …/webhooks/:wid/test sends; it is no
// change of anything, and no endpoint subscribes to it.
const WebhookTestEvent = "webhook.test"

// WebhookEndpoint is one URL an organization has events POSTed to.
type WebhookEndpoint struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	URL         string `gorm:"column:url"`
	Description string
	// Events is the JSON array of the patterns it subscribes to.
	Events string
	// Secret signs every delivery ("whsec_" and base64); after a rotation
	// PreviousSecret signs alongside until PreviousSecretUntil.
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	Status              string
	DisabledReason      string
	// DisabledBy says who disabled it: DisabledByAPI (it receives nothing
	// new) or DisabledByDelivery (new events queue for its return).
	DisabledBy string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Patterns are the event patterns e subscribes to.
func (e *WebhookEndpoint) Patterns() []string {
	var p []string
	_ = json.Unmarshal([]byte(e.Events), &p)
	return p
}

// Secrets are the secrets that sign a delivery at now: the current one,
// and the previous one for 24 hours after a rotation.
func (e *WebhookEndpoint) Secrets(now time.Time) []string {
	if e.PreviousSecret != "" && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		return []string{e.Secret, e.PreviousSecret}
	}
	return []string{e.Secret}
}

// WebhookEvent is one change an organization's endpoints were told of; its
// ID is the webhook-id of every delivery of it, replays included.
type WebhookEvent struct {
	ID    string `gorm:"primaryKey"`
	OrgID string
	Type  string
	// Payload is the JSON body POSTed (EventBody).
	Payload   string
	CreatedAt time.Time
}

// WebhookDelivery is one event to send to one endpoint; an endpoint's
// pending deliveries go out in Seq order.
type WebhookDelivery struct {
	Seq            int64  `gorm:"primaryKey;autoIncrement"`
	ID             string `gorm:"uniqueIndex"`
	OrgID          string
	EndpointID     string
	EventID        string
	Status         string
	Attempts       int
	LastStatus     int
	LastError      string
	LastDurationMS int `gorm:"column:last_duration_ms"`
	NextAttemptAt  *time.Time
	CreatedAt      time.Time
	FinishedAt     *time.Time
}

// EventBody is the JSON an endpoint receives.
type EventBody struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	OrgID     string    `json:"orgId"`
	Data      EventData `json:"data"`
}

// EventData is an event's object — the JSON the API returns for it — and,
// for a change, the values its changed fields had before.
type EventData struct {
	Object   any            `json:"object"`
	Previous map[string]any `json:"previous,omitempty"`
}

// ValidEventPattern tells whether p names event types: "*", a group of
// EventTypes ("deal.*") or one of them.
func ValidEventPattern(p string) bool {
	if p == "*" {
		return true
	}
	if group, ok := strings.CutSuffix(p, ".*"); ok {
		return slices.ContainsFunc(EventTypes, func(t string) bool { return strings.HasPrefix(t, group+".") })
	}
	return slices.Contains(EventTypes, p) || AutomationEventType(p)
}

// EventMatches tells whether an event of type typ matches one of patterns.
func EventMatches(patterns []string, typ string) bool {
	for _, p := range patterns {
		if p == "*" || p == typ {
			return true
		}
		if group, ok := strings.CutSuffix(p, ".*"); ok && strings.HasPrefix(typ, group+".") {
			return true
		}
	}
	return false
}

// NewWebhookSecret is a fresh signing secret: "whsec_" and 24 random
// bytes in base64, as Standard Webhooks' libraries read it.
func NewWebhookSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Event is a change to tell an organization's endpoints of.
type Event struct {
	OrgID string
	Type  string
	// Object is the API's JSON of the object as it is now.
	Object any
	// Previous, for an update, holds the changed fields' earlier values
	// (PreviousFields).
	Previous map[string]any
	// Subject, when set, is the object automation rules match the event
	// on, when Object is another: a comment's or a message's ticket (its
	// view). A rule's conditions see Object under SubjectKey ("comment",
	// "message").
	Subject any
}

// receivingEndpoints is the condition, on the organization's id, of the
// endpoints RecordEvents records events for.
const receivingEndpoints = "org_id = ? AND (status = '" + WebhookEnabled + "' OR disabled_by = '" + DisabledByDelivery + "')"

// AnyReceivingEndpoint is a query, on the organization's id, that finds a
// row when the organization has an endpoint RecordEvents may record an
// event for: a write guarded by it (database.InsertUnless) knows, in its
// own statement, that no event of it can be recorded.
const AnyReceivingEndpoint = "SELECT 1 FROM webhook_endpoints WHERE " + receivingEndpoints

// AnyEventConsumer is a query, on the organization's id given twice, that
// finds a row when something may act on an event of the organization's
// object (AutomationTicket…): an endpoint RecordEvents may record it for
// (AnyReceivingEndpoint), or an active automation rule about that object
// (record.Tx.Emit matches every event against them). A write guarded by
// it knows, in its own statement, that its events would reach nobody.
func AnyEventConsumer(object string) string {
	return AnyReceivingEndpoint + " UNION ALL SELECT 1 FROM automations WHERE org_id = ? AND active AND object = '" + object + "'"
}

// RecordEvents records events in tx, the transaction of the change they
// describe, each with one pending delivery to each endpoint of its
// organization that subscribes to its type: the enabled ones, and those
// that delivery disabled (410 Gone, days of failures), whose events wait
// for them to be enabled again; one its admins disabled gets nothing. An
// event no endpoint subscribes to is not recorded. It returns, for each
// event, the ids of the endpoints it reached, whose workflows are to be
// woken once tx commits. An organization's endpoints are read once for all
// its events.
func RecordEvents(tx *gorm.DB, events []Event, now time.Time) ([][]string, error) {
	receiving := map[string][]WebhookEndpoint{}
	reached := make([][]string, len(events))
	for i, ev := range events {
		endpoints, read := receiving[ev.OrgID]
		if !read {
			if err := tx.Select("id", "events").Where(receivingEndpoints, ev.OrgID).Find(&endpoints).Error; err != nil {
				return nil, err
			}
			receiving[ev.OrgID] = endpoints
		}
		for j := range endpoints {
			if EventMatches(endpoints[j].Patterns(), ev.Type) {
				reached[i] = append(reached[i], endpoints[j].ID)
			}
		}
		if len(reached[i]) == 0 {
			continue
		}
		if _, err := insertEvent(tx, ev, reached[i], now); err != nil {
			return nil, err
		}
	}
	return reached, nil
}

// RecordTestEvent records a webhook.test event for endpoint e alone.
func RecordTestEvent(tx *gorm.DB, e *WebhookEndpoint, now time.Time) (*WebhookDelivery, error) {
	ds, err := insertEvent(tx, Event{OrgID: e.OrgID, Type: WebhookTestEvent,
		Object: map[string]any{"endpointId": e.ID, "url": e.URL}}, []string{e.ID}, now)
	if err != nil {
		return nil, err
	}
	return &ds[0], nil
}

// insertEvent writes ev and a pending delivery of it to each endpoint.
func insertEvent(tx *gorm.DB, ev Event, endpointIDs []string, now time.Time) ([]WebhookDelivery, error) {
	id := NewID()
	payload, err := json.Marshal(EventBody{ID: id, Type: ev.Type, Timestamp: now.UTC(), OrgID: ev.OrgID,
		Data: EventData{Object: ev.Object, Previous: ev.Previous}})
	if err != nil {
		return nil, fmt.Errorf("encode the %s event: %w", ev.Type, err)
	}
	if err := tx.Create(&WebhookEvent{ID: id, OrgID: ev.OrgID, Type: ev.Type, Payload: string(payload), CreatedAt: now}).Error; err != nil {
		return nil, err
	}
	ds := make([]WebhookDelivery, len(endpointIDs))
	for i, eid := range endpointIDs {
		ds[i] = WebhookDelivery{ID: NewID(), OrgID: ev.OrgID, EndpointID: eid, EventID: id, Status: DeliveryPending, CreatedAt: now}
	}
	return ds, tx.Create(&ds).Error
}

// ReplayDelivery queues event d.EventID again for d's endpoint, as a new
// delivery at the end of its queue; the receiver sees the same webhook-id.
func ReplayDelivery(tx *gorm.DB, d *WebhookDelivery, now time.Time) (*WebhookDelivery, error) {
	r := &WebhookDelivery{ID: NewID(), OrgID: d.OrgID, EndpointID: d.EndpointID, EventID: d.EventID, Status: DeliveryPending, CreatedAt: now}
	return r, tx.Create(r).Error
}

// ChangeEvents are the events types of a change of an organization's
// object, shown as object, from before to after (its views): each with
// the fields that changed at their earlier values (PreviousFields); none
// when nothing changed.
func ChangeEvents(orgID string, before, after, object any, types ...string) ([]Event, error) {
	previous, err := PreviousFields(before, after)
	if err != nil || len(previous) == 0 {
		return nil, err
	}
	events := make([]Event, len(types))
	for i, t := range types {
		events[i] = Event{OrgID: orgID, Type: t, Object: object, Previous: previous}
	}
	return events, nil
}

// PreviousFields are the fields of the JSON object before that after
// changes, with their values in before: an event's "previous". Fields
// that change on every write (updatedAt) are left out.
func PreviousFields(before, after any) (map[string]any, error) {
	b, err := JSONObject(before)
	if err != nil {
		return nil, err
	}
	a, err := JSONObject(after)
	if err != nil {
		return nil, err
	}
	prev := map[string]any{}
	for k, v := range b {
		if k == "updatedAt" {
			continue
		}
		if !reflect.DeepEqual(v, a[k]) {
			prev[k] = v
		}
	}
	return prev, nil
}

// JSONObject is v's JSON as a map: an object as a webhook event, a rule's
// conditions and its templates see it.
func JSONObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}
