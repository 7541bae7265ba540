package activities_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// One attempt of a delivery, as the endpoint answers it: recorded on the
// delivery (attempts, status code, error, next attempt), counted on
// /metrics, and — for 410 Gone — the endpoint disabled and its admins
// told; an address off the public internet is never dialled.
func TestDeliverWebhookRecordsEachAttempt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, members := seedOrg(t, db, models.RoleOwner, models.RoleAgent)
		status := http.StatusOK
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("webhook-id") == "" || !strings.HasPrefix(r.Header.Get("webhook-signature"), "v1,") {
				t.Errorf("unsigned delivery: %v", r.Header)
			}
			w.WriteHeader(status)
		}))
		defer srv.Close()
		reg := prometheus.NewRegistry()
		local := netguard.Policy{PlainHTTP: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		a := &activities.Webhooks{DB: db, Egress: local, Metrics: activities.NewWebhookMetrics(db, reg)}
		now := models.Now()
		e := models.WebhookEndpoint{ID: models.NewID(), OrgID: orgID, URL: srv.URL, Events: `["*"]`, Secret: models.NewWebhookSecret(),
			Status: models.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&e).Error; err != nil {
			t.Fatal(err)
		}
		queue := func() *models.WebhookDelivery {
			t.Helper()
			d, err := models.RecordTestEvent(db, &e, models.Now())
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		reread := func(d *models.WebhookDelivery) models.WebhookDelivery {
			t.Helper()
			var got models.WebhookDelivery
			if err := db.Take(&got, "id = ?", d.ID).Error; err != nil {
				t.Fatal(err)
			}
			return got
		}

		ok := queue()
		if out, err := a.DeliverWebhooks(t.Context(), []string{ok.ID}); err != nil || out != activities.DeliveryDone {
			t.Fatalf("2xx: %s, %v", out, err)
		}
		if got := reread(ok); got.Status != models.DeliverySucceeded || got.Attempts != 1 || got.LastStatus != 200 || got.FinishedAt == nil {
			t.Fatalf("succeeded delivery %+v", got)
		}

		status = http.StatusServiceUnavailable
		busy := queue()
		if _, err := a.DeliverWebhooks(t.Context(), []string{busy.ID}); err == nil {
			t.Fatal("a 503 is no success")
		}
		if got := reread(busy); got.Status != models.DeliveryPending || got.LastStatus != 503 || got.NextAttemptAt == nil || got.LastError == "" {
			t.Fatalf("failed attempt %+v", got)
		}

		status = http.StatusGone
		if out, err := a.DeliverWebhooks(t.Context(), []string{busy.ID}); err != nil || out != activities.DeliveryGone {
			t.Fatalf("410: %s, %v", out, err)
		}
		var after models.WebhookEndpoint
		db.Take(&after, "id = ?", e.ID)
		if after.Status != models.WebhookDisabled || after.DisabledBy != models.DisabledByDelivery {
			t.Fatalf("endpoint after 410: %+v", after)
		}
		var told []models.Notification
		db.Where("org_id = ? AND type = ?", orgID, "webhook_disabled").Find(&told)
		if len(told) != 1 || told[0].MemberID != members[0] {
			t.Fatalf("admins told: %+v (owner %s)", told, members[0])
		}
		// Disabled, its deliveries wait.
		waiting := queue()
		if out, err := a.DeliverWebhooks(t.Context(), []string{waiting.ID}); err != nil || out != activities.DeliverySkipped {
			t.Fatalf("disabled: %s, %v", out, err)
		}
		want := `
# HELP suite_webhook_attempts_total Outbound webhook delivery attempts by outcome.
# TYPE suite_webhook_attempts_total counter
suite_webhook_attempts_total{outcome="failed"} 1
suite_webhook_attempts_total{outcome="gone"} 1
suite_webhook_attempts_total{outcome="succeeded"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "suite_webhook_attempts_total"); err != nil {
			t.Fatal(err)
		}
		if n, err := testutil.GatherAndCount(reg, "suite_webhook_endpoints"); err != nil || n != 2 {
			t.Fatalf("endpoint gauges: %d, %v", n, err)
		}

		// A redirect is the endpoint's answer, not followed: a failed
		// attempt, and the address it names is never asked.
		var followed bool
		target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
		defer target.Close()
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", e.ID).Update("status", models.WebhookEnabled)
		redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/internal", http.StatusTemporaryRedirect))
		defer redirect.Close()
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", e.ID).Update("url", redirect.URL)
		moved := queue()
		if _, err := a.DeliverWebhooks(t.Context(), []string{moved.ID}); err == nil || followed {
			t.Fatalf("a redirect: %v, followed %v", err, followed)
		}
		if got := reread(moved); got.LastStatus != http.StatusTemporaryRedirect || got.Status != models.DeliveryPending {
			t.Fatalf("redirected attempt %+v", got)
		}

		// Without the allow-list, loopback is refused at dial time.
		db.Model(&models.WebhookEndpoint{}).Where("id = ?", e.ID).Update("status", models.WebhookEnabled)
		strict := &activities.Webhooks{DB: db}
		refused := queue()
		if _, err := strict.DeliverWebhooks(t.Context(), []string{refused.ID}); err == nil || !strings.Contains(err.Error(), netguard.ErrForbiddenAddress.Error()) {
			t.Fatalf("loopback without the allow-list: %v", err)
		}
	})
}

// A batch reads its deliveries, their events and its endpoint once, and
// then costs one statement a delivery, the one that records it. It reads
// the endpoint and the deliveries still to make again once webhookRecheck
// (a second) has passed on the activity's clock: an endpoint disabled
// during a long batch stops it there, its other deliveries waiting, and a
// delivery deleted meanwhile (its event erased) is not sent. A failure
// after others went out ends the batch as DeliveryProgress, so that the
// workflow's next batch backs off afresh.
func TestDeliverWebhooksReadsABatchOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner)
		var clock atomic.Int64 // the activity's clock, moved by the receiver
		clock.Store(models.Now().UnixNano())
		var (
			mu        sync.Mutex
			received  []string
			onReceive func(n int) int // the answer to the n-th delivery of the batch
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			received = append(received, r.Header.Get("webhook-id"))
			w.WriteHeader(onReceive(len(received)))
		}))
		defer srv.Close()
		expect := func(answer func(n int) int) {
			mu.Lock()
			defer mu.Unlock()
			received, onReceive = nil, answer
		}
		sent := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(received)
		}
		now := models.Now()
		e := models.WebhookEndpoint{ID: models.NewID(), OrgID: orgID, URL: srv.URL, Events: `["*"]`, Secret: models.NewWebhookSecret(),
			Status: models.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&e).Error; err != nil {
			t.Fatal(err)
		}
		queue := func(n int) (ids, events []string) {
			t.Helper()
			for range n {
				d, err := models.RecordTestEvent(db, &e, models.Now())
				if err != nil {
					t.Fatal(err)
				}
				ids, events = append(ids, d.ID), append(events, d.EventID)
			}
			return ids, events
		}
		pending := func(ids []string) (n int64) {
			db.Model(&models.WebhookDelivery{}).Where("id IN ? AND status = ?", ids, models.DeliveryPending).Count(&n)
			return n
		}
		statements := &statementCounter{Interface: db.Logger}
		local := netguard.Policy{PlainHTTP: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		a := &activities.Webhooks{DB: db.Session(&gorm.Session{Logger: statements}), Egress: local,
			Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }}
		secondLater := func() { clock.Add(int64(2 * time.Second)) }

		expect(func(int) int { return http.StatusNoContent })
		ids, events := queue(5)
		if out, err := a.DeliverWebhooks(t.Context(), ids); err != nil || out != activities.DeliveryDone {
			t.Fatalf("a batch of 5: %s, %v", out, err)
		}
		if got := sent(); !slices.Equal(got, events) {
			t.Fatalf("received %q, want the events in order %q", got, events)
		}
		if n := statements.n.Load(); n != 3+5 {
			t.Fatalf("a batch of 5 sent %d statements, want 8: three reads and a record for each delivery", n)
		}

		// The second delivery's event erased while the first is made, a
		// second before the next: it is not sent, the third is.
		ids, events = queue(3)
		expect(func(n int) int {
			if n == 1 {
				if err := db.Where("id = ?", ids[1]).Delete(&models.WebhookDelivery{}).Error; err != nil {
					t.Error(err)
				}
				if err := db.Where("id = ?", events[1]).Delete(&models.WebhookEvent{}).Error; err != nil {
					t.Error(err)
				}
				secondLater()
			}
			return http.StatusNoContent
		})
		if out, err := a.DeliverWebhooks(t.Context(), ids); err != nil || out != activities.DeliveryDone {
			t.Fatalf("a delivery erased mid-batch: %s, %v", out, err)
		}
		if got, want := sent(), []string{events[0], events[2]}; !slices.Equal(got, want) {
			t.Fatalf("received %q after the second was erased, want %q", got, want)
		}

		// The second of three fails: the first went out, so the batch ends
		// as progress, the failure recorded and the rest pending.
		ids, events = queue(3)
		expect(func(n int) int {
			if n == 2 {
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		})
		if out, err := a.DeliverWebhooks(t.Context(), ids); err != nil || out != activities.DeliveryProgress {
			t.Fatalf("a failure after a delivery: %s, %v", out, err)
		}
		if got := sent(); !slices.Equal(got, events[:2]) || pending(ids) != 2 {
			t.Fatalf("received %q, %d pending; want the first two sent and two pending", got, pending(ids))
		}
		// Its next batch starts at the failure; failing first, it is an error
		// for the retry policy.
		expect(func(int) int { return http.StatusServiceUnavailable })
		if _, err := a.DeliverWebhooks(t.Context(), ids[1:]); err == nil {
			t.Fatal("a batch whose first delivery fails is an error")
		}

		// Disabled while its first delivery is made, a second before the
		// next: the batch stops there.
		ids, events = queue(3)
		expect(func(n int) int {
			if n == 1 {
				if err := db.Model(&models.WebhookEndpoint{}).Where("id = ?", e.ID).Update("status", models.WebhookDisabled).Error; err != nil {
					t.Error(err)
				}
				secondLater()
			}
			return http.StatusNoContent
		})
		if out, err := a.DeliverWebhooks(t.Context(), ids); err != nil || out != activities.DeliverySkipped {
			t.Fatalf("disabled mid-batch: %s, %v", out, err)
		}
		if got := sent(); !slices.Equal(got, events[:1]) || pending(ids) != 2 {
			t.Fatalf("received %q after the endpoint was disabled, %d pending; want only %q, two pending", got, pending(ids), events[:1])
		}
	})
}

// statementCounter counts the statements a *gorm.DB sends (its logger is
// told of each).
type statementCounter struct {
	logger.Interface
	n atomic.Int64
}

func (c *statementCounter) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	c.n.Add(1)
	c.Interface.Trace(ctx, begin, fc, err)
}
