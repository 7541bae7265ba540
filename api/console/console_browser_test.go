package console_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// TestConsoleInABrowser is billing staff's errand in headless Chromium: an
// account that is not staff is refused; staff sign in, open the failed
// changes, find the one whose payment failed against stripe-mock, read its
// timeline, re-run it after confirming and watch it become applied (the
// page reloads itself, no script); a form posted from the page without the
// CSRF token is refused. With SUITE_SCREENSHOTS set to a directory, the
// change page is saved there as console-change.png (`make screenshots`
// writes docs/console-change.png, the README's picture).
func TestConsoleInABrowser(t *testing.T) {
	ctx, outside := apitest.Chromium(t)
	st := stripetest.Start(t)
	e := apitest.New(t, database.SQLite, apitest.WithBilling(st.Config()), apitest.WithTemporalUI("http://temporal-ui.test"))
	org, c := failedChange(t, e, st, "Acme Browsers")
	staff, member := staffUser(t, e), e.SignUp(apitest.UniqueEmail("member"))

	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var requested []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, ev.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if shown, err := apitest.BrowserStep(ctx, steps...); err != nil {
			t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, shown)
		}
	}
	page := func() string {
		t.Helper()
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + location.search + "\n" + document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	expect := func(what string, says ...string) {
		t.Helper()
		shown := page()
		for _, s := range says {
			if !strings.Contains(shown, s) {
				t.Fatalf("%s: the page does not say %q:\n%s", what, s, shown)
			}
		}
	}
	// signIn submits the sign-in form as u and waits for what the next
	// page shows (the form stays in view until the answer arrives).
	signIn := func(u *apitest.User, then string) {
		t.Helper()
		do("sign in as "+u.Email,
			chromedp.Navigate(e.BaseURL+"/ops/"),
			chromedp.WaitVisible(chromedp.CSS(`#email`)),
			chromedp.SendKeys(chromedp.CSS(`#email`), u.Email),
			chromedp.SendKeys(chromedp.CSS(`#password`), u.Password),
			chromedp.Submit(chromedp.CSS(`#password`)),
			chromedp.WaitVisible(chromedp.CSS(then)))
	}

	// An account that is not staff stays outside.
	signIn(member, `.problem`)
	expect("a member's sign-in", "/ops/sign-in", "This console is for billing staff", "staff_required")

	// Staff: the failed changes, then the one that failed.
	signIn(staff, `.signout`)
	expect("after sign-in", "/ops/changes", "Subscription changes", staff.Email)
	do("open the failed changes",
		chromedp.Click(chromedp.CSS(`header nav a[href="/ops/changes?status=failed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/ops/changes/`+c.ID+`"]`)))
	expect("the failed changes", "/ops/changes?status=failed", "Acme Browsers", "starter", c.LastErrorCode, c.StripeSubscriptionID)
	do("open the change",
		chromedp.Click(chromedp.CSS(`a[href="/ops/changes/`+c.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#rerun`)))
	expect("the failed change", "failed", "Requested", "CreateSubscription", "Stripe webhook invoice.payment_failed", "Run 1 failed")
	links, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[href^="http://temporal-ui.test/namespaces/"]').length`))
	if err != nil || links == 0 {
		t.Fatalf("no Temporal UI links on the change page (%d, %v)", links, err)
	}

	// A form posted without the session's token is refused, and changes nothing.
	do("post a form without the token",
		chromedp.Evaluate[chromedp.Void](`(() => {
			const f = document.createElement("form");
			f.method = "post";
			f.action = "/ops/changes/`+c.ID+`/retry";
			const confirm = document.createElement("input");
			confirm.name = "confirm";
			confirm.value = "yes";
			f.appendChild(confirm);
			document.body.appendChild(f);
			f.submit();
		})()`),
		chromedp.WaitVisible(chromedp.CSS(`.problem`)))
	expect("the forged form", "csrf_failed")
	if n := count(t, e.DB, &models.SubscriptionChangeRetry{}, "change_id = ?", c.ID); n != 0 {
		t.Fatalf("a form without its token re-ran the change (%d retries)", n)
	}

	// Re-run, confirmed; the page reloads itself until the change settles.
	do("ask to re-run",
		chromedp.Navigate(e.BaseURL+"/ops/changes/"+c.ID),
		chromedp.Click(chromedp.CSS(`#rerun`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)))
	expect("the confirmation", "Re-run this change?", "charged twice")
	do("confirm",
		chromedp.Click(chromedp.CSS(`#confirm`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)))
	expect("after the re-run", "Re-run recorded", "Re-run 1 requested")
	// The page reloads itself while the run works; the test loads it
	// again too, so as not to depend on a reload's timing.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(page(), "Run 2 completed") {
		if time.Now().After(deadline) {
			t.Fatalf("the change did not become applied on the page:\n%s", page())
		}
		time.Sleep(time.Second)
		do("load the change again", chromedp.Navigate(e.BaseURL+"/ops/changes/"+c.ID), chromedp.WaitVisible(chromedp.CSS(`#status`)))
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#status`)))
	if err != nil || status != models.ChangeApplied {
		t.Fatalf("status on the page %q (%v)", status, err)
	}
	if dir := os.Getenv("SUITE_SCREENSHOTS"); dir != "" {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "console-change.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The organization and the audit log.
	do("open the organization",
		chromedp.Click(chromedp.CSS(`a[href="/ops/organizations/`+org+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	expect("the organization", "Acme Browsers", "1 used of 5", "SubscriptionChange")
	do("open the audit log", chromedp.Click(chromedp.CSS(`header nav a[href="/ops/audit"]`)), chromedp.WaitVisible(chromedp.CSS(`main table`)))
	expect("the audit log", "billing.change.retry", "done", "not_staff", staff.Email, member.Email)

	// Signed out, the console is closed again.
	do("sign out", chromedp.Click(chromedp.CSS(`.signout button`)), chromedp.WaitVisible(chromedp.CSS(`#email`)))
	do("come back", chromedp.Navigate(e.BaseURL+"/ops/changes"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
	// Every request the pages made went to the suite (no script, no font,
	// no image from elsewhere). Chromium's own services may still try to
	// call out; the stand-in refused them.
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requested {
		// (data: URLs are Chromium's own, the date input's calendar icon.)
		if !strings.HasPrefix(u, e.BaseURL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("a page requested %s, outside the suite", u)
		}
	}
	if seen := outside.Seen(); len(seen) > 0 {
		t.Logf("refused Chromium's own calls to other hosts: %q", seen)
	}
}
