package models

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Stripe event types the suite acts on; every other type is stored and
// ignored.
const (
	StripeInvoicePaid          = "invoice.paid"
	StripeInvoicePaymentFailed = "invoice.payment_failed"
	StripeSubscriptionUpdated  = "customer.subscription.updated"
	StripeSubscriptionDeleted  = "customer.subscription.deleted"
)

// HandledStripeEvents lists the event types the suite acts on.
var HandledStripeEvents = []string{StripeInvoicePaid, StripeInvoicePaymentFailed, StripeSubscriptionUpdated, StripeSubscriptionDeleted}

// What the suite did with an event (StripeEvent.Outcome, comma-separated
// when several apply).
const (
	EventDelivered        = "delivered_to_change"
	EventOrgReturnedFree  = "organization_returned_to_free"
	EventAccountUpdated   = "subscription_updated"
	EventNoOpenChange     = "no_open_change"
	EventUnrouted         = "unrouted"
	EventIgnoredType      = "ignored_type"
	EventStaleIgnored     = "stale_ignored"
	EventNoRelevantChange = "nothing_to_do"
)

// StripeEvent is one Stripe webhook event, stored once by Stripe's event id:
// a replayed event finds its row and does nothing.
type StripeEvent struct {
	ID             string `gorm:"primaryKey"`
	Type           string
	OrgID          string
	ChangeID       string
	SubscriptionID string
	Outcome        string
	Payload        string
	// StripeCreatedAt is when Stripe created the event.
	StripeCreatedAt time.Time
	ReceivedAt      time.Time
	// ProcessedAt is when the event was routed and acted on: its effects on
	// the organization written and its signal to the change's workflow
	// recorded in the outbox (both in the transaction that stored it).
	ProcessedAt *time.Time
}

// StripeEventData is what the suite reads from a verified Stripe event
// (api/billing.ParseEvent fills it).
type StripeEventData struct {
	ID      string
	Type    string
	Created time.Time
	Payload string

	CustomerID      string
	SubscriptionID  string
	InvoiceID       string
	PaymentIntentID string
	// SubscriptionStatus, CurrentPeriodEnd and CancelAtPeriodEnd come from
	// subscription events.
	SubscriptionStatus string
	CurrentPeriodEnd   *time.Time
	CancelAtPeriodEnd  bool
	// MetaOrgID and MetaChangeID are the orgId and changeId the suite put
	// in the metadata of the objects it created.
	MetaOrgID    string
	MetaChangeID string
}

// EventRoute is what RecordStripeEvent decided.
type EventRoute struct {
	Event *StripeEvent
	// Duplicate: the event id was stored before; nothing was done.
	Duplicate bool
	// Change is the open change the event concerns; the caller signals its
	// workflow in the same transaction (nil: no change to tell).
	Change *SubscriptionChange
	// BillingBefore and BillingAfter are the organization's billing before
	// and after the event was applied to its account (nil when it was
	// not): the caller tells the organization's endpoints what moved
	// (subscription.changed) in the same transaction.
	BillingBefore, BillingAfter *BillingOverview
}

// RecordStripeEvent stores a verified event once and routes it: by its
// subscription id to the organization (billing account, else the change
// that created the subscription, else the orgId metadata) and to the
// organization's open change that concerns this subscription (or that the
// changeId metadata names). Effects on the organization happen here, in
// tx: subscription status and period end are kept (stale updates ignored),
// and the deletion of the organization's subscription — e.g. canceled in
// Stripe's dashboard — returns the organization to free. The caller
// records the signal to route.Change's workflow in the same transaction,
// so an event that arrives while Temporal is down is delivered later.
func RecordStripeEvent(tx *gorm.DB, ev StripeEventData) (*EventRoute, error) {
	now := Now()
	rec := &StripeEvent{ID: ev.ID, Type: ev.Type, SubscriptionID: ev.SubscriptionID, Payload: ev.Payload,
		StripeCreatedAt: ev.Created.UTC().Truncate(time.Microsecond), ReceivedAt: now}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoNothing: true}).Create(rec)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		stored := &StripeEvent{}
		if err := tx.Take(stored, "id = ?", ev.ID).Error; err != nil {
			return nil, err
		}
		return &EventRoute{Event: stored, Duplicate: true}, nil
	}
	route := &EventRoute{Event: rec}
	outcomes, err := routeStripeEvent(tx, ev, rec, route)
	if err != nil {
		return nil, err
	}
	rec.Outcome, rec.ProcessedAt = strings.Join(outcomes, ","), &now
	err = tx.Model(&StripeEvent{}).Where("id = ?", rec.ID).Updates(map[string]any{
		"org_id": rec.OrgID, "change_id": rec.ChangeID, "outcome": rec.Outcome, "processed_at": now}).Error
	return route, err
}

func routeStripeEvent(tx *gorm.DB, ev StripeEventData, rec *StripeEvent, route *EventRoute) ([]string, error) {
	if !slices.Contains(HandledStripeEvents, ev.Type) {
		return []string{EventIgnoredType}, nil
	}
	account, err := accountForEvent(tx, ev)
	if err != nil {
		return nil, err
	}
	orgID, err := orgForEvent(tx, ev, account)
	if err != nil {
		return nil, err
	}
	if orgID == "" {
		return []string{EventUnrouted}, nil
	}
	rec.OrgID = orgID
	var outcomes []string
	if account != nil && ev.SubscriptionID != "" && account.StripeSubscriptionID == ev.SubscriptionID {
		ctx := tx.Statement.Context
		if route.BillingBefore, err = OrgBilling(ctx, tx, orgID); err != nil {
			return nil, err
		}
		o, err := applyEventToAccount(tx, ev, account)
		if err != nil {
			return nil, err
		}
		if route.BillingAfter, err = OrgBilling(ctx, tx, orgID); err != nil {
			return nil, err
		}
		outcomes = append(outcomes, o...)
	}
	var open SubscriptionChange
	err = LockForUpdate(tx).Where("org_id = ? AND status IN ?", orgID, OpenChangeStatuses).Take(&open).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return append(outcomes, EventNoOpenChange), nil
	case err != nil:
		return nil, err
	}
	concerns := (ev.SubscriptionID != "" && open.StripeSubscriptionID == ev.SubscriptionID) ||
		(open.StripeSubscriptionID == "" && ev.MetaChangeID == open.ID)
	if !concerns {
		if len(outcomes) == 0 {
			outcomes = append(outcomes, EventNoRelevantChange)
		}
		return outcomes, nil
	}
	rec.ChangeID, route.Change = open.ID, &open
	return append(outcomes, EventDelivered), nil
}

// accountForEvent finds the billing account by subscription, else customer.
func accountForEvent(tx *gorm.DB, ev StripeEventData) (*BillingAccount, error) {
	for col, v := range map[string]string{"stripe_subscription_id": ev.SubscriptionID, "stripe_customer_id": ev.CustomerID} {
		if v == "" {
			continue
		}
		var a BillingAccount
		err := tx.Take(&a, col+" = ?", v).Error
		if err == nil {
			return &a, nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, err
		}
	}
	return nil, nil
}

// orgForEvent names the organization an event belongs to ("" when none).
func orgForEvent(tx *gorm.DB, ev StripeEventData, account *BillingAccount) (string, error) {
	if account != nil {
		return account.OrgID, nil
	}
	if ev.SubscriptionID != "" {
		var c SubscriptionChange
		err := tx.Where("stripe_subscription_id = ?", ev.SubscriptionID).Order("created_at DESC").Take(&c).Error
		if err == nil {
			return c.OrgID, nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return "", err
		}
	}
	if ValidID(ev.MetaOrgID) {
		var n int64
		if err := tx.Model(&Organization{}).Where("id = ?", ev.MetaOrgID).Count(&n).Error; err != nil {
			return "", err
		}
		if n == 1 {
			return ev.MetaOrgID, nil
		}
	}
	return "", nil
}

// applyEventToAccount keeps the organization's subscription state in step
// with Stripe. A deleted subscription returns the organization to free.
func applyEventToAccount(tx *gorm.DB, ev StripeEventData, account *BillingAccount) ([]string, error) {
	now := Now()
	switch ev.Type {
	case StripeSubscriptionUpdated:
		updated, err := recordSubscriptionState(tx, account.OrgID, ev.SubscriptionID, SubscriptionState{Status: ev.SubscriptionStatus,
			CurrentPeriodEnd: ev.CurrentPeriodEnd, CancelAtPeriodEnd: ev.CancelAtPeriodEnd}, ev.Created)
		if err != nil {
			return nil, err
		}
		if !updated {
			return []string{EventStaleIgnored}, nil
		}
		return []string{EventAccountUpdated}, nil
	case StripeSubscriptionDeleted:
		if err := tx.Model(&BillingAccount{}).Where("org_id = ?", account.OrgID).Updates(map[string]any{
			"subscription_status": "canceled", "plan": PlanFree, "cancel_at_period_end": false,
			"last_event_at": ev.Created.UTC(), "updated_at": now}).Error; err != nil {
			return nil, err
		}
		res := tx.Model(&Organization{}).Where("id = ? AND plan <> ?", account.OrgID, PlanFree).
			Updates(map[string]any{"plan": PlanFree, "updated_at": now})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 1 {
			return []string{EventOrgReturnedFree}, nil
		}
		return []string{EventAccountUpdated}, nil
	}
	return nil, nil
}

// SubscriptionState is Stripe's view of a subscription.
type SubscriptionState struct {
	Status            string
	CurrentPeriodEnd  *time.Time
	CancelAtPeriodEnd bool
}

// RecordSubscriptionState keeps the organization's billing account in step
// with Stripe's view of its subscription subscriptionID, as of at (when
// Stripe said so). A state older than the newest one recorded is stale and
// ignored (Stripe does not promise the order of events), as is a state of
// another subscription than the organization's; it reports whether the
// account changed.
func RecordSubscriptionState(ctx context.Context, db *gorm.DB, orgID, subscriptionID string, st SubscriptionState, at time.Time) (bool, error) {
	return recordSubscriptionState(db.WithContext(ctx), orgID, subscriptionID, st, at)
}

func recordSubscriptionState(tx *gorm.DB, orgID, subscriptionID string, st SubscriptionState, at time.Time) (bool, error) {
	at = at.UTC().Truncate(time.Microsecond)
	res := tx.Model(&BillingAccount{}).
		Where("org_id = ? AND stripe_subscription_id = ? AND (last_event_at IS NULL OR last_event_at <= ?)", orgID, subscriptionID, at).
		Updates(map[string]any{"subscription_status": st.Status, "current_period_end": st.CurrentPeriodEnd,
			"cancel_at_period_end": st.CancelAtPeriodEnd, "last_event_at": at, "updated_at": Now()})
	return res.RowsAffected == 1, res.Error
}
