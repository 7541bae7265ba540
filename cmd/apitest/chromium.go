package apitest

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests (the API reference's, the staff console's) drive
// Debian's Chromium headless, with nothing leaving the machine.

// chromium finds the browser: $CHROMIUM, else Debian's chromium package
// (which .ci/run installs when missing); without one the test skips.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test skipped: no Chromium found (install Debian's chromium package — " +
		"`apt-get install chromium`, as .ci/run does — or set CHROMIUM to a Chromium or Chrome binary)")
	return ""
}

// OutsideWorld stands in for every address beyond this machine: Chromium
// is told to use it as its proxy (loopback is not proxied), so any request
// to another host ends here and is refused. Nothing leaves the machine
// during the test, even when the page misbehaves; a test still fails on
// such a page by checking Seen.
type OutsideWorld struct {
	ln       net.Listener
	mu       sync.Mutex
	requests []string
}

func newOutsideWorld(t *testing.T) *OutsideWorld {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &OutsideWorld{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				line, _ := bufio.NewReader(conn).ReadString('\n')
				w.mu.Lock()
				w.requests = append(w.requests, strings.TrimSpace(line))
				w.mu.Unlock()
				_, _ = conn.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	return w
}

// Seen lists the request lines that tried to leave the machine.
func (w *OutsideWorld) Seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.requests...)
}

// Chromium starts a headless Chromium for the test (a 1280×1024 window, a
// fresh profile, no sandbox, Google's background services off, every
// other host behind OutsideWorld) and returns its context; it stops when
// the test ends. Without Chromium the test is skipped.
func Chromium(t *testing.T) (context.Context, *OutsideWorld) {
	exe := chromium(t)
	outside := newOutsideWorld(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		// Chromium's own services (sign-in, autofill, optimization hints,
		// updates) would still call Google; OutsideWorld refuses what is left.
		chromedp.Flag("disable-features", "OptimizationHints,OptimizationHintsFetching,OptimizationGuideModelDownloading,"+
			"AutofillServerCommunication,Translate,MediaRouter,DialMediaRouteProvider,CertificateTransparencyComponentUpdater,"+
			"NetworkTimeServiceQuerying,PasswordLeakDetection"),
		chromedp.Flag("allow-browser-signin", "false"),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.ProxyServer("http://"+outside.ln.Addr().String()),
		chromedp.WindowSize(1280, 1024),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The browser starts now, on ctx: started by a step's shorter context,
	// it would end with that step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", exe, err)
	}
	return ctx, outside
}

// BrowserStep runs steps in the browser of ctx, each step given 30
// seconds; when one fails it returns the error and what the page shows
// (its address and the start of its text), for the test's message.
func BrowserStep(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) (shown string, err error) {
	stepCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err = chromedp.Do(stepCtx, steps...); err != nil {
		shown, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2000)`))
	}
	return shown, err
}
