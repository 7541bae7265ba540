package helpdesk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
)

type vapidKeyResponse struct {
	PublicKey string `json:"publicKey"`
}

// vapidPublicKey serves the key a browser passes to
// pushManager.subscribe({applicationServerKey}). Public: the key is.
func (h *handlers) vapidPublicKey(c *fiber.Ctx) error {
	if h.VAPIDPublicKey == "" {
		return models.Err(models.ErrUnavailable, "push_not_configured", "Web push is not configured on this server.")
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return c.JSON(vapidKeyResponse{PublicKey: h.VAPIDPublicKey})
}

type notificationResponse struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	MemberID    string `json:"memberId"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Body        string `json:"body"`
	// ResourceType and ResourceID name what the notification is about
	// (e.g. "ticket" and its id); null when it is about nothing in
	// particular.
	ResourceType *string    `json:"resourceType"`
	ResourceID   *string    `json:"resourceId"`
	Read         bool       `json:"read"`
	ReadAt       *time.Time `json:"readAt"`
	CreatedAt    time.Time  `json:"createdAt"`
}

func toNotification(n *models.Notification) notificationResponse {
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return notificationResponse{ID: n.ID, WorkspaceID: n.OrgID, MemberID: n.MemberID, Type: n.Type, Title: n.Title, Body: n.Body,
		ResourceType: orNull(n.ResourceType), ResourceID: orNull(n.ResourceID), Read: n.ReadAt != nil, ReadAt: n.ReadAt,
		CreatedAt: n.CreatedAt}
}

func notificationCursor(n *models.Notification) web.Cursor {
	return web.Cursor{CreatedAt: n.CreatedAt, ID: n.ID}
}

type notificationPage struct {
	web.Page[notificationResponse]
	// UnreadCount is the member's unread notifications in the workspace,
	// whatever the filter and page (the badge on a bell icon).
	UnreadCount int64 `json:"unreadCount"`
}

// notificationMember is the member whose notifications a request is about:
// the signed-in user's membership. API keys act for no member.
func notificationMember(c *fiber.Ctx) (*auth.Principal, error) {
	p := auth.From(c)
	if err := auth.RequireUser(p); err != nil {
		return nil, err
	}
	return p, nil
}

// listNotifications lists the caller's notifications in the workspace,
// newest first; ?unread=true keeps the unread ones.
func (h *handlers) listNotifications(c *fiber.Ctx) error {
	p, err := notificationMember(c)
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	var unread bool
	switch c.Query("unread") {
	case "", "false":
	case "true":
		unread = true
	default:
		return models.Invalid(models.FieldError{Field: "unread", Code: "invalid", Message: "Must be true or false."})
	}
	db := h.DB.WithContext(c.UserContext())
	mine := func() *gorm.DB {
		return db.Model(&models.Notification{}).Where("org_id = ? AND member_id = ?", p.OrgID, p.MemberID)
	}
	q := mine()
	if unread {
		q = q.Where("read_at IS NULL")
	}
	rows, err := web.Paginate(q, page, notificationCursor)
	if err != nil {
		return err
	}
	out := notificationPage{Page: web.MapPage(rows, toNotification)}
	if err := mine().Where("read_at IS NULL").Count(&out.UnreadCount).Error; err != nil {
		return err
	}
	return web.SendJSON(c, out)
}

type readNotificationsRequest struct {
	ID  *string `json:"id"`
	All *bool   `json:"all"`
}

type readNotificationsResponse struct {
	Updated int64 `json:"updated"`
}

// readNotifications marks one notification ({id}) or all of the caller's
// notifications in the workspace ({all: true}) read, and answers how many
// changed: marking an already read notification again is not an error, it
// updates nothing. Another member's or workspace's notification is a 404.
func (h *handlers) readNotifications(c *fiber.Ctx) error {
	p, err := notificationMember(c)
	if err != nil {
		return err
	}
	var req readNotificationsRequest
	one := func() bool { return req.ID != nil && *req.ID != "" }
	all := func() bool { return req.All != nil && *req.All }
	if err := web.Decode(c, &req, func() error {
		switch {
		case one() && all():
			return models.Invalid(models.FieldError{Field: "all", Code: "excluded_with", Message: "Send either id or all, not both."})
		case req.All != nil && !*req.All && !one():
			return models.Invalid(models.FieldError{Field: "all", Code: "invalid", Message: "Must be true; to mark one notification read, send its id instead."})
		case !one() && !all():
			return models.Invalid(models.FieldError{Field: "id", Code: "required_without", Message: "Send the id of a notification, or all: true to mark every notification read."})
		}
		return nil
	}); err != nil {
		return err
	}
	tx := web.Tx(c)
	mine := tx.Model(&models.Notification{}).Where("org_id = ? AND member_id = ?", p.OrgID, p.MemberID)
	now := models.Now()
	if all() {
		res := mine.Where("read_at IS NULL").Update("read_at", now)
		if res.Error != nil {
			return res.Error
		}
		return c.JSON(readNotificationsResponse{Updated: res.RowsAffected})
	}
	errNotFound := models.NotFound("The notification")
	if !models.ValidID(*req.ID) {
		return errNotFound
	}
	res := mine.Where("id = ? AND read_at IS NULL", *req.ID).Update("read_at", now)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		var n int64
		err := tx.Model(&models.Notification{}).Where("id = ? AND org_id = ? AND member_id = ?", *req.ID, p.OrgID, p.MemberID).Count(&n).Error
		if err != nil {
			return err
		}
		if n == 0 {
			return errNotFound
		}
	}
	return c.JSON(readNotificationsResponse{Updated: res.RowsAffected})
}

// pushKeys are PushSubscription.toJSON().keys.
type pushKeys struct {
	P256dh string `json:"p256dh" validate:"required"`
	Auth   string `json:"auth" validate:"required"`
}

// UnmarshalJSON refuses unknown fields inside keys too (web.Decode checks
// the top level).
func (k *pushKeys) UnmarshalJSON(b []byte) error {
	type plain pushKeys
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(k))
}

// subscribeRequest is the browser's PushSubscription.toJSON().
type subscribeRequest struct {
	Endpoint string `json:"endpoint" validate:"required,max=2048"`
	// ExpirationTime is when the subscription expires (ms since the epoch),
	// or null for never.
	ExpirationTime *float64  `json:"expirationTime"`
	Keys           *pushKeys `json:"keys" validate:"required"`
}

// check validates what the tags cannot: an https endpoint on the public
// internet (never a loopback, private, link-local or otherwise reserved
// address, by IP or by what its name resolves to now — the worker checks
// again on every connection), keys that can encrypt (RFC 8291), an
// expiration not already past.
func (r *subscribeRequest) check(ctx context.Context, egress netguard.Policy, now time.Time) []models.FieldError {
	var bad []models.FieldError
	if r.Endpoint != "" {
		switch err := egress.CheckURL(ctx, r.Endpoint); {
		case errors.Is(err, netguard.ErrNotHTTPS):
			bad = append(bad, models.FieldError{Field: "endpoint", Code: "https_url", Message: "Must be the https URL the browser's push service gave."})
		case err != nil:
			bad = append(bad, models.FieldError{Field: "endpoint", Code: "not_public",
				Message: "Must be a push service on the public internet, not a loopback, private, link-local or otherwise reserved address."})
		}
	}
	if r.ExpirationTime != nil && time.UnixMilli(int64(*r.ExpirationTime)).Before(now) {
		bad = append(bad, models.FieldError{Field: "expirationTime", Code: "expired", Message: "The subscription has already expired; subscribe again."})
	}
	if r.Keys != nil && r.Keys.P256dh != "" && r.Keys.Auth != "" {
		bad = append(bad, models.CheckPushKeys(r.Keys.P256dh, r.Keys.Auth)...)
	}
	return bad
}

type pushSubscriptionResponse struct {
	ID        string    `json:"id"`
	Endpoint  string    `json:"endpoint"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// subscribe registers the browser's push subscription for the caller: 201
// when the caller had not registered the endpoint, 200 when they had (its
// keys are refreshed). Registrations are per member: another member — of
// this workspace or another — registering the same endpoint (two accounts
// on one browser) gets a row of their own; nothing moves between members
// or organizations.
func (h *handlers) subscribe(c *fiber.Ctx) error {
	p, err := notificationMember(c)
	if err != nil {
		return err
	}
	var req subscribeRequest
	now := models.Now()
	if err := web.Decode(c, &req, func() error {
		// The rules the tags do not cover.
		if bad := req.check(c.UserContext(), h.PushEgress, now); len(bad) > 0 {
			return models.Invalid(bad...)
		}
		return nil
	}); err != nil {
		return err
	}

	ua := c.Get(fiber.HeaderUserAgent)
	if len(ua) > 500 {
		ua = ua[:500]
	}
	ua = models.CleanText(ua) // a cut rune, a header that was never UTF-8, control characters
	sub := models.PushSubscription{OrgID: p.OrgID, MemberID: p.MemberID, Endpoint: req.Endpoint, P256dh: req.Keys.P256dh,
		Auth: req.Keys.Auth, UserAgent: strings.Clone(ua), UpdatedAt: now}
	var created bool
	// A savepoint of the request's transaction, so that the retry below
	// runs in a transaction the unique violation has not aborted.
	upsert := func() error {
		return web.Tx(c).Transaction(func(tx *gorm.DB) error {
			var have models.PushSubscription
			err := models.LockForUpdate(tx).Take(&have, "member_id = ? AND endpoint = ?", sub.MemberID, sub.Endpoint).Error
			if errors.Is(err, gorm.ErrRecordNotFound) {
				sub.ID, sub.CreatedAt, created = models.NewID(), now, true
				return tx.Create(&sub).Error
			}
			if err != nil {
				return err
			}
			sub.ID, sub.CreatedAt, created = have.ID, have.CreatedAt, false
			return tx.Model(&models.PushSubscription{}).Where("id = ?", have.ID).Updates(map[string]any{
				"p256dh": sub.P256dh, "auth": sub.Auth, "user_agent": sub.UserAgent, "updated_at": now}).Error
		})
	}
	err = upsert()
	if database.IsUniqueViolation(err) {
		err = upsert() // a concurrent registration of the endpoint by the same member won: update it
	}
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(pushSubscriptionResponse{ID: sub.ID, Endpoint: sub.Endpoint, CreatedAt: sub.CreatedAt, UpdatedAt: sub.UpdatedAt})
}
