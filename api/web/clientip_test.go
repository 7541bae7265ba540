package web_test

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models/dbtest"
)

// ipApp answers each request with web.ClientIP, behind proxies.
func ipApp(t *testing.T, proxies ...string) *fiber.App {
	t.Helper()
	p, err := web.ParseProxies(proxies)
	if err != nil {
		t.Fatal(err)
	}
	app := newApp()
	if p.Any() {
		app.Use(p.Middleware())
	}
	app.Get("/ip", func(c *fiber.Ctx) error { return c.SendString(web.ClientIP(c)) })
	return app
}

func clientIP(t *testing.T, app *fiber.App, forwardedFor ...string) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/ip", nil)
	for _, line := range forwardedFor {
		req.Header.Add("X-Forwarded-For", line)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Behind a trusted proxy the client is the rightmost address of
// X-Forwarded-For that is not a trusted proxy: what a client writes left
// of it never counts, so it cannot pick its own rate-limit bucket.
func TestClientIPReadsForwardedForFromTheRight(t *testing.T) {
	peer := clientIP(t, ipApp(t), "203.0.113.9") // no proxies: the peer, header ignored
	if peer == "203.0.113.9" || peer == "" {
		t.Fatalf("without trusted proxies the client is %q", peer)
	}
	app := ipApp(t, peer, "10.0.0.0/8")
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{nil, peer},
		{[]string{"203.0.113.9"}, "203.0.113.9"},
		{[]string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9"},          // a spoofed leftmost entry
		{[]string{"1.2.3.4,203.0.113.9, 10.1.2.3"}, "203.0.113.9"}, // an inner proxy's hop
		{[]string{"1.2.3.4", "203.0.113.9"}, "203.0.113.9"},        // two header lines
		{[]string{"203.0.113.9", "10.1.2.3"}, "203.0.113.9"},
		{[]string{"203.0.113.9, not-an-ip"}, peer},    // garbage: the proxy that sent it
		{[]string{"not-an-ip, 10.1.2.3"}, "10.1.2.3"}, // … or the last trusted hop
		{[]string{"2001:db8::1"}, "2001:db8::1"},
		{[]string{"::ffff:203.0.113.9"}, "203.0.113.9"},
	} {
		if got := clientIP(t, app, c.lines...); got != c.want {
			t.Errorf("X-Forwarded-For %q: client %q, want %q", c.lines, got, c.want)
		}
	}
	// From a peer that is not a trusted proxy the header is the client's
	// own say: ignored.
	if got := clientIP(t, ipApp(t, "10.0.0.0/8"), "203.0.113.9"); got != peer {
		t.Errorf("an untrusted peer's X-Forwarded-For made the client %q, want %q", got, peer)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0"} {
		if _, err := web.ParseProxies([]string{bad}); err == nil {
			t.Errorf("ParseProxies accepted %q", bad)
		}
	}
}

// A client behind the proxy that sends a new X-Forwarded-For with every
// request is still one client to a per-IP limit.
func TestPerIPLimitBehindAProxyIgnoresSpoofedAddresses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		peer := clientIP(t, ipApp(t))
		p, err := web.ParseProxies([]string{peer})
		if err != nil {
			t.Fatal(err)
		}
		app := newApp()
		app.Use(p.Middleware())
		app.Get("/ip", web.RateLimit(db, "spoof", 2, time.Minute, nil), func(c *fiber.Ctx) error {
			return c.SendString(web.ClientIP(c))
		})
		var statuses []int
		for _, spoofed := range []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"} {
			statuses = append(statuses, send(t, app, "GET", "/ip", "", "X-Forwarded-For", spoofed+", 198.51.100.4").status)
		}
		if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
			t.Fatalf("three requests from 198.51.100.4, each claiming another address: %v", statuses)
		}
	})
}
