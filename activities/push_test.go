package activities_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/SherClockHolmes/webpush-go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"golang.org/x/crypto/hkdf"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

const testVAPIDSubject = "mailto:ops@example.com"

// browser is one user agent's push subscription: the key pair and auth
// secret the browser keeps (RFC 8291 §2), and the endpoint its push
// service gave it.
type browser struct {
	key  *ecdh.PrivateKey
	auth []byte
	path string
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return &browser{key: key, auth: auth, path: path}
}

// pushService is a push service (RFC 8030) for the tests: it checks the
// VAPID signature (RFC 8292) and decrypts every message (RFC 8291) with the
// browser's private key, then answers with the status set for the path.
type pushService struct {
	t        *testing.T
	srv      *httptest.Server
	vapidKey string // the application server's public key, base64url

	mu       sync.Mutex
	browsers map[string]*browser
	status   map[string]int
	got      map[string][]activities.PushPayload
	hits     map[string]int
}

func newPushService(t *testing.T, vapidPublicKey string) *pushService {
	p := &pushService{t: t, vapidKey: vapidPublicKey, browsers: map[string]*browser{}, status: map[string]int{},
		got: map[string][]activities.PushPayload{}, hits: map[string]int{}}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// egress is the policy that lets the worker reach this push service: its
// loopback address explicitly allowed, its certificate trusted.
func (p *pushService) egress() netguard.Policy {
	pool := x509.NewCertPool()
	pool.AddCert(p.srv.Certificate())
	return netguard.Policy{RootCAs: pool, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
}

// subscribe adds a browser whose endpoint answers status.
func (p *pushService) subscribe(t *testing.T, db *gorm.DB, orgID, memberID, path string, status int) *models.PushSubscription {
	t.Helper()
	b := newBrowser(t, path)
	p.mu.Lock()
	p.browsers[path], p.status[path] = b, status
	p.mu.Unlock()
	now := models.Now()
	s := &models.PushSubscription{ID: models.NewID(), OrgID: orgID, MemberID: memberID, Endpoint: p.srv.URL + path,
		P256dh: base64.RawURLEncoding.EncodeToString(b.key.PublicKey().Bytes()), Auth: base64.RawURLEncoding.EncodeToString(b.auth),
		CreatedAt: now, UpdatedAt: now}
	if err := db.Create(s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *pushService) setStatus(path string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status[path] = status
}

func (p *pushService) received(path string) ([]activities.PushPayload, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]activities.PushPayload(nil), p.got[path]...), p.hits[path]
}

func (p *pushService) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	b, status := p.browsers[r.URL.Path], p.status[r.URL.Path]
	p.hits[r.URL.Path]++
	p.mu.Unlock()
	if b == nil {
		p.t.Errorf("push to unknown endpoint %s", r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		p.t.Errorf("%s %s, want POST", r.Method, r.URL.Path)
	}
	if err := p.checkVAPID(r); err != nil {
		p.t.Errorf("%s: VAPID: %v", r.URL.Path, err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	for h, want := range map[string]string{"Content-Encoding": "aes128gcm", "TTL": "86400", "Urgency": "normal"} {
		if got := r.Header.Get(h); got != want {
			p.t.Errorf("%s: header %s = %q, want %q", r.URL.Path, h, got, want)
		}
	}
	body, _ := io.ReadAll(r.Body)
	plain, err := decrypt(b, body)
	if err != nil {
		p.t.Errorf("%s: decrypt: %v", r.URL.Path, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var msg activities.PushPayload
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&msg); err != nil {
		p.t.Errorf("%s: payload %q: %v", r.URL.Path, plain, err)
	}
	p.mu.Lock()
	p.got[r.URL.Path] = append(p.got[r.URL.Path], msg)
	p.mu.Unlock()
	w.WriteHeader(status)
}

// checkVAPID verifies `Authorization: vapid t=<JWT>, k=<public key>`
// (RFC 8292 §3): k is the application server's key, the JWT is ES256-signed
// by it, its audience is the endpoint's origin, it expires within 24 hours
// and names a contact.
func (p *pushService) checkVAPID(r *http.Request) error {
	scheme, params, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || scheme != "vapid" {
		return fmt.Errorf("authorization %q is not a vapid credential", r.Header.Get("Authorization"))
	}
	var token, k string
	for _, part := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "t":
			token = value
		case "k":
			k = value
		}
	}
	if k != p.vapidKey {
		return fmt.Errorf("k = %q, want the configured public key %q", k, p.vapidKey)
	}
	rawKey, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		return fmt.Errorf("k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), rawKey)
	if err != nil {
		return fmt.Errorf("k: %w", err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("t is not a JWT: %q", token)
	}
	var header struct{ Alg, Typ string }
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "ES256" {
		return fmt.Errorf("JWT header %+v (%v), want alg ES256", header, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return fmt.Errorf("JWT signature is not 64 bytes of r||s (%v)", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("JWT signature does not verify with k")
	}
	var claims struct {
		Aud string
		Exp int64
		Sub string
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	if origin := "https://" + r.Host; claims.Aud != origin {
		return fmt.Errorf("aud = %q, want the endpoint's origin %q", claims.Aud, origin)
	}
	if exp := time.Unix(claims.Exp, 0); !exp.After(time.Now()) || exp.After(time.Now().Add(24*time.Hour)) {
		return fmt.Errorf("exp = %s, want within the next 24 hours", exp)
	}
	if claims.Sub != testVAPIDSubject {
		return fmt.Errorf("sub = %q, want %q", claims.Sub, testVAPIDSubject)
	}
	return nil
}

func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// decrypt opens an aes128gcm message (RFC 8188) encrypted for b by the
// Web Push scheme (RFC 8291 §3.4):
//
//	header  = salt(16) || rs(4) || idlen(1) || keyid = as_public(65)
//	IKM     = HKDF(salt = auth, ikm = ECDH(ua_private, as_public),
//	               info = "WebPush: info\0" || ua_public || as_public, 32)
//	CEK     = HKDF(salt, IKM, "Content-Encoding: aes128gcm\0", 16)
//	NONCE   = HKDF(salt, IKM, "Content-Encoding: nonce\0", 12)
//
// The single record's plaintext ends with the delimiter 0x02 and zero
// padding.
func decrypt(b *browser, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("shorter than the content-coding header")
	}
	salt, rs, idLen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idLen != 65 || len(body) < 21+idLen {
		return nil, fmt.Errorf("keyid is %d bytes, want the 65-byte application server key", idLen)
	}
	asPublicBytes, ciphertext := body[21:21+idLen], body[21+idLen:]
	if uint32(len(ciphertext)) > rs {
		return nil, fmt.Errorf("record of %d bytes exceeds rs %d: want a single record", len(ciphertext), rs)
	}
	asPublic, err := ecdh.P256().NewPublicKey(asPublicBytes)
	if err != nil {
		return nil, fmt.Errorf("as_public: %w", err)
	}
	shared, err := b.key.ECDH(asPublic)
	if err != nil {
		return nil, err
	}
	keyInfo := append(append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...), asPublicBytes...)
	ikm, err := expand(hkdf.Extract(sha256.New, shared, b.auth), keyInfo, 32)
	if err != nil {
		return nil, err
	}
	prk := hkdf.Extract(sha256.New, ikm, salt)
	cek, err := expand(prk, []byte("Content-Encoding: aes128gcm\x00"), 16)
	if err != nil {
		return nil, err
	}
	nonce, err := expand(prk, []byte("Content-Encoding: nonce\x00"), 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("AEAD: %w", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 0x02 {
		return nil, errors.New("the last record does not end with the 0x02 delimiter")
	}
	return plain[:len(plain)-1], nil
}

func expand(prk, info []byte, n int) ([]byte, error) {
	out := make([]byte, n)
	_, err := io.ReadFull(hkdf.Expand(sha256.New, prk, info), out)
	return out, err
}

// pushFixture is an organization with two members, a notification for the
// first, VAPID keys and a push service.
type pushFixture struct {
	db           *gorm.DB
	orgID        string
	member, peer string
	vapid        activities.VAPID
	svc          *pushService
	n            *models.Notification
}

func newPushFixture(t *testing.T, db *gorm.DB) *pushFixture {
	t.Helper()
	orgID, members := seedOrg(t, db, models.RoleOwner, models.RoleAgent)
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	f := &pushFixture{db: db, orgID: orgID, member: members[1], peer: members[0],
		vapid: activities.VAPID{PublicKey: public, PrivateKey: private, Subject: testVAPIDSubject}}
	f.svc = newPushService(t, public)
	f.n = &models.Notification{ID: models.NewID(), OrgID: orgID, MemberID: f.member, Type: "ticket_assigned",
		Title: "Ticket #1001 assigned to you", Body: "Printer on fire — «urgent»", ResourceType: "ticket",
		ResourceID: models.NewID(), CreatedAt: models.Now()}
	if err := db.Create(f.n).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *pushFixture) payload() activities.PushPayload {
	return activities.PushPayload{NotificationID: f.n.ID, Type: f.n.Type, Title: f.n.Title, Body: f.n.Body,
		ResourceType: f.n.ResourceType, ResourceID: f.n.ResourceID}
}

// deliver runs Push.Deliver in an activity environment, starting from
// heartbeat details (as a retried attempt does) when given; it returns the
// result, the heartbeat details the attempt left, and the error.
func (f *pushFixture) deliver(t *testing.T, details []string) (activities.DeliveryResult, []string, error) {
	t.Helper()
	return f.deliverWith(t, details, f.svc.egress())
}

// deliverWith is deliver with another egress policy.
func (f *pushFixture) deliverWith(t *testing.T, details []string, egress netguard.Policy) (activities.DeliveryResult, []string, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Push{DB: f.db, VAPID: f.vapid, Egress: egress})
	if details != nil {
		env.SetHeartbeatDetails(details)
	}
	var mu sync.Mutex
	var last []string
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		var ids []string
		if err := d.Get(&ids); err == nil {
			mu.Lock()
			last = ids
			mu.Unlock()
		}
	})
	var a *activities.Push
	val, err := env.ExecuteActivity(a.Deliver, f.n.ID)
	var out activities.DeliveryResult
	if err == nil {
		if err := val.Get(&out); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return out, last, err
}

func subscriptionExists(t *testing.T, db *gorm.DB, id string) bool {
	t.Helper()
	var n int64
	if err := db.Model(&models.PushSubscription{}).Where("id = ?", id).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestPushDeliverEncryptsSignsAndPrunes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		f.svc.subscribe(t, db, f.orgID, f.member, "/laptop", http.StatusCreated)
		f.svc.subscribe(t, db, f.orgID, f.member, "/phone", http.StatusCreated)
		gone := f.svc.subscribe(t, db, f.orgID, f.member, "/gone", http.StatusGone)
		expired := f.svc.subscribe(t, db, f.orgID, f.member, "/expired", http.StatusNotFound)
		refused := f.svc.subscribe(t, db, f.orgID, f.member, "/refused", http.StatusForbidden)
		f.svc.subscribe(t, db, f.orgID, f.peer, "/someone-else", http.StatusCreated)

		out, _, err := f.deliver(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := activities.DeliveryResult{Subscriptions: 5, Sent: 2, Removed: 2, Rejected: 1}
		if out != want {
			t.Fatalf("result %+v, want %+v", out, want)
		}
		for _, path := range []string{"/laptop", "/phone", "/gone", "/expired", "/refused"} {
			got, hits := f.svc.received(path)
			if hits != 1 || len(got) != 1 || got[0] != f.payload() {
				t.Fatalf("%s received %d pushes %+v, want one %+v", path, hits, got, f.payload())
			}
		}
		if _, hits := f.svc.received("/someone-else"); hits != 0 {
			t.Fatal("another member's browser received the notification")
		}
		if subscriptionExists(t, db, gone.ID) || subscriptionExists(t, db, expired.ID) {
			t.Fatal("a subscription answered 404/410 and was kept")
		}
		if !subscriptionExists(t, db, refused.ID) {
			t.Fatal("a subscription refused with 403 was deleted")
		}
	})
}

// A 5xx fails the attempt so Temporal retries it; the retry (which gets
// the attempt's last heartbeat details) does not push again to the
// browsers already served.
func TestPushDeliverFailsOnServerErrorAndRetriesOnlyTheRest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		ok := f.svc.subscribe(t, db, f.orgID, f.member, "/ok", http.StatusCreated)
		f.svc.subscribe(t, db, f.orgID, f.member, "/flaky", http.StatusInternalServerError)

		_, details, err := f.deliver(t, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypePushTransient || appErr.NonRetryable() {
			t.Fatalf("error %v, want a retryable %s", err, activities.ErrTypePushTransient)
		}
		if len(details) != 1 || details[0] != ok.ID {
			t.Fatalf("heartbeat details %v, want [%s]", details, ok.ID)
		}

		f.svc.setStatus("/flaky", http.StatusCreated)
		out, _, err := f.deliver(t, details)
		if err != nil {
			t.Fatal(err)
		}
		if want := (activities.DeliveryResult{Subscriptions: 2, Sent: 1, AlreadySent: 1}); out != want {
			t.Fatalf("retry result %+v, want %+v", out, want)
		}
		if got, _ := f.svc.received("/ok"); len(got) != 1 {
			t.Fatalf("/ok received %d pushes, want 1", len(got))
		}
		if _, hits := f.svc.received("/flaky"); hits != 2 {
			t.Fatalf("/flaky was tried %d times, want 2", hits)
		}
	})
}

func TestPushDeliverUnreachableServiceIsRetryable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		s := f.svc.subscribe(t, db, f.orgID, f.member, "/down", http.StatusCreated)
		f.svc.srv.Close()
		_, _, err := f.deliver(t, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypePushTransient {
			t.Fatalf("error %v, want %s", err, activities.ErrTypePushTransient)
		}
		if !subscriptionExists(t, db, s.ID) {
			t.Fatal("an unreachable push service removed the subscription")
		}
	})
}

// Push endpoints off the public internet are never contacted: a loopback
// service (here a real one, reachable, its certificate trusted) is refused
// at dial time — also by a name that resolves to it, as a re-pointed DNS
// name would — and so is plain http; those subscriptions are deleted, the
// public ones still served.
func TestPushDeliverRefusesNonPublicEndpointsAtDialTime(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		byIP := f.svc.subscribe(t, db, f.orgID, f.member, "/internal", http.StatusCreated)
		byName := f.svc.subscribe(t, db, f.orgID, f.member, "/rebound", http.StatusCreated)
		u, _ := url.Parse(f.svc.srv.URL)
		db.Model(byName).Update("endpoint", "https://localhost:"+u.Port()+"/rebound")
		plain := f.svc.subscribe(t, db, f.orgID, f.member, "/plain", http.StatusCreated)
		db.Model(plain).Update("endpoint", "http://127.0.0.1:"+u.Port()+"/plain")

		strict := f.svc.egress()
		strict.Allow = nil // production: nothing but the public internet
		out, _, err := f.deliverWith(t, nil, strict)
		if err != nil || out != (activities.DeliveryResult{Subscriptions: 3, Refused: 3}) {
			t.Fatalf("result %+v %v, want 3 refused", out, err)
		}
		for _, path := range []string{"/internal", "/rebound", "/plain"} {
			if _, hits := f.svc.received(path); hits != 0 {
				t.Fatalf("%s was contacted %d times", path, hits)
			}
		}
		for _, s := range []*models.PushSubscription{byIP, byName, plain} {
			if subscriptionExists(t, db, s.ID) {
				t.Fatalf("refused subscription %s kept", s.Endpoint)
			}
		}
	})
}

func TestPushDeliverWithNothingToDo(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		out, _, err := f.deliver(t, nil)
		if err != nil || out != (activities.DeliveryResult{Skipped: "no_subscriptions"}) {
			t.Fatalf("no subscriptions: %+v %v", out, err)
		}

		f.svc.subscribe(t, db, f.orgID, f.member, "/laptop", http.StatusCreated)
		now := models.Now()
		if err := db.Model(f.n).Update("read_at", &now).Error; err != nil {
			t.Fatal(err)
		}
		out, _, err = f.deliver(t, nil)
		if err != nil || out.Skipped != "already_read" {
			t.Fatalf("read notification: %+v %v", out, err)
		}

		if err := db.Delete(f.n).Error; err != nil {
			t.Fatal(err)
		}
		out, _, err = f.deliver(t, nil)
		if err != nil || out.Skipped != "notification_gone" {
			t.Fatalf("deleted notification: %+v %v", out, err)
		}
		if _, hits := f.svc.received("/laptop"); hits != 0 {
			t.Fatal("pushed a notification that needed no push")
		}
	})
}

// Long and wide texts are cut so that the payload fits the one record a
// push message carries; a stored subscription with unusable keys is
// removed rather than retried.
func TestPushDeliverBoundsThePayloadAndDropsUnusableKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newPushFixture(t, db)
		title := strings.Repeat("T", 300)
		body := strings.Repeat("<😀>", 2000)
		if err := db.Model(f.n).Updates(map[string]any{"title": title, "body": body}).Error; err != nil {
			t.Fatal(err)
		}
		f.svc.subscribe(t, db, f.orgID, f.member, "/laptop", http.StatusCreated)
		now := models.Now()
		broken := &models.PushSubscription{ID: models.NewID(), OrgID: f.orgID, MemberID: f.member, Endpoint: f.svc.srv.URL + "/broken",
			P256dh: "bm90IGEga2V5", Auth: "c2hvcnQ", CreatedAt: now, UpdatedAt: now}
		if err := db.Create(broken).Error; err != nil {
			t.Fatal(err)
		}
		out, _, err := f.deliver(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (activities.DeliveryResult{Subscriptions: 2, Sent: 1, Removed: 1}); out != want {
			t.Fatalf("result %+v, want %+v", out, want)
		}
		got, _ := f.svc.received("/laptop")
		if len(got) != 1 {
			t.Fatalf("received %d pushes", len(got))
		}
		p := got[0]
		if []rune(p.Title)[199] != '…' || len([]rune(p.Title)) != 200 || !strings.HasPrefix(p.Title, "TTT") {
			t.Fatalf("title not cut to 200 characters: %q", p.Title)
		}
		if !strings.HasSuffix(p.Body, "…") || !strings.HasPrefix(p.Body, "<😀><😀>") || len([]rune(p.Body)) > 500 {
			t.Fatalf("body not cut: %d characters, %q…", len([]rune(p.Body)), p.Body[:20])
		}
		if subscriptionExists(t, db, broken.ID) {
			t.Fatal("a subscription with unusable keys was kept")
		}
	})
}
