package activities

import (
	"context"
	"errors"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// The outcome of a change in the suite: Stripe's view of the subscription
// and the new plan recorded on the organization's billing (with the
// subscription.changed events), or the change closed as failed, expired
// or canceled.

// SyncSubscription records Stripe's view of the change's subscription
// (status, current period end) on the organization's billing account once
// the change is applied, so the account shows the new period without
// waiting for the next event. A cancellation has nothing to read.
func (a *Billing) SyncSubscription(ctx context.Context, changeID string) error {
	c, err := a.change(ctx, changeID, false)
	if err != nil || c.Kind == models.ChangeCancel || c.StripeSubscriptionID == "" {
		return err
	}
	sc, err := a.stripe()
	if err != nil {
		return err
	}
	gp := &stripe.SubscriptionParams{}
	gp.Context = ctx
	at := time.Now()
	sub, err := sc.Subscriptions.Get(c.StripeSubscriptionID, gp)
	if err != nil {
		return stripeError("read the subscription", err)
	}
	st := models.SubscriptionState{Status: string(sub.Status), CancelAtPeriodEnd: sub.CancelAtPeriodEnd}
	if sub.CurrentPeriodEnd > 0 {
		end := time.Unix(sub.CurrentPeriodEnd, 0).UTC()
		st.CurrentPeriodEnd = &end
	}
	return a.changeBilling(ctx, c.OrgID, func(tx *gorm.DB) error {
		_, err := models.RecordSubscriptionState(ctx, tx, c.OrgID, c.StripeSubscriptionID, st, at)
		return err
	})
}

// ApplyPlan puts the change's plan into effect (models.ApplySubscriptionChange).
func (a *Billing) ApplyPlan(ctx context.Context, changeID string) error {
	c, err := a.change(ctx, changeID, false)
	if err != nil {
		return err
	}
	return closedErr(changeID, a.changeBilling(ctx, c.OrgID, func(tx *gorm.DB) error {
		_, err := models.ApplySubscriptionChange(ctx, tx, changeID)
		return err
	}))
}

// changeBilling makes change, a change of the organization's billing, in
// a transaction that also records what it moved for the organization's
// endpoints: subscription.changed when the plan or the Stripe
// subscription changed (views.SubscriptionChangedEvents).
// models.ApplySubscriptionChange's own transaction nests in it (a
// savepoint).
func (a *Billing) changeBilling(ctx context.Context, orgID string, change func(tx *gorm.DB) error) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		before, err := models.OrgBilling(ctx, tx.DB, orgID)
		if err != nil {
			return err
		}
		if err := change(tx.DB); err != nil {
			return err
		}
		after, err := models.OrgBilling(ctx, tx.DB, orgID)
		if err != nil {
			return err
		}
		events, err := views.SubscriptionChangedEvents(before, after)
		if err != nil {
			return err
		}
		return tx.Emit(events...)
	})
}

// CloseChange ends the change as failed, expired or canceled with a code
// and a message.
func (a *Billing) CloseChange(ctx context.Context, changeID, status string, why StripeFailure) error {
	_, err := models.CloseSubscriptionChange(ctx, a.DB, changeID, status, why.Code, why.Message)
	return closedErr(changeID, err)
}

func closedErr(changeID string, err error) error {
	switch {
	case errors.Is(err, models.ErrNotFound):
		return temporal.NewNonRetryableApplicationError("subscription change "+changeID+" does not exist", ErrTypeNotFound, err)
	case errors.Is(err, models.ErrConflict):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeChangeClosed, err)
	}
	return err
}
