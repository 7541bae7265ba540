package api_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
)

// TestReferenceInABrowser loads /docs of a started suite in headless
// Chromium, as an integrator would: the viewer renders the document's
// Markdown, the request schema and examples of an operation, the
// problem+json errors and the security schemes, a call can be tried from
// the page, and no request goes anywhere but the suite itself.
func TestReferenceInABrowser(t *testing.T) {
	ctx, outside := apitest.Chromium(t)
	e := apitest.New(t, database.SQLite)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var requests, pageErrors []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			if d.Exception != nil {
				pageErrors = append(pageErrors, "exception: "+d.Text+" "+d.Exception.Description)
			} else {
				pageErrors = append(pageErrors, "exception: "+d.Text)
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				pageErrors = append(pageErrors, "console.error: "+strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				pageErrors = append(pageErrors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}

	const (
		contact = `.opblock-post[id$="_Contacts-createContact"]`
		ticket  = `.opblock-post[id$="_Tickets-createTicket"]`
		healthz = `.opblock-get[id="operations-Operations-healthz"]`
	)
	text := func(sel string) string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return got
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if shown, err := apitest.BrowserStep(ctx, steps...); err != nil {
			mu.Lock()
			reported := append([]string(nil), pageErrors...)
			mu.Unlock()
			t.Fatalf("%s: %v\nthe page reported: %q\nthe page shows:\n%s", what, err, reported, shown)
		}
	}

	// GET / points to the reference.
	do("open /", chromedp.Navigate(e.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(`.swagger-ui .info .description`)))
	landed, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// The introduction's Markdown table is a table.
	introRows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll(".swagger-ui .info .description table tr")].map(
		tr => [...tr.children].map(c => c.tagName + ":" + c.textContent.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	// From 150 tags and operations on, Swagger UI renders only the part of
	// the list in view; a reader narrows it with the filter box, as here.
	filtered := ""
	filter := func(tag string) {
		t.Helper()
		do("filter the operations by "+tag, chromedp.SendKeys(chromedp.CSS(`.swagger-ui .operation-filter-input`),
			strings.Repeat(kb.Backspace, len([]rune(filtered)))+tag),
			chromedp.WaitVisible(chromedp.CSS(`.swagger-ui .opblock-tag[data-tag="`+tag+`"]`)))
		filtered = tag
	}
	// POST /crm/contacts: its request body example and schema, and errors.
	filter("CRM: Contacts")
	do("expand POST /crm/contacts", chromedp.Click(chromedp.CSS(contact+` .opblock-summary-control`)),
		chromedp.WaitVisible(chromedp.CSS(contact+` .opblock-section-request-body`)))
	example := text(contact + ` .opblock-section-request-body .body-param__example`)
	problem := text(contact + ` tr.response[data-code="422"]`)
	do("show the request schema", chromedp.Click(chromedp.CSS(contact+` .opblock-section-request-body button[data-name="model"]`)),
		chromedp.WaitVisible(chromedp.CSS(contact+` .opblock-section-request-body .json-schema-2020-12`)))
	schema := text(contact + ` .opblock-section-request-body .json-schema-2020-12`)
	// The security schemes of each interface, from an operation's lock.
	security := func(op string) string {
		t.Helper()
		do("open the credentials of "+op, chromedp.Click(chromedp.CSS(op+` .authorization__btn`)),
			chromedp.WaitVisible(chromedp.CSS(`.swagger-ui .dialog-ux .modal-ux`)))
		shown := text(`.swagger-ui .dialog-ux .modal-ux`)
		do("close them", chromedp.Click(chromedp.CSS(`.swagger-ui .dialog-ux .close-modal`)),
			chromedp.WaitNotPresent(chromedp.CSS(`.swagger-ui .dialog-ux`)))
		return shown
	}
	crmSecurity := security(contact)
	filter("Helpdesk: Tickets")
	helpdeskSecurity := security(ticket)
	// A call tried from the page reaches the suite.
	filter("Operations")
	do("try GET /healthz", chromedp.Click(chromedp.CSS(healthz+` .opblock-summary-control`)),
		chromedp.Click(chromedp.CSS(healthz+` .try-out__btn`)),
		chromedp.Click(chromedp.CSS(healthz+` .execute`)),
		chromedp.WaitVisible(chromedp.CSS(healthz+` .live-responses-table .response-col_status`)))
	liveCall := text(healthz + ` .live-responses-table`)

	if landed != e.BaseURL+"/docs" {
		t.Errorf("GET / led to %s, want %s/docs", landed, e.BaseURL)
	}
	wantIntro := [][]string{{"TH:interface", "TH:base address"}, {"TD:CRM", "TD:/crm"}}
	if len(introRows) < 2 || strings.Join(introRows[0], "|") != strings.Join(wantIntro[0], "|") ||
		strings.Join(introRows[1], "|") != strings.Join(wantIntro[1], "|") {
		t.Errorf("the introduction's table did not render as a table: %q", introRows)
	}
	for _, field := range []string{"orgId", "name", "email", "phone", "company", "type"} {
		if !strings.Contains(schema, field) {
			t.Errorf("POST /crm/contacts request schema does not show %q:\n%s", field, schema)
		}
	}
	if !strings.Contains(example, `"name": "Ada Lovelace"`) {
		t.Errorf("POST /crm/contacts shows no request example:\n%s", example)
	}
	for _, want := range []string{"application/problem+json", `"code": "validation_failed"`, `"errors"`} {
		if !strings.Contains(problem, want) {
			t.Errorf("the 422 of POST /crm/contacts does not show %s:\n%s", want, problem)
		}
	}
	if !strings.Contains(crmSecurity, "bearerAuth") || strings.Contains(crmSecurity, "x-api-key") {
		t.Errorf("POST /crm/contacts should take a Bearer credential only:\n%s", crmSecurity)
	}
	for _, want := range []string{"x-api-key", "x-workspace-id", "bearerAuth"} {
		if !strings.Contains(helpdeskSecurity, want) {
			t.Errorf("POST /helpdesk/tickets does not show %s:\n%s", want, helpdeskSecurity)
		}
	}
	if !strings.Contains(liveCall, "200") || !strings.Contains(liveCall, `"status": "ok"`) {
		t.Errorf("trying GET /healthz from the page: %s", liveCall)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(requests) == 0 {
		t.Fatal("no network request was recorded")
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, e.BaseURL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the suite (%s)", u, e.BaseURL)
		}
	}
	// Chromium's own services (updates, sign-in) may still try to call out;
	// they are not the page's requests, and the stand-in refused them.
	if seen := outside.Seen(); len(seen) > 0 {
		t.Logf("refused Chromium's own calls to other hosts: %q", seen)
	}
	if len(pageErrors) > 0 {
		t.Errorf("the page reported errors: %q", pageErrors)
	}
}
