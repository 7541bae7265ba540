package activities_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"

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
