package helpdesk_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

type notification struct {
	ID, WorkspaceID, MemberID, Type, Title, Body string
	ResourceType, ResourceID, ReadAt             *string
	Read                                         bool
}

type notificationList struct {
	Data        []notification
	NextCursor  *string
	HasMore     bool
	UnreadCount int64
}

// notifDesk is a workspace with an owner and an agent (users), an hd_ key,
// and another workspace.
type notifDesk struct {
	org, otherOrg           string
	owner, agent, other     *apitest.User
	ownerID, agentID        string
	key                     string
	asAgent, asOwner, asKey map[string]string
}

func newNotifDesk(t *testing.T, e *apitest.Env) *notifDesk {
	t.Helper()
	d := &notifDesk{owner: e.SignUp(apitest.UniqueEmail("owner"))}
	d.org = e.CreateOrg(d.owner, "Bells")
	d.agent = e.AddMember(d.owner, d.org, models.RoleAgent)
	d.key = e.CreateKey(d.owner, d.org, "helpdesk")
	d.other = e.SignUp(apitest.UniqueEmail("other"))
	d.otherOrg = e.CreateOrg(d.other, "Elsewhere")
	d.ownerID, d.agentID = notifMemberID(t, e, d.org, d.owner), notifMemberID(t, e, d.org, d.agent)
	d.asAgent = apitest.HelpdeskUser(d.agent.Token, d.org)
	d.asOwner = apitest.HelpdeskUser(d.owner.Token, d.org)
	d.asKey = apitest.HelpdeskKey(d.key, d.org)
	return d
}

func notifMemberID(t *testing.T, e *apitest.Env, orgID string, u *apitest.User) string {
	t.Helper()
	var m models.Member
	if err := e.DB.Take(&m, "org_id = ? AND user_id = ?", orgID, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// notify stores a notification directly; at is its creation time.
func notify(t *testing.T, e *apitest.Env, orgID, memberID, title string, at time.Time) *models.Notification {
	t.Helper()
	n := &models.Notification{ID: models.NewID(), OrgID: orgID, MemberID: memberID, Type: "ticket_assigned", Title: title,
		Body: "Body of " + title, ResourceType: "ticket", ResourceID: models.NewID(), CreatedAt: at.UTC().Truncate(time.Microsecond)}
	if err := e.DB.Create(n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func (d *notifDesk) list(e *apitest.Env, headers map[string]string, query string) notificationList {
	e.T.Helper()
	var l notificationList
	e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications" + query, Headers: headers}).Expect(200).JSON(&l)
	return l
}

func titles(l notificationList) string {
	var out []string
	for _, n := range l.Data {
		out = append(out, n.Title)
	}
	return strings.Join(out, ",")
}

// pushKeysFor makes the keys a browser would send.
func pushKeysFor(t *testing.T) map[string]string {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()),
		"auth": base64.RawURLEncoding.EncodeToString(auth)}
}

func TestNotificationsListAndRead(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newNotifDesk(t, e)
		base := time.Now().Add(-time.Hour)
		n1 := notify(t, e, d.org, d.agentID, "first", base)
		n2 := notify(t, e, d.org, d.agentID, "second", base.Add(time.Minute))
		notify(t, e, d.org, d.agentID, "third", base.Add(2*time.Minute))
		mine := notify(t, e, d.org, d.ownerID, "owner's", base)
		theirs := notify(t, e, d.otherOrg, notifMemberID(t, e, d.otherOrg, d.other), "elsewhere", base)

		// Newest first, the caller's own only, paginated.
		l := d.list(e, d.asAgent, "")
		if titles(l) != "third,second,first" || l.HasMore || l.NextCursor != nil || l.UnreadCount != 3 {
			t.Fatalf("list: %+v", l)
		}
		if n := l.Data[2]; n.ID != n1.ID || n.WorkspaceID != d.org || n.MemberID != d.agentID || n.Read || n.ReadAt != nil ||
			n.ResourceType == nil || *n.ResourceType != "ticket" || n.ResourceID == nil || *n.ResourceID != n1.ResourceID || n.Body != "Body of first" {
			t.Fatalf("notification: %+v", n)
		}
		page := d.list(e, d.asAgent, "?limit=2")
		if titles(page) != "third,second" || !page.HasMore || page.NextCursor == nil {
			t.Fatalf("page 1: %+v", page)
		}
		page = d.list(e, d.asAgent, "?limit=2&cursor="+*page.NextCursor)
		if titles(page) != "first" || page.HasMore {
			t.Fatalf("page 2: %+v", page)
		}
		if l := d.list(e, d.asOwner, ""); titles(l) != "owner's" || l.UnreadCount != 1 {
			t.Fatalf("owner's list: %+v", l)
		}

		read := func(h map[string]string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/notifications/read", Headers: h, Body: body})
		}
		var res struct{ Updated int64 }
		read(d.asAgent, map[string]any{"id": n2.ID}).Expect(200).JSON(&res)
		if res.Updated != 1 {
			t.Fatalf("read one: %+v", res)
		}
		read(d.asAgent, map[string]any{"id": n2.ID}).Expect(200).JSON(&res)
		if res.Updated != 0 {
			t.Fatalf("read again: %+v", res)
		}
		l = d.list(e, d.asAgent, "?unread=true")
		if titles(l) != "third,first" || l.UnreadCount != 2 {
			t.Fatalf("unread: %+v", l)
		}
		if l := d.list(e, d.asAgent, "?unread=false"); len(l.Data) != 3 || !l.Data[1].Read || l.Data[1].ReadAt == nil {
			t.Fatalf("all after reading one: %+v", l)
		}

		// Another member's, another workspace's, unknown and malformed ids.
		for _, id := range []string{mine.ID, theirs.ID, models.NewID(), "not-an-id"} {
			read(d.asAgent, map[string]any{"id": id}).ExpectProblem(404, "not_found")
		}

		read(d.asAgent, map[string]any{"all": true}).Expect(200).JSON(&res)
		if res.Updated != 2 {
			t.Fatalf("read all: %+v", res)
		}
		if l := d.list(e, d.asAgent, "?unread=true"); len(l.Data) != 0 || l.UnreadCount != 0 {
			t.Fatalf("unread after read all: %+v", l)
		}
		if l := d.list(e, d.asOwner, "?unread=true"); l.UnreadCount != 1 {
			t.Fatalf("read all touched another member: %+v", l)
		}
		var still models.Notification
		if err := e.DB.Take(&still, "id = ?", theirs.ID).Error; err != nil || still.ReadAt != nil {
			t.Fatalf("read all touched another workspace: %+v %v", still, err)
		}

		// Bad bodies: exactly one of id and all: true.
		for _, body := range []any{
			map[string]any{},
			map[string]any{"all": false},
			map[string]any{"id": n1.ID, "all": true},
			map[string]any{"all": "yes"},
			map[string]any{"id": 42},
			map[string]any{"ids": []string{n1.ID}},
		} {
			read(d.asAgent, body).ExpectProblem(422, "validation_failed")
		}
		read(d.asAgent, "{").ExpectProblem(400, "malformed_json")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications?unread=maybe", Headers: d.asAgent}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications?limit=0", Headers: d.asAgent}).ExpectProblem(422, "validation_failed")
	})
}

func TestNotificationsCredentials(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newNotifDesk(t, e)
		n := notify(t, e, d.org, d.agentID, "first", time.Now())
		sub := map[string]any{"endpoint": "https://push.example.com/send/abc", "expirationTime": nil, "keys": pushKeysFor(t)}
		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", "/helpdesk/notifications", nil},
			{"POST", "/helpdesk/notifications/read", map[string]any{"id": n.ID}},
			{"POST", "/helpdesk/notifications/subscribe", sub},
		}
		for _, r := range routes {
			do := func(h map[string]string) *apitest.Response {
				return e.Do(apitest.Request{Method: r.method, Path: r.path, Headers: h, Body: r.body})
			}
			do(nil).ExpectProblem(401, "unauthorized")
			do(apitest.Bearer(d.key)).ExpectProblem(401, "api_key_in_authorization")
			do(apitest.HelpdeskUser(d.key, d.org)).ExpectProblem(401, "api_key_in_authorization")
			do(apitest.Bearer(d.agent.Token)).ExpectProblem(401, "workspace_required")
			do(apitest.HelpdeskUser("not-a-token", d.org)).ExpectProblem(401, "invalid_token")
			// An API key acts for no member: it has no notifications.
			do(d.asKey).ExpectProblem(403, "user_required")
			// A workspace the user is not a member of.
			do(apitest.HelpdeskUser(d.agent.Token, d.otherOrg)).ExpectProblem(404, "not_found")
		}
		// The notification was not marked read by any refused request.
		var got models.Notification
		if err := e.DB.Take(&got, "id = ?", n.ID).Error; err != nil || got.ReadAt != nil {
			t.Fatalf("notification after refused requests: %+v %v", got, err)
		}
	})
}

func TestNotificationsVapidPublicKey(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		var out struct{ PublicKey string }
		r := e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/notifications/vapidPublicKey"}).Expect(200)
		r.JSON(&out)
		var k models.VAPIDKey
		if err := e.DB.Take(&k, "id = ?", models.DefaultVAPIDKeyID).Error; err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(out.PublicKey)
		if out.PublicKey != k.PublicKey || err != nil {
			t.Fatalf("public key %q, stored %q (%v)", out.PublicKey, k.PublicKey, err)
		}
		if _, err := ecdh.P256().NewPublicKey(raw); err != nil {
			t.Fatalf("not a P-256 point: %v", err)
		}
		// The stored pair is the one every process uses: asking again
		// neither generates nor changes it.
		again, err := models.EnsureVAPIDKey(t.Context(), e.DB)
		if err != nil || again.PublicKey != k.PublicKey || again.PrivateKey != k.PrivateKey {
			t.Fatalf("key changed: %+v %v", again, err)
		}
	})
}

func TestNotificationsSubscribe(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newNotifDesk(t, e)
		subscribe := func(h map[string]string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/notifications/subscribe", Headers: h, Body: body})
		}
		type subscription struct{ ID, Endpoint, CreatedAt, UpdatedAt string }
		endpoint := "https://fcm.googleapis.com/fcm/send/" + models.NewID()
		keys := pushKeysFor(t)
		var first, second, third subscription
		subscribe(d.asAgent, map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": keys}).Expect(201).JSON(&first)
		if first.Endpoint != endpoint || first.ID == "" {
			t.Fatalf("created: %+v", first)
		}
		stored := func() models.PushSubscription {
			var s models.PushSubscription
			if err := e.DB.Take(&s, "endpoint = ? AND member_id = ?", endpoint, d.agentID).Error; err != nil {
				t.Fatal(err)
			}
			return s
		}
		if s := stored(); s.MemberID != d.agentID || s.OrgID != d.org || s.P256dh != keys["p256dh"] || s.Auth != keys["auth"] {
			t.Fatalf("stored: %+v", s)
		}

		// The same endpoint again (the browser refreshed its keys): 200.
		fresh := pushKeysFor(t)
		future := float64(time.Now().Add(24 * time.Hour).UnixMilli())
		subscribe(d.asAgent, map[string]any{"endpoint": endpoint, "expirationTime": future, "keys": fresh}).Expect(200).JSON(&second)
		if second.ID != first.ID || second.CreatedAt != first.CreatedAt {
			t.Fatalf("updated: %+v, first %+v", second, first)
		}
		if s := stored(); s.P256dh != fresh["p256dh"] || s.Auth != fresh["auth"] {
			t.Fatalf("keys not refreshed: %+v", s)
		}
		// Another account on that browser registers the same endpoint: a
		// row of its own; the agent's registration stays the agent's.
		subscribe(d.asOwner, map[string]any{"endpoint": endpoint, "keys": fresh}).Expect(201).JSON(&third)
		if s := stored(); third.ID == first.ID || s.ID != first.ID || s.MemberID != d.agentID || s.OrgID != d.org {
			t.Fatalf("the owner took the agent's subscription: %+v %+v", third, s)
		}
		// So does a member of another organization: nothing moves between
		// tenants.
		var theirs subscription
		subscribe(apitest.HelpdeskUser(d.other.Token, d.otherOrg), map[string]any{"endpoint": endpoint, "keys": pushKeysFor(t)}).
			Expect(201).JSON(&theirs)
		if s := stored(); theirs.ID == first.ID || s.OrgID != d.org || s.P256dh != fresh["p256dh"] {
			t.Fatalf("another tenant took the subscription: %+v %+v", theirs, s)
		}
		var count int64
		e.DB.Model(&models.PushSubscription{}).Count(&count)
		if count != 3 {
			t.Fatalf("%d subscriptions, want 3 (one per member)", count)
		}
		// A second browser of the agent.
		subscribe(d.asAgent, map[string]any{"endpoint": endpoint + "-2", "keys": pushKeysFor(t)}).Expect(201)

		bad := func(body map[string]any, field, code string) {
			t.Helper()
			p := subscribe(d.asAgent, body).ExpectProblem(422, "validation_failed")
			for _, f := range p["errors"].([]any) {
				if m := f.(map[string]any); m["field"] == field && m["code"] == code {
					return
				}
			}
			t.Fatalf("no %s error on %s: %v", code, field, p["errors"])
		}
		good := pushKeysFor(t)
		ep := "https://push.example.com/" + models.NewID()
		bad(map[string]any{"endpoint": "http://push.example.com/x", "keys": good}, "endpoint", "https_url")
		bad(map[string]any{"endpoint": "not a url", "keys": good}, "endpoint", "https_url")
		// Push services live on the public internet: nothing internal,
		// by address or by name.
		for _, internal := range []string{"https://127.0.0.1:8443/x", "https://localhost/x", "https://[::1]/x",
			"https://10.0.0.7/x", "https://192.168.1.1/x", "https://169.254.169.254/latest/meta-data", "https://[fd00::1]/x",
			"https://0.0.0.0/x", "https://[::ffff:127.0.0.1]/x"} {
			bad(map[string]any{"endpoint": internal, "keys": good}, "endpoint", "not_public")
		}
		bad(map[string]any{"keys": good}, "endpoint", "required")
		bad(map[string]any{"endpoint": ep}, "keys", "required")
		bad(map[string]any{"endpoint": ep, "keys": map[string]string{"auth": good["auth"]}}, "keys.p256dh", "required")
		bad(map[string]any{"endpoint": ep, "keys": map[string]string{"p256dh": "!!!", "auth": good["auth"]}}, "keys.p256dh", "invalid")
		bad(map[string]any{"endpoint": ep, "keys": map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(make([]byte, 65)), "auth": good["auth"]}}, "keys.p256dh", "invalid")
		bad(map[string]any{"endpoint": ep, "keys": map[string]string{"p256dh": good["p256dh"], "auth": "c2hvcnQ"}}, "keys.auth", "invalid")
		bad(map[string]any{"endpoint": ep, "keys": map[string]string{"p256dh": good["p256dh"], "auth": good["auth"], "extra": "x"}}, "keys", "invalid_type")
		bad(map[string]any{"endpoint": ep, "keys": good, "expirationTime": float64(time.Now().Add(-time.Hour).UnixMilli())}, "expirationTime", "expired")
		bad(map[string]any{"endpoint": ep, "keys": good, "userId": "me"}, "userId", "unknown_field")
		// Several problems are reported together.
		p := subscribe(d.asAgent, map[string]any{"endpoint": "http://x", "keys": map[string]string{"p256dh": "", "auth": ""}}).ExpectProblem(422, "validation_failed")
		if n := len(p["errors"].([]any)); n != 3 {
			t.Fatalf("errors %v, want endpoint, keys.p256dh and keys.auth", p["errors"])
		}
		subscribe(d.asAgent, "[]").ExpectProblem(400, "malformed_json")
		e.DB.Model(&models.PushSubscription{}).Count(&count)
		if count != 4 {
			t.Fatalf("%d subscriptions after refused requests, want 4", count)
		}
	})
}

// pushPeer is a push service that records what reaches it (the payload
// decryption is tested with the activity, in package activities).
type pushPeer struct {
	mu   sync.Mutex
	auth []string
	enc  []string
}

func (p *pushPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	p.enc = append(p.enc, r.Header.Get("Content-Encoding"))
	p.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (p *pushPeer) hits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.auth)
}

// record.Tx.Notify stores the notification and starts its delivery in
// one transaction: the real worker pushes it to the member's browser.
func TestNotificationRecordedAndPushed(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newNotifDesk(t, e)
		peer := &pushPeer{}
		// A push service on loopback, which this Env (WithPushService) is
		// explicitly allowed to reach.
		srv := apitest.StartPushService(t, peer)
		keys := pushKeysFor(t)
		var sub struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/notifications/subscribe", Headers: d.asAgent,
			Body: map[string]any{"endpoint": srv.URL + "/agent", "keys": keys}}).Expect(201).JSON(&sub)
		n := &models.Notification{ID: models.DerivedID("test", d.agentID), OrgID: d.org, MemberID: d.agentID, Type: "customer_reply",
			Title: "Bob replied on #1001", Body: "It is still on fire", ResourceType: "ticket", ResourceID: models.NewID()}
		record := func() {
			t.Helper()
			if err := e.Starter.Transact(t.Context(), func(tx *record.Tx) error { _, err := tx.Notify(n); return err }); err != nil {
				t.Fatal(err)
			}
		}
		record()
		record() // idempotent: the same notification, one delivery

		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var out activities.DeliveryResult
		e.Eventually(func() bool {
			var s models.WorkflowStart
			return e.DB.Take(&s, "workflow_id = ? AND status = ?", names.NotificationDeliveryID(n.ID), models.StartStarted).Error == nil
		}, "the delivery to start")
		if err := e.Temporal.GetWorkflow(ctx, names.NotificationDeliveryID(n.ID), "").Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Sent != 1 || peer.hits() != 1 {
			t.Fatalf("delivery %+v, %d pushes", out, peer.hits())
		}
		var k models.VAPIDKey
		if err := e.DB.Take(&k, "id = ?", models.DefaultVAPIDKeyID).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(peer.auth[0], "vapid t=") || !strings.HasSuffix(peer.auth[0], ", k="+k.PublicKey) || peer.enc[0] != "aes128gcm" {
			t.Fatalf("push headers: %q %q", peer.auth[0], peer.enc[0])
		}
		var starts, stored int64
		e.DB.Model(&models.WorkflowStart{}).Where("workflow_id = ?", names.NotificationDeliveryID(n.ID)).Count(&starts)
		e.DB.Model(&models.Notification{}).Where("id = ?", n.ID).Count(&stored)
		if starts != 1 || stored != 1 {
			t.Fatalf("%d starts, %d notifications, want 1 and 1", starts, stored)
		}
		if l := d.list(e, d.asAgent, ""); len(l.Data) != 1 || l.Data[0].Title != n.Title {
			t.Fatalf("list: %+v", l)
		}
	}, apitest.WithPushService())
}

// Without the test allow-list (as in production) a push service on
// loopback is refused when subscribing, and — for a subscription that got
// into the database anyway, or whose name now resolves inside — when the
// worker connects: the service is never contacted and the subscription is
// deleted.
func TestPushToInternalAddressesIsRefused(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newNotifDesk(t, e)
		peer := &pushPeer{}
		srv := apitest.StartPushService(t, peer)
		keys := pushKeysFor(t)
		p := e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/notifications/subscribe", Headers: d.asAgent,
			Body: map[string]any{"endpoint": srv.URL + "/agent", "keys": keys}}).ExpectProblem(422, "validation_failed")
		if errs := p["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["code"] != "not_public" {
			t.Fatalf("errors %v", errs)
		}
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		now := models.Now()
		subs := []models.PushSubscription{
			{ID: models.NewID(), OrgID: d.org, MemberID: d.agentID, Endpoint: srv.URL + "/by-ip", P256dh: keys["p256dh"], Auth: keys["auth"], CreatedAt: now, UpdatedAt: now},
			{ID: models.NewID(), OrgID: d.org, MemberID: d.agentID, Endpoint: "https://localhost:" + port + "/by-name", P256dh: keys["p256dh"], Auth: keys["auth"], CreatedAt: now, UpdatedAt: now},
		}
		if err := e.DB.Create(&subs).Error; err != nil {
			t.Fatal(err)
		}
		n := &models.Notification{ID: models.NewID(), OrgID: d.org, MemberID: d.agentID, Type: "customer_reply", Title: "Ping", Body: "Pong"}
		if err := e.Starter.Transact(t.Context(), func(tx *record.Tx) error { _, err := tx.Notify(n); return err }); err != nil {
			t.Fatal(err)
		}
		e.Eventually(func() bool {
			var s models.WorkflowStart
			return e.DB.Take(&s, "workflow_id = ? AND status = ?", names.NotificationDeliveryID(n.ID), models.StartStarted).Error == nil
		}, "the delivery to start")
		var out activities.DeliveryResult
		if err := e.Temporal.GetWorkflow(t.Context(), names.NotificationDeliveryID(n.ID), "").Get(t.Context(), &out); err != nil {
			t.Fatal(err)
		}
		var left int64
		e.DB.Model(&models.PushSubscription{}).Where("member_id = ?", d.agentID).Count(&left)
		if out.Refused != 2 || out.Sent != 0 || peer.hits() != 0 || left != 0 {
			t.Fatalf("delivery %+v, %d pushes reached loopback, %d subscriptions left", out, peer.hits(), left)
		}
	})
}
