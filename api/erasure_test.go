package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// A person's erasure (GDPR article 17): an OWNER asks, confirms with the
// token, and then nothing in the API finds the person's address — every
// GET route of the suite is called with the ids of an organization that
// held the person everywhere (and with the address as every search
// parameter) — while intake refuses the address and the rest of the
// organization's data stays.
func TestErasureLeavesNothingFindableByTheAddress(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		a := newTenant(t, e, "Tenant A", true)
		// Bob is the tenant's ticket requester and customer; he is also a
		// contact, a lead from the web form, a deal's contact, the sender
		// of an e-mail, and has an export of his data.
		const who = "bob@tenant-a.example"
		crm, hd := apitest.Bearer(a.crmKey), apitest.HelpdeskKey(a.hdKey, a.org)
		owner := a.owner.Auth()
		var contact, deal, intake, export, inbound struct{ ID, IntakeID, State string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: crm, Body: map[string]any{"name": "Bob", "email": who}}).
			Expect(201).JSON(&contact)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: crm,
			Body: map[string]any{"title": "Printers for Bob", "amount": 900, "contactEmail": who}}).Expect(201).JSON(&deal)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": a.crmKey},
			Body: map[string]any{"name": "Bob", "email": who}}).Expect(202).JSON(&intake)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + a.ids["ticket"] + "/comments", Headers: hd,
			Body: map[string]any{"body": "Bob called: the printer is fixed."}}).Expect(201)
		mail := map[string]string{"X-Api-Key": a.hdKey, "X-Workspace-Id": a.org, "Content-Type": "message/rfc822"}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: inboundMessage(who, a.org), Headers: mail}).
			Expect(202).JSON(&inbound)
		var lead models.Lead
		e.Eventually(func() bool { return e.DB.Take(&lead, "org_id = ? AND email = ?", a.org, who).Error == nil }, "Bob's lead")
		e.Eventually(func() bool {
			var m models.InboundEmail
			return e.DB.Take(&m, "id = ? AND ticket_id IS NOT NULL", inbound.ID).Error == nil
		}, "Bob's e-mail's ticket")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + a.org + "/privacy/export", Headers: owner,
			Body: map[string]any{"email": who}}).Expect(202).JSON(&export)
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: "/crm/exports/" + export.ID + "?orgId=" + a.org, Headers: owner}).Expect(200).JSON(&export)
			return export.State == models.ExportDone
		}, "Bob's data's export")
		// The walk below visits Bob's rows.
		a.ids["contact"], a.ids["deal"], a.ids["lead"], a.ids["intake"] = contact.ID, deal.ID, lead.ID, intake.IntakeID
		a.ids["inboundEmail"], a.ids["crmExport"] = inbound.ID, export.ID
		if body := string(e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + a.org + "&q=" + url.QueryEscape(who),
			Headers: owner}).Expect(200).Body); !strings.Contains(body, who) {
			t.Fatalf("before the erasure, the search does not find Bob: %s", body)
		}

		erase := "/crm/organization/" + a.org + "/privacy/erase"
		// The OWNER's alone, and confirmed by the token.
		admin := e.AddMember(a.owner, a.org, models.RoleAdmin)
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: admin.Auth(), Body: map[string]any{"email": who}}).
			ExpectProblem(403, "owner_required")
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: crm, Body: map[string]any{"email": who}}).ExpectProblem(403, "user_required")
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": "not an address"}}).
			ExpectProblem(422, "validation_failed")
		var asked struct {
			ID, State, Token string
			Found            map[string]int64
		}
		r := e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": "Bob@Tenant-A.example"}}).Expect(201)
		r.JSON(&asked)
		if asked.State != models.ErasurePending || !strings.HasPrefix(asked.Token, "erase_") {
			t.Fatalf("asked: %s", r.Body)
		}
		for _, kind := range []string{"contacts", "customers", "leads", "deals", "tickets", "comments", "emails", "attachments"} {
			if asked.Found[kind] == 0 {
				t.Errorf("the request found no %s of Bob's: %v", kind, asked.Found)
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + contact.ID + "?orgId=" + a.org, Headers: owner}).Expect(200)
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": who, "token": "erase_guess"}}).
			ExpectProblem(422, "invalid_confirmation")
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": "ada@tenant-a.example", "token": asked.Token}}).
			ExpectProblem(422, "invalid_confirmation")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + contact.ID + "?orgId=" + a.org, Headers: owner}).Expect(200)

		var done struct {
			ID, State, RequestedBy string
			ConfirmedBy            *string
			Erased                 map[string]int64
		}
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": who, "token": asked.Token}}).
			Expect(202).JSON(&done)
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + a.org + "/privacy/erasures/" + asked.ID, Headers: owner}).
				Expect(200).JSON(&done)
			return done.State == models.ErasureDone
		}, "the erasure")
		for _, kind := range []string{"contacts", "customers", "leads", "tickets", "deals", "emails", "personExports"} {
			if done.Erased[kind] == 0 {
				t.Errorf("the erasure erased no %s: %v", kind, done.Erased)
			}
		}
		var record models.Erasure
		if err := e.DB.Take(&record, "id = ?", asked.ID).Error; err != nil || record.Email != "" || record.TokenHash != "" ||
			done.ConfirmedBy == nil || done.RequestedBy == "" {
			t.Errorf("the erasure's record keeps the address or not who asked: %+v %v", record, err)
		}
		// The token confirms once.
		e.Do(apitest.Request{Method: "POST", Path: erase, Headers: owner, Body: map[string]any{"email": who, "token": asked.Token}}).
			ExpectProblem(422, "invalid_confirmation")

		// Every GET route, as the OWNER (or the AI key), with the address
		// as every search parameter.
		search := url.Values{"orgId": {a.org}, "q": {who}, "email": {who}, "search": {who}, "requester": {who}}.Encode()
		answered := 0
		seen := map[string]bool{}
		for _, route := range e.App.GetRoutes(true) {
			p, ok := tenantProbes["GET "+route.Path]
			if route.Method != "GET" || !ok || p.kind == notTenant || seen[route.Path] {
				continue
			}
			seen[route.Path] = true
			path := route.Path
			for param, kind := range p.params {
				path = strings.Replace(path, ":"+param, a.ids[kind], 1)
			}
			path = strings.Replace(path, ":id", a.org, 1)
			headers := owner
			switch {
			case strings.HasPrefix(path, "/helpdesk"):
				headers = apitest.HelpdeskUser(a.owner.Token, a.org)
			case strings.HasPrefix(path, "/v1/ai"):
				headers = apitest.Bearer(a.aiKey)
			}
			r := e.Do(apitest.Request{Method: "GET", Path: path + "?" + search, Headers: headers})
			if r.Status == 200 {
				answered++
			}
			if body := strings.ToLower(string(r.Body)); strings.Contains(body, "bob@tenant-a") || strings.Contains(body, "bob%40tenant-a") {
				t.Errorf("GET %s still finds Bob (%d): %.300s", path, r.Status, r.Body)
			}
		}
		if answered < 40 {
			t.Errorf("only %d GET routes answered 200: the walk did not reach the data", answered)
		}
		// The file of an export made before, which held Bob, is withdrawn.
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/exports/" + a.ids["hdExport"] + "/file", Headers: hd}).ExpectProblem(410, "export_expired")
		// The rest of the organization stays; the deal, without Bob.
		var ada models.Contact
		if err := e.DB.Take(&ada, "org_id = ? AND email = ?", a.org, "ada@tenant-a.example").Error; err != nil {
			t.Errorf("Ada went with Bob: %v", err)
		}
		var kept models.Deal
		if err := e.DB.Take(&kept, "id = ?", deal.ID).Error; err != nil || kept.ContactEmail != "" || kept.ContactID != nil {
			t.Errorf("the deal: %+v %v", kept, err)
		}

		// Intake refuses Bob: the web form (accepted, then refused and
		// forgotten), the API's tickets, e-mail and imports.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": a.crmKey},
			Body: map[string]any{"name": "Bob again", "email": who}}).Expect(202).JSON(&intake)
		var refused models.LeadIntake
		e.Eventually(func() bool {
			return e.DB.Take(&refused, "id = ? AND status = ?", intake.IntakeID, models.IntakeRefused).Error == nil
		}, "the intake refused")
		if strings.Contains(refused.Payload, "bob") {
			t.Errorf("the refused intake keeps the submission: %s", refused.Payload)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: hd, Body: map[string]any{"subject": "Again", "email": who}}).
			ExpectProblem(422, "address_erased")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: inboundMessage(who, a.org), Headers: mail}).
			Expect(202).JSON(&inbound)
		var m models.InboundEmail
		e.Eventually(func() bool {
			return e.DB.Take(&m, "id = ? AND status = ? AND reason = ?", inbound.ID, models.InboundRejected, "erased_address").Error == nil
		}, "Bob's new e-mail refused")
		if m.MailFrom != "" || len(m.Raw) != 0 || m.TicketID != nil {
			t.Errorf("the refused e-mail is kept: from %q, %d bytes, ticket %v", m.MailFrom, len(m.Raw), m.TicketID)
		}
		var imp struct{ ID, State string }
		e.Upload("/crm/imports?orgId="+a.org, owner, "people.csv", []byte("name,email\nBob,"+who+"\nCy,cy@tenant-a.example\n"),
			"object", "contacts").Expect(202).JSON(&imp)
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: "/crm/imports/" + imp.ID + "?orgId=" + a.org, Headers: owner}).Expect(200).JSON(&imp)
			return imp.State == models.ImportDone
		}, "the import")
		var bobs int64
		e.DB.Model(&models.Contact{}).Where("org_id = ? AND email = ?", a.org, who).Count(&bobs)
		if errs := string(e.Do(apitest.Request{Method: "GET", Path: "/crm/imports/" + imp.ID + "/errors?orgId=" + a.org, Headers: owner}).
			Expect(200).Body); bobs != 0 || !strings.Contains(errs, "erased on request") {
			t.Errorf("the import re-created Bob (%d) or did not say why not: %s", bobs, errs)
		}
		// The team may add Bob again of its own accord (he came back).
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: crm, Body: map[string]any{"name": "Bob", "email": who}}).Expect(201)
	})
}
