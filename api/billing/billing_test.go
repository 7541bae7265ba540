package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/worker/ports"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

func TestMain(m *testing.M) { stripetest.Main(m) }

var configured = stripeconfig.Config{SecretKey: stripetest.SecretKey, WebhookSecret: secret}

// service is a billing core whose outbox only records (Temporal is not
// reachable and no relay runs): these tests look at what is recorded.
func service(t *testing.T, db *gorm.DB, cfg stripeconfig.Config) *billing.Service {
	t.Helper()
	addr, err := ports.Addr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.NewLazyClient(client.Options{HostPort: addr, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return &billing.Service{DB: db, Starter: outbox.New(db, tc, slog.New(slog.NewTextHandler(io.Discard, nil)), nil), Config: cfg}
}

func seedOrg(t *testing.T, db *gorm.DB, plan string) string {
	t.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: plan, Timezone: "UTC", Currency: "USD",
		CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&org).Error; err != nil {
		t.Fatal(err)
	}
	return org.ID
}

// openStarter opens a change from free to starter through a configured core.
func openStarter(t *testing.T, db *gorm.DB) (*billing.Service, string, *models.SubscriptionChange) {
	t.Helper()
	org := seedOrg(t, db, models.PlanFree)
	svc := service(t, db, configured)
	c, err := open(svc, models.OpenChange{OrgID: org, Plan: models.PlanStarter})
	if err != nil {
		t.Fatal(err)
	}
	return svc, org, c
}

func outboxRows(t *testing.T, db *gorm.DB, orgID string) []models.WorkflowStart {
	t.Helper()
	var rows []models.WorkflowStart
	if err := db.Where("org_id = ?", orgID).Order("created_at, id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// count counts model's rows matching where.
var count = apitest.Count

func TestOpenRecordsTheChangeWithItsWorkflowStart(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := seedOrg(t, db, models.PlanFree)

		_, err := open(service(t, db, stripeconfig.Config{}), models.OpenChange{OrgID: org, Plan: models.PlanStarter})
		var de *models.DomainError
		if !errors.Is(err, models.ErrUnavailable) || !errors.As(err, &de) || de.Code != "billing_not_configured" {
			t.Fatalf("unconfigured: %v", err)
		}
		svc := service(t, db, configured)
		if _, err := open(svc, models.OpenChange{OrgID: org, Plan: models.PlanFree}); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("free: %v", err)
		}
		if n := count(t, db, &models.SubscriptionChange{}, "org_id = ?", org); n != 0 || len(outboxRows(t, db, org)) != 0 {
			t.Fatal("a refused change left a change or a workflow start behind")
		}

		c, err := open(svc, models.OpenChange{OrgID: org, Plan: models.PlanBusiness, Interval: models.IntervalYear, RequestedBy: "user-1"})
		if err != nil || c.Kind != models.ChangeCreate || c.RequestedBy != "user-1" {
			t.Fatalf("%+v %v", c, err)
		}
		rows := outboxRows(t, db, org)
		if len(rows) != 1 {
			t.Fatalf("%d outbox rows", len(rows))
		}
		r := rows[0]
		var in workflows.SubscriptionChangeInput
		if err := json.Unmarshal([]byte(r.Input), &in); err != nil {
			t.Fatal(err)
		}
		if r.WorkflowID != "subscription/"+org+"/"+c.ID || r.WorkflowID != names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()) || r.WorkflowType != names.SubscriptionChangeWorkflow ||
			r.Kind != names.KindSubscriptionChange || r.SignalName != "" || in != (workflows.SubscriptionChangeInput{ChangeID: c.ID, OrgID: org}) {
			t.Fatalf("start %+v input %+v", r, in)
		}
	})
}

func TestRetryStartsANewRunOfTheChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		svc, org, c := openStarter(t, db)
		if _, _, err := retry(svc, c.ID, "staff-1"); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("retry of an open change: %v", err)
		}
		if _, err := models.CloseSubscriptionChange(ctx, db, c.ID, models.ChangeFailed, "card_declined", "declined"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := retry(service(t, db, stripeconfig.Config{}), c.ID, "staff-1"); !errors.Is(err, models.ErrUnavailable) {
			t.Fatalf("unconfigured retry: %v", err)
		}
		retried, r, err := retry(svc, c.ID, "staff-1")
		if err != nil || retried.Status != models.ChangePending || r.Number != 1 || r.RequestedBy != "staff-1" {
			t.Fatalf("%+v %+v %v", retried, r, err)
		}
		rows := outboxRows(t, db, org)
		if len(rows) != 2 || rows[1].WorkflowID != "subscription/"+org+"/"+c.ID+"/retry-1" || rows[1].WorkflowID != names.SubscriptionChangeID(retried.OrgID, retried.ID, retried.Retry()) {
			t.Fatalf("rows %+v", rows)
		}
		var in workflows.SubscriptionChangeInput
		if err := json.Unmarshal([]byte(rows[1].Input), &in); err != nil || in.Retry != 1 || in.ChangeID != c.ID {
			t.Fatalf("retry input %+v %v", in, err)
		}
	})
}

func TestReceiveEventStoresOnceAndSignalsTheChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		svc, org, c := openStarter(t, db)
		sub := "sub_" + c.ID
		if _, err := models.RecordChangeProgress(ctx, db, c.ID, models.ChangeProgress{Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeSubscriptionID: sub, StripeInvoiceID: "in_" + c.ID}}); err != nil {
			t.Fatal(err)
		}
		payload := stripetest.Event("invoice.paid", invoiceObject("in_"+c.ID, sub, map[string]string{"orgId": org, "changeId": c.ID}))
		var evID struct{ ID string }
		_ = json.Unmarshal(payload, &evID)

		// Without a webhook secret, and with a bad signature: nothing is stored.
		if _, err := receive(service(t, db, stripeconfig.Config{SecretKey: "sk_test_x"}), payload, stripetest.Sign(payload, secret, time.Now())); !errors.Is(err, models.ErrUnavailable) {
			t.Fatalf("no webhook secret: %v", err)
		}
		if _, err := receive(svc, payload, stripetest.Sign(payload, "whsec_wrong", time.Now())); !billing.IsBadWebhook(err) {
			t.Fatalf("wrong secret: %v", err)
		}
		if count(t, db, &models.StripeEvent{}, "id = ?", evID.ID) != 0 {
			t.Fatal("an unverified event was stored")
		}

		for i := range 2 {
			route, err := receive(svc, payload, stripetest.Sign(payload, secret, time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if route.Duplicate != (i == 1) {
				t.Fatalf("delivery %d: duplicate %v", i+1, route.Duplicate)
			}
		}
		var signals []models.WorkflowStart
		db.Where("signal_name = ?", names.SignalStripeEvent).Find(&signals)
		if len(signals) != 1 {
			t.Fatalf("%d signals for one event delivered twice", len(signals))
		}
		s := signals[0]
		var sig workflows.StripeEventSignal
		if err := json.Unmarshal([]byte(s.SignalInput), &sig); err != nil {
			t.Fatal(err)
		}
		if s.WorkflowID != names.SubscriptionChangeID(c.OrgID, c.ID, c.Retry()) || s.WorkflowType != names.SubscriptionChangeWorkflow || s.OrgID != org ||
			sig != (workflows.StripeEventSignal{EventID: evID.ID, Type: "invoice.paid", SubscriptionID: sub, InvoiceID: "in_" + c.ID}) {
			t.Fatalf("signal %+v %+v", s, sig)
		}
		var stored models.StripeEvent
		db.Take(&stored, "id = ?", evID.ID)
		if stored.ChangeID != c.ID || stored.OrgID != org || stored.Payload != string(payload) || stored.Outcome != models.EventDelivered {
			t.Fatalf("stored %+v", stored)
		}
	})
}

func TestWaitHoldsUntilTheWorkflowHasMoved(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := seedOrg(t, db, models.PlanFree)
		svc := service(t, db, configured)
		c, err := open(svc, models.OpenChange{OrgID: org, Plan: models.PlanStarter})
		if err != nil {
			t.Fatal(err)
		}
		// Nothing happens: the change comes back pending when the time is up.
		if got, err := svc.Wait(ctx, org, c.ID, 50*time.Millisecond); err != nil || got.Status != models.ChangePending {
			t.Fatalf("%+v %v", got, err)
		}
		if _, err := svc.Wait(ctx, seedOrg(t, db, models.PlanFree), c.ID, time.Second); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another organization's change: %v", err)
		}
		moved := make(chan struct{})
		go func() {
			defer close(moved)
			<-time.After(100 * time.Millisecond)
			_, _ = models.RecordChangeProgress(ctx, db, c.ID, models.ChangeProgress{Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{ClientSecret: "pi_secret"}})
		}()
		got, err := svc.Wait(ctx, org, c.ID, 30*time.Second)
		<-moved
		if err != nil || got.Status != models.ChangeAwaitingPayment || got.ClientSecret != "pi_secret" {
			t.Fatalf("%+v %v", got, err)
		}
	})
}

// open, retry and receive call the billing core in a transaction of their
// own, as a request does in its own.
func open(svc *billing.Service, req models.OpenChange) (c *models.SubscriptionChange, err error) {
	err = svc.Starter.Transact(context.Background(), func(tx *record.Tx) error {
		c, err = svc.Open(tx, req)
		return err
	})
	return c, err
}

func retry(svc *billing.Service, changeID, by string) (c *models.SubscriptionChange, r *models.SubscriptionChangeRetry, err error) {
	err = svc.Starter.Transact(context.Background(), func(tx *record.Tx) error {
		c, r, err = svc.Retry(tx, changeID, by)
		return err
	})
	return c, r, err
}

func receive(svc *billing.Service, payload []byte, signature string) (route *models.EventRoute, err error) {
	err = svc.Starter.Transact(context.Background(), func(tx *record.Tx) error {
		route, err = svc.ReceiveEvent(func() *record.Tx { return tx }, payload, signature)
		return err
	})
	return route, err
}
