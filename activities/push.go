package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/SherClockHolmes/webpush-go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
)

// Web-push delivery settings.
const (
	// PushTTL is how long, in seconds, a push service keeps a message for
	// a browser that is offline: after a day a notification is stale.
	PushTTL = 24 * 60 * 60
	// maxPushTitle and maxPushBody bound the texts carried in the payload
	// (in characters): a browser shows a line or two anyway, and the full
	// text is in GET /helpdesk/notifications.
	maxPushTitle = 200
	maxPushBody  = 500
	// maxPushPayload keeps the JSON well inside the single 4 KiB record
	// webpush-go encrypts (4096 - 16 tag - 86 header - 1 delimiter).
	maxPushPayload = 3000
	// pushRequestTimeout bounds one request to a push service.
	pushRequestTimeout = 15 * time.Second
)

// VAPID is the application server's identity towards push services
// (RFC 8292): its P-256 key pair, base64url as webpush-go makes them, and a
// contact (mailto: or https: URL) push services can reach the operator at.
type VAPID struct {
	PublicKey  string
	PrivateKey string
	Subject    string
}

// Push delivers notifications to members' browsers by web push (RFC 8030),
// the payload encrypted for each subscription (RFC 8291, aes128gcm) and
// the request signed with the VAPID key.
type Push struct {
	DB    *gorm.DB
	VAPID VAPID
	// Egress decides which push services may be reached: https on the
	// public internet only, checked on every connection after DNS
	// resolution (netguard). Its allow-list is empty in production.
	Egress netguard.Policy

	clientOnce sync.Once
	client     *http.Client
}

// PushPayload is the JSON a service worker receives in its push event.
type PushPayload struct {
	NotificationID string `json:"notificationId"`
	Type           string `json:"type"`
	Title          string `json:"title"`
	Body           string `json:"body"`
	ResourceType   string `json:"resourceType"`
	ResourceID     string `json:"resourceId"`
}

// DeliveryResult counts what happened to the member's subscriptions.
type DeliveryResult struct {
	Subscriptions int `json:"subscriptions"`
	// Sent were accepted by their push service in this attempt;
	// AlreadySent in an earlier attempt of the same activity.
	Sent        int `json:"sent"`
	AlreadySent int `json:"alreadySent"`
	// Removed answered 404 or 410: the browser unsubscribed, so the
	// subscription was deleted.
	Removed int `json:"removed"`
	// Rejected answered another 4xx: the request can never succeed for
	// that subscription; it is logged and skipped.
	Rejected int `json:"rejected"`
	// Refused were not https, or pointed at (or resolved to) an address
	// that is not on the public internet: they are deleted unsent.
	Refused int `json:"refused"`
	// Skipped is set when nothing was pushed on purpose.
	Skipped string `json:"skipped,omitempty"`
}

// Deliver pushes notification notificationID to every push subscription of
// its member. A subscription whose push service answers 404 or 410 is
// deleted; another 4xx is logged and skipped (it cannot succeed). An
// endpoint that is not https, or whose address is not on the public
// internet when the connection is made, is deleted unsent. When a
// push service answers 5xx or 429, or cannot be reached, the others are
// still tried, then the activity fails so that Temporal retries it.
//
// Retries do not push twice to the same browser: the ids of subscriptions
// already served are recorded as heartbeat details, which Temporal hands to
// the next attempt (the SDK flushes them when an attempt fails).
//
// A notification already read, or gone (its member or organization was
// deleted), and a member without subscriptions need nothing: success.
func (a *Push) Deliver(ctx context.Context, notificationID string) (DeliveryResult, error) {
	log := activity.GetLogger(ctx)
	var res DeliveryResult
	db := a.DB.WithContext(ctx)
	var n models.Notification
	if err := db.Take(&n, "id = ?", notificationID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			res.Skipped = "notification_gone"
			return res, nil
		}
		return res, err
	}
	if n.ReadAt != nil {
		res.Skipped = "already_read"
		return res, nil
	}
	var subs []models.PushSubscription
	if err := db.Where("org_id = ? AND member_id = ?", n.OrgID, n.MemberID).Order("created_at, id").Find(&subs).Error; err != nil {
		return res, err
	}
	res.Subscriptions = len(subs)
	if len(subs) == 0 {
		res.Skipped = "no_subscriptions"
		return res, nil
	}
	if a.VAPID.PublicKey == "" || a.VAPID.PrivateKey == "" {
		return res, temporal.NewNonRetryableApplicationError("the worker has no VAPID key to sign web pushes with", ErrTypePushNotConfigured, nil)
	}

	payload, err := pushPayload(&n)
	if err != nil {
		return res, err
	}

	var served []string
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &served); err != nil {
			served = nil // unreadable details: pushing twice beats not pushing
		}
	}
	done := make(map[string]bool, len(served))
	for _, id := range served {
		done[id] = true
	}

	opts := a.options()
	var transient int
	var lastErr error
	for i := range subs {
		s := &subs[i]
		if done[s.ID] {
			res.AlreadySent++
			continue
		}
		if bad := models.CheckPushKeys(s.P256dh, s.Auth); len(bad) > 0 {
			// Nothing can be encrypted for it (the API refuses such keys;
			// this row predates that or was written around it).
			if err := db.Where("id = ? AND p256dh = ? AND auth = ?", s.ID, s.P256dh, s.Auth).Delete(&models.PushSubscription{}).Error; err != nil {
				return res, err
			}
			res.Removed++
			log.Warn("push subscription has unusable keys; deleted", "subscriptionId", s.ID)
			continue
		}
		var status int
		err := netguard.ErrNotHTTPS
		if strings.HasPrefix(s.Endpoint, "https://") { // the API refuses others; rows written around it are not sent
			status, err = a.send(ctx, payload, s, opts)
		}
		switch {
		case errors.Is(err, netguard.ErrNotHTTPS) || errors.Is(err, netguard.ErrForbiddenAddress):
			// Not a push service on the public internet (now: the name
			// may have been re-pointed since it was registered).
			if err := db.Where("id = ? AND endpoint = ?", s.ID, s.Endpoint).Delete(&models.PushSubscription{}).Error; err != nil {
				return res, err
			}
			res.Refused++
			log.Warn("push endpoint is not a public https URL; subscription deleted", "subscriptionId", s.ID, "error", err)
		case err != nil:
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			transient++
			lastErr = err
			log.Warn("push service unreachable; will retry", "subscriptionId", s.ID, "error", err)
		case status >= 200 && status < 300:
			res.Sent++
			served = append(served, s.ID)
			activity.RecordHeartbeat(ctx, served)
		case status == http.StatusNotFound || status == http.StatusGone:
			// The browser unsubscribed or the subscription expired. Delete
			// only the row that was tried: the endpoint may have been
			// re-registered (new keys) meanwhile.
			err := db.Where("id = ? AND p256dh = ? AND auth = ?", s.ID, s.P256dh, s.Auth).Delete(&models.PushSubscription{}).Error
			if err != nil {
				return res, err
			}
			res.Removed++
			log.Info("push subscription expired; deleted", "subscriptionId", s.ID, "status", status)
		case status == http.StatusTooManyRequests || status >= 500:
			transient++
			lastErr = fmt.Errorf("push service answered %d", status)
			log.Warn("push service failed; will retry", "subscriptionId", s.ID, "status", status)
		default:
			res.Rejected++
			log.Error("push service rejected the message; skipping this subscription", "subscriptionId", s.ID, "status", status)
		}
	}
	if transient > 0 {
		return res, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("%d of %d push subscriptions could not be served", transient, len(subs)), ErrTypePushTransient, lastErr)
	}
	return res, nil
}

// pushPayload is the JSON pushed for n, within maxPushPayload bytes: the
// body is shortened further when its characters are wide.
func pushPayload(n *models.Notification) ([]byte, error) {
	p := PushPayload{NotificationID: n.ID, Type: n.Type, Title: truncateRunes(n.Title, maxPushTitle),
		ResourceType: n.ResourceType, ResourceID: n.ResourceID}
	for limit := maxPushBody; ; limit /= 2 {
		p.Body = truncateRunes(n.Body, limit)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // "<" stays one byte, not six
		if err := enc.Encode(p); err != nil {
			return nil, err
		}
		if buf.Len() <= maxPushPayload || limit == 0 {
			return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
		}
	}
}

// send pushes payload to one subscription and returns the push service's
// status; an error means the service could not be reached.
func (a *Push) send(ctx context.Context, payload []byte, s *models.PushSubscription, opts webpush.Options) (int, error) {
	resp, err := webpush.SendNotificationWithContext(ctx, payload,
		&webpush.Subscription{Endpoint: s.Endpoint, Keys: webpush.Keys{P256dh: s.P256dh, Auth: s.Auth}}, &opts)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return resp.StatusCode, nil
}

func (a *Push) options() webpush.Options {
	a.clientOnce.Do(func() { a.client = a.Egress.HTTPClient(pushRequestTimeout) })
	return webpush.Options{
		HTTPClient:      a.client,
		Subscriber:      vapidSubscriber(a.VAPID.Subject),
		TTL:             PushTTL,
		Urgency:         webpush.UrgencyNormal,
		VAPIDPublicKey:  a.VAPID.PublicKey,
		VAPIDPrivateKey: a.VAPID.PrivateKey,
	}
}

// vapidSubscriber adapts a VAPID subject to webpush-go, which prefixes
// "mailto:" to anything that is not an https: URL.
func vapidSubscriber(subject string) string {
	return strings.TrimPrefix(subject, "mailto:")
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
