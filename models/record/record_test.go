package record_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/telemetry"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// seed makes an organization with two members, the first with a browser
// subscribed to push, and two enabled webhook endpoints: one for CRM
// events, one for tickets'.
func seed(t *testing.T, db *gorm.DB) (orgID, subscribed, unsubscribed, endpointID string) {
	t.Helper()
	now := models.Now()
	org := &models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: "business",
		Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	rows := []any{org}
	var members [2]string
	for i := range members {
		members[i] = models.NewID()
		rows = append(rows, &models.Member{ID: members[i], OrgID: org.ID, Email: models.NewID() + "@x.io", Name: "M",
			Role: models.RoleAgent, Status: models.MemberActive, CreatedAt: now, UpdatedAt: now})
	}
	e := &models.WebhookEndpoint{ID: models.NewID(), OrgID: org.ID, URL: "https://hooks.example.com/crm", Events: `["contact.*","deal.*","task.*"]`,
		Secret: "whsec_x", Status: models.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
	tickets := &models.WebhookEndpoint{ID: models.NewID(), OrgID: org.ID, URL: "https://hooks.example.com/tickets", Events: `["ticket.*"]`,
		Secret: "whsec_y", Status: models.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
	rows = append(rows, e, tickets, &models.PushSubscription{ID: models.NewID(), OrgID: org.ID, MemberID: members[0],
		Endpoint: "https://push.example.com/" + models.NewID(), P256dh: "key", Auth: "auth", CreatedAt: now, UpdatedAt: now})
	for _, r := range rows {
		if err := db.Create(r).Error; err != nil {
			t.Fatal(err)
		}
	}
	return org.ID, members[0], members[1], e.ID
}

func starts(t *testing.T, db *gorm.DB, workflowID string) []models.WorkflowStart {
	t.Helper()
	var rows []models.WorkflowStart
	if err := db.Where("workflow_id = ?", workflowID).Order("created_at, id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// A notification is stored once; its push is recorded with it only for a
// member with a browser subscribed, once however often it is notified.
func TestNotifyStoresOnceAndPushesOnlyToSubscribedMembers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, subscribed, unsubscribed, _ := seed(t, db)
		ticket := &models.Ticket{ID: models.NewID(), OrgID: orgID, Number: 7, Subject: "Printer on fire"}
		for _, member := range []string{subscribed, unsubscribed} {
			for try := range 2 { // a retried activity notifies again
				err := record.Transact(t.Context(), db, func(tx *record.Tx) error {
					n := models.TicketAssignedNotice(ticket, member, models.Now())
					n.ID = models.DerivedID(ticket.ID, "assigned", member)
					created, err := tx.Notify(n)
					if created != (try == 0) {
						t.Errorf("try %d: created %v", try, created)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		var n models.Notification
		if err := db.Take(&n, "id = ?", models.DerivedID(ticket.ID, "assigned", subscribed)).Error; err != nil {
			t.Fatal(err)
		}
		if n.Type != models.NotifyTicketAssigned || n.Title != "Ticket #7 assigned to you" || n.Body != "Printer on fire" || n.ResourceID != ticket.ID {
			t.Fatalf("stored %+v", n)
		}
		pushes := starts(t, db, names.NotificationDeliveryID(n.ID))
		if len(pushes) != 1 || pushes[0].WorkflowType != names.NotificationDeliveryWorkflow || pushes[0].OrgID != orgID {
			t.Fatalf("pushes of the subscribed member's notification: %+v", pushes)
		}
		if p := starts(t, db, names.NotificationDeliveryID(models.DerivedID(ticket.ID, "assigned", unsubscribed))); len(p) != 0 {
			t.Fatalf("a push recorded for a member without a subscription: %+v", p)
		}
	})
}

// Emit wakes each endpoint its events reach once per transaction, with a
// plain signal that carries the endpoint's organization and kind (its turn
// after the workflow's start) and the request's id; a savepoint rolled
// back takes its wake-up with it, so the transaction wakes the endpoint
// again for a later event (also when it has woken another endpoint).
func TestEmitWakesEachEndpointOncePerTransaction(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _, _, endpointID := seed(t, db)
		ctx := telemetry.WithRequestID(context.Background(), "req-1")
		wakeID := names.WebhookEndpointID(orgID, endpointID)
		var recorded []string
		ev := func(typ string) models.Event {
			return models.Event{OrgID: orgID, Type: typ, Object: map[string]any{"id": typ}}
		}
		err := db.Transaction(func(gtx *gorm.DB) error {
			tx := record.In(ctx, gtx, func(org string) { recorded = append(recorded, org) })
			if err := tx.Emit(ev("contact.created"), ev("deal.created")); err != nil {
				return err
			}
			return tx.Emit(ev("task.created"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(starts(t, db, wakeID)); n != 1 {
			t.Fatalf("%d wake-ups after three events in one transaction, want 1", n)
		}
		err = db.Transaction(func(gtx *gorm.DB) error {
			tx := record.In(ctx, gtx, nil)
			if err := tx.Emit(ev("ticket.created")); err != nil { // wakes the other endpoint
				return err
			}
			refused := errors.New("refused")
			err := tx.Savepoint(func(sp *record.Tx) error {
				if err := sp.Emit(ev("contact.updated")); err != nil {
					return err
				}
				return refused
			})
			if !errors.Is(err, refused) {
				return err
			}
			return tx.Emit(ev("contact.deleted"))
		})
		if err != nil {
			t.Fatal(err)
		}
		rows := starts(t, db, wakeID)
		if len(rows) != 2 {
			t.Fatalf("%d wake-ups, want 2: the second transaction's savepoint rolled back with its own, and its later event woke the endpoint again", len(rows))
		}
		w := rows[1]
		if w.SignalName != names.SignalWebhookWake || w.WorkflowType != "" || w.OrgID != orgID || w.Kind != names.KindWebhookEndpoint ||
			w.RequestID != "req-1" || w.TaskQueue != names.TaskQueue {
			t.Fatalf("wake-up row %+v", w)
		}
		if len(recorded) == 0 || recorded[0] != orgID {
			t.Fatalf("the on-record hook saw %v", recorded)
		}
		var deliveries int64
		db.Model(&models.WebhookDelivery{}).Where("endpoint_id = ?", endpointID).Count(&deliveries)
		if deliveries != 4 {
			t.Fatalf("%d deliveries, want 4 (the rolled-back event's undone)", deliveries)
		}
	})
}

// A start is recorded once per workflow ID; the second is ErrDuplicate and
// writes nothing.
func TestStartIsRecordedOncePerWorkflowID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		s := record.Start{WorkflowID: names.OrgSyncID("o", "1"), Workflow: names.OrgSyncWorkflow, Input: map[string]string{"orgId": "o"},
			OrgID: "o", Kind: names.KindOrgSync}
		for i, want := range []error{nil, record.ErrDuplicate} {
			err := record.Transact(t.Context(), db, func(tx *record.Tx) error { return tx.Start(s) })
			if !errors.Is(err, want) {
				t.Fatalf("start %d: %v, want %v", i, err, want)
			}
		}
		if rows := starts(t, db, s.WorkflowID); len(rows) != 1 || rows[0].Input != `{"orgId":"o"}` || rows[0].Status != models.StartPending {
			t.Fatalf("rows %+v", rows)
		}
	})
}
