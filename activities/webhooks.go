package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
)

// Webhooks delivers organizations' events to their endpoints, signed as
// Standard Webhooks (standardwebhooks.com).
type Webhooks struct {
	DB *gorm.DB
	// Egress decides which endpoints may be reached: public addresses,
	// checked on every connection after DNS resolution, and the hosts of
	// SUITE_WEBHOOK_ALLOW_HOSTS.
	Egress netguard.Policy
	// Now is the clock (tests move it); time.Now when nil.
	Now func() time.Time
	// Metrics counts the attempts (nil: not counted).
	Metrics *WebhookMetrics

	clientOnce sync.Once
	client     *http.Client
}

// WebhookTimeout bounds one delivery attempt; the workflow's
// DeliverWebhooks batch is bounded by it per delivery, with a heartbeat
// after each.
const WebhookTimeout = 10 * time.Second

// WebhookRetry is the retry schedule of one delivery: the attempt after
// the n-th failure waits min(Initial·2^(n-1), Max); the delivery is given up
// after WebhookGiveUpAfter.
var WebhookRetry = struct{ Initial, Max time.Duration }{Initial: 5 * time.Second, Max: time.Hour}

// WebhookGiveUpAfter is how long a delivery is retried before its
// endpoint is disabled.
const WebhookGiveUpAfter = 72 * time.Hour

// WebhookBatch is the next deliveries of an endpoint, in order.
type WebhookBatch struct {
	// Status is the endpoint's: enabled, disabled, or "" when it is gone.
	Status      string   `json:"status"`
	DeliveryIDs []string `json:"deliveryIds"`
}

// WebhookBatchSize is how many deliveries one NextWebhookDeliveries reads,
// and so the most one DeliverWebhooks makes. Each batch costs the workflow
// a round through Temporal (a workflow task, an activity and its
// completion, about 10 ms of the embedded server's CPU); 500 rather than
// 100 took a queue of 20,000 from 15–18 s to 11 s (docs/decisions.md,
// "Outbound webhooks").
const WebhookBatchSize = 500

// NextWebhookDeliveries reads the next pending deliveries of endpointID,
// oldest first, and the endpoint's status: none for a disabled endpoint.
func (a *Webhooks) NextWebhookDeliveries(ctx context.Context, endpointID string) (WebhookBatch, error) {
	db := a.DB.WithContext(ctx)
	var e models.WebhookEndpoint
	if err := db.Select("id", "status").Take(&e, "id = ?", endpointID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return WebhookBatch{}, nil
	} else if err != nil {
		return WebhookBatch{}, err
	}
	b := WebhookBatch{Status: e.Status}
	if e.Status != models.WebhookEnabled {
		return b, nil
	}
	err := db.Model(&models.WebhookDelivery{}).Where("endpoint_id = ? AND status = ?", endpointID, models.DeliveryPending).
		Order("seq").Limit(WebhookBatchSize).Pluck("id", &b.DeliveryIDs).Error
	return b, err
}

// DeliveryOutcome is what became of a delivery.
type DeliveryOutcome string

// Delivery outcomes.
const (
	// DeliveryDone: the endpoint answered 2xx (now or before), or the
	// delivery is no longer pending.
	DeliveryDone DeliveryOutcome = "done"
	// DeliverySkipped: the endpoint is disabled or gone; the delivery
	// stays pending until it is enabled again.
	DeliverySkipped DeliveryOutcome = "skipped"
	// DeliveryGone: the endpoint answered 410 Gone and is now disabled.
	DeliveryGone DeliveryOutcome = "gone"
	// DeliveryProgress: a delivery failed (its attempt recorded) after
	// others of the batch went out. The workflow reads the queue again and
	// starts a batch there, whose retries back off afresh: the backoff and
	// the three days belong to a delivery that keeps failing, not to a
	// batch of 500 with a few failures among them.
	DeliveryProgress DeliveryOutcome = "progress"
)

// DeliverWebhooks delivers an endpoint's deliveries ids, in order, one at
// a time, and stops at the first that is not done: a failure is its error
// when it is the first delivery this attempt tried — the workflow's retry
// policy runs it again, and it resumes there, as a delivery already made
// is not sent again — and DeliveryProgress after others went out; a
// disabled or gone endpoint is its outcome. One activity serves a whole
// batch: an activity per delivery held an endpoint to a few deliveries a
// second. The batch is read once and again once a second (webhookBatch),
// so a delivery costs its request and the one statement that records it.
func (a *Webhooks) DeliverWebhooks(ctx context.Context, ids []string) (DeliveryOutcome, error) {
	b := webhookBatch{db: a.DB.WithContext(ctx), now: a.now}
	if err := b.read(ids); err != nil {
		return "", err
	}
	sent := false
	for i, id := range ids {
		if err := b.refresh(ids[i:]); err != nil {
			return "", err
		}
		d := b.deliveries[id]
		if d == nil {
			continue // no longer pending, or deleted (with its endpoint, or its event by an erasure)
		}
		ev := b.events[d.EventID]
		if ev == nil {
			continue // its event was deleted (an erasure) between the batch's two reads
		}
		e, err := b.endpoint(d.EndpointID)
		if err != nil {
			return "", err
		}
		if e == nil {
			continue // the endpoint was deleted, with its deliveries
		}
		if e.Status != models.WebhookEnabled {
			return DeliverySkipped, nil
		}
		out, err := a.deliver(ctx, d, e, ev)
		if err != nil && sent {
			return DeliveryProgress, nil
		}
		if err != nil || out != DeliveryDone {
			return out, err
		}
		sent = true
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return DeliveryDone, nil
}

// deliver POSTs delivery d's event ev to its endpoint e, signed with its
// secrets, and records the attempt (status code, error, duration, when the
// next attempt is due). Any answer but 2xx and 410 is an error; 410
// disables the endpoint.
func (a *Webhooks) deliver(ctx context.Context, d *models.WebhookDelivery, e *models.WebhookEndpoint, ev *models.WebhookEvent) (DeliveryOutcome, error) {
	now := a.now()
	start := time.Now()
	status, sendErr := a.send(ctx, e, ev, now)
	took := time.Since(start)
	attempt := int(activityAttempt(ctx))
	rec := map[string]any{"attempts": gorm.Expr("attempts + 1"), "last_status": status,
		"last_error": "", "last_duration_ms": took.Milliseconds()}
	switch {
	case sendErr == nil && status >= 200 && status < 300:
		rec["status"], rec["finished_at"], rec["next_attempt_at"] = models.DeliverySucceeded, now, nil
	case sendErr == nil && status == http.StatusGone:
		rec["status"], rec["finished_at"], rec["next_attempt_at"] = models.DeliveryFailed, now, nil
		rec["last_error"] = "410 Gone: the endpoint was disabled"
	default:
		if sendErr != nil {
			rec["last_error"] = models.Truncate(sendErr.Error(), 500)
		} else {
			rec["last_error"] = fmt.Sprintf("answered %d", status)
		}
		next := now.Add(webhookBackoff(attempt))
		rec["next_attempt_at"] = next
	}
	if err := a.DB.WithContext(ctx).Model(&models.WebhookDelivery{}).Where("id = ? AND status = ?", d.ID, models.DeliveryPending).Updates(rec).Error; err != nil {
		return "", err
	}
	switch {
	case rec["status"] == models.DeliverySucceeded:
		a.Metrics.attempt("succeeded")
		return DeliveryDone, nil
	case rec["status"] == models.DeliveryFailed:
		a.Metrics.attempt("gone")
		return DeliveryGone, a.disable(ctx, e, "The endpoint answered 410 Gone.", now)
	}
	a.Metrics.attempt("failed")
	var appErr *temporal.ApplicationError
	if errors.As(sendErr, &appErr) {
		return "", sendErr // its type decides whether it is retried
	}
	if sendErr != nil {
		return "", fmt.Errorf("deliver %s to endpoint %s: %w", ev.Type, e.ID, sendErr)
	}
	return "", fmt.Errorf("deliver %s to endpoint %s: answered %d", ev.Type, e.ID, status)
}

// send POSTs ev to e and reports the status code.
func (a *Webhooks) send(ctx context.Context, e *models.WebhookEndpoint, ev *models.WebhookEvent, now time.Time) (int, error) {
	var sigs []string
	for _, secret := range e.Secrets(now) {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return 0, temporal.NewNonRetryableApplicationError("endpoint "+e.ID+" has an unusable secret", ErrTypeWebhookSecret, err)
		}
		sig, err := wh.Sign(ev.ID, now, []byte(ev.Payload))
		if err != nil {
			return 0, err
		}
		sigs = append(sigs, sig)
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, strings.NewReader(ev.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "BusinessSuite-Webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, ev.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(now.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, strings.Join(sigs, " "))
	resp, err := a.httpClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// GiveUpWebhook records that the endpoint's first pending delivery was
// retried for WebhookGiveUpAfter without success: the delivery fails, the
// endpoint is disabled, and the organization's admins are notified.
func (a *Webhooks) GiveUpWebhook(ctx context.Context, endpointID string) error {
	db := a.DB.WithContext(ctx)
	var d models.WebhookDelivery
	err := db.Where("endpoint_id = ? AND status = ?", endpointID, models.DeliveryPending).Order("seq").Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	now := a.now()
	if err := db.Model(&models.WebhookDelivery{}).Where("id = ? AND status = ?", d.ID, models.DeliveryPending).
		Updates(map[string]any{"status": models.DeliveryFailed, "finished_at": now, "next_attempt_at": nil}).Error; err != nil {
		return err
	}
	var e models.WebhookEndpoint
	if err := db.Take(&e, "id = ?", d.EndpointID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return a.disable(ctx, &e, fmt.Sprintf("Deliveries failed for %s.", WebhookGiveUpAfter), now)
}

// disable disables e for reason and notifies the organization's admins,
// once: an endpoint already disabled is left as it is.
func (a *Webhooks) disable(ctx context.Context, e *models.WebhookEndpoint, reason string, now time.Time) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		res := tx.Model(&models.WebhookEndpoint{}).Where("id = ? AND status = ?", e.ID, models.WebhookEnabled).
			Updates(map[string]any{"status": models.WebhookDisabled, "disabled_reason": reason, "disabled_by": models.DisabledByDelivery,
				"updated_at": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		admins, err := models.ActiveAdminIDs(tx.DB, e.OrgID)
		if err != nil {
			return err
		}
		for _, id := range admins {
			n := models.WebhookDisabledNotice(e, reason, id, now)
			n.ID = models.DerivedID(e.ID, "disabled", now.Format(time.RFC3339Nano), id)
			_, err := tx.Notify(n)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (a *Webhooks) httpClient() *http.Client {
	a.clientOnce.Do(func() {
		a.client = a.Egress.HTTPClient(WebhookTimeout)
		// A webhook is delivered to the URL registered, never elsewhere:
		// a redirect is the endpoint's answer (not 2xx: a failure).
		a.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	})
	return a.client
}

func (a *Webhooks) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return models.Now()
}

// webhookBackoff is the wait after the attempt-th failed attempt.
func webhookBackoff(attempt int) time.Duration {
	d := WebhookRetry.Initial
	for i := 1; i < attempt && d < WebhookRetry.Max; i++ {
		d *= 2
	}
	return min(d, WebhookRetry.Max)
}

// activityAttempt is the attempt number of the running activity (1 when
// called outside one, as tests do).
func activityAttempt(ctx context.Context) int32 {
	if !activity.IsActivity(ctx) {
		return 1
	}
	return activity.GetInfo(ctx).Attempt
}

// WebhookMetrics are the deliveries' counters and the endpoints' states,
// on /metrics of the process that runs the activities.
type WebhookMetrics struct {
	attempts *prometheus.CounterVec
}

// NewWebhookMetrics registers the webhook metrics on reg (nil: none):
// suite_webhook_attempts_total{outcome} counts delivery attempts —
// succeeded, failed (to be retried), gone (410) — and
// suite_webhook_endpoints{status} is read from the database on each
// scrape.
func NewWebhookMetrics(db *gorm.DB, reg prometheus.Registerer) *WebhookMetrics {
	m := &WebhookMetrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "suite_webhook_attempts_total", Help: "Outbound webhook delivery attempts by outcome.",
	}, []string{"outcome"})}
	if reg != nil {
		reg.MustRegister(m.attempts, &endpointStates{db: db, desc: prometheus.NewDesc("suite_webhook_endpoints",
			"Outbound webhook endpoints by status.", []string{"status"}, nil)})
	}
	return m
}

func (m *WebhookMetrics) attempt(outcome string) {
	if m != nil {
		m.attempts.WithLabelValues(outcome).Inc()
	}
}

// endpointStates counts the endpoints by status when scraped.
type endpointStates struct {
	db   *gorm.DB
	desc *prometheus.Desc
}

func (s *endpointStates) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *endpointStates) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var rows []struct {
		Status string
		N      int64
	}
	if err := s.db.WithContext(ctx).Model(&models.WebhookEndpoint{}).Select("status, count(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		ch <- prometheus.NewInvalidMetric(s.desc, err)
		return
	}
	counts := map[string]int64{models.WebhookEnabled: 0, models.WebhookDisabled: 0}
	for _, r := range rows {
		counts[r.Status] = r.N
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(n), status)
	}
}
