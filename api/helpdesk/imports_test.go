package helpdesk_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type transfer struct {
	ID, State, DownloadURL                       string
	Processed, Created, Updated, Skipped, Failed int64
}

// finished waits for the import or export at path to end.
func (d *desk) finished(e *apitest.Env, path string) transfer {
	var got transfer
	e.Eventually(func() bool {
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200).JSON(&got)
		return got.State == models.ImportDone || got.State == models.ImportFailed || got.State == models.ImportCancelled
	}, "%s to finish", path)
	return got
}

// A workspace imports its customers as NDJSON (customers' e-mails are
// unique: a row of a taken e-mail fails), updates them by e-mail from a
// CSV with a custom field, and exports them as NDJSON, the API's JSON.
// The customers of its CRM contacts are linked to them.
func TestImportAndExportCustomers(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newDesk(t, e)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "Carol", "email": "carol@example.com"}}).Expect(201)
		var dan struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: d.owner.Auth(),
			Body: map[string]any{"orgId": d.id, "name": "Dan", "email": "dan@example.com"}}).Expect(201).JSON(&dan)
		ndjson := `{"name": "Ann", "email": "ANN@example.com", "company": "Acme"}` + "\n\n" +
			`{"name": "Carol again", "email": "carol@example.com"}` + "\n" +
			`{"name": {"first": "Seven"}, "email": "seven@example.com"}` + "\n" +
			`{"name": "Bob", "email": "bob@example.com", "shoeSize": "9"}` + "\n" +
			`{"name": "Dan", "email": "dan@example.com", "workspaceId": "x", "contactId": null}`
		var imp, exp transfer
		e.Upload("/helpdesk/imports", d.headers, "customers.ndjson", []byte(ndjson), "object", "customers").Expect(202).JSON(&imp)
		got := d.finished(e, "/helpdesk/imports/"+imp.ID)
		if got.State != models.ImportDone || got.Processed != 5 || got.Created != 2 || got.Failed != 3 {
			t.Fatalf("NDJSON import: %+v", got)
		}
		var linked struct{ Data []struct{ ContactID *string } }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers?q=dan@", Headers: d.headers}).Expect(200).JSON(&linked)
		if len(linked.Data) != 1 || linked.Data[0].ContactID == nil || *linked.Data[0].ContactID != dan.ID {
			t.Fatalf("an imported customer is not linked to the contact of her e-mail: %+v", linked.Data)
		}
		errorsCSV := e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/imports/" + imp.ID + "/errors", Headers: d.headers}).Expect(200).Body
		for _, want := range []string{"3,email,Another customer of this workspace has this e-mail address.", "4,name,A string.", "5,shoeSize,No field shoeSize on customers."} {
			if !strings.Contains(string(errorsCSV), want) {
				t.Fatalf("error file without %q:\n%s", want, errorsCSV)
			}
		}

		// An upsert by e-mail with a custom field: Ann's company changes,
		// Dan is as he was, Eve is new.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + d.id + "/fields", Headers: d.owner.Auth(),
			Body: map[string]any{"object": "customer", "key": "tier", "label": "Tier", "type": "select", "options": []string{"gold", "silver"}}}).Expect(201)
		file := "email,company,tier\nann@example.com,Acme Ltd,gold\ndan@example.com,,\neve@example.com,Evening,silver\n"
		e.Upload("/helpdesk/imports", d.headers, "tiers.csv", []byte(file), "object", "customers", "mode", "upsert", "key", "email",
			"mapping", `{"tier": "fields.tier"}`).Expect(202).JSON(&imp)
		got = d.finished(e, "/helpdesk/imports/"+imp.ID)
		if got.Updated != 1 || got.Skipped != 1 || got.Failed != 1 || got.Created != 0 {
			t.Fatalf("upsert: %+v", got) // Eve has no name: a created customer needs one
		}

		// Tickets, numbered as the workspace's, their requesters customers.
		tickets := "subject,description,requesterEmail,requesterName,status,priority,tags,createdAt\n" +
			"Printer jams,It jams on page 2,ann@example.com,,solved,high,printer;Hardware,2025-03-01T10:00:00Z\n" +
			"New person,Hello,zed@example.com,Zed Q,,,,\n" +
			"No requester,x,,,,,,\n" +
			"Too many tags,x,bob2@example.com,,,,a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q;r;s;t;u,\n"
		e.Upload("/helpdesk/imports", d.headers, "tickets.csv", []byte(tickets), "object", "tickets").Expect(202).JSON(&imp)
		if got := d.finished(e, "/helpdesk/imports/"+imp.ID); got.Created != 2 || got.Failed != 2 {
			t.Fatalf("tickets import: %+v", got)
		}
		var solved struct {
			Data []struct {
				Number     int
				CustomerID *string
				Tags       []string
				SolvedAt   *string
				SLA        any
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets?status=solved", Headers: d.headers}).Expect(200).JSON(&solved)
		var annC struct{ Data []struct{ ID string } }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers?q=ann@", Headers: d.headers}).Expect(200).JSON(&annC)
		if len(solved.Data) != 1 || solved.Data[0].Number < models.FirstTicketNumber || *solved.Data[0].CustomerID != annC.Data[0].ID ||
			fmt.Sprint(solved.Data[0].Tags) != "[printer hardware]" || solved.Data[0].SolvedAt == nil || solved.Data[0].SLA != nil {
			t.Fatalf("imported ticket: %+v", solved.Data)
		}
		after := d.create(e, map[string]any{"subject": "After the import", "email": "zed@example.com"})
		if after.Number != solved.Data[0].Number+2 {
			t.Fatalf("the numbering after an import: #%d after #%d", after.Number, solved.Data[0].Number)
		}

		// Knowledge-base articles: Markdown rendered and indexed, slugs
		// derived and unique, categories the workspace's; exported and
		// imported back as they were.
		var guides struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/knowledge-base/categories", Headers: d.headers,
			Body: map[string]any{"name": "Guides"}}).Expect(201).JSON(&guides)
		articles := "title,slug,body,status,categoryId\n" +
			"Reset your password,,\"# Reset\nClick **Forgot** on the sign-in page.\",published," + guides.ID + "\n" +
			"Again,reset-your-password,x,,\n" +
			"Bad slug,Bad Slug!,x,,\n" +
			"Elsewhere,,x,," + models.NewID() + "\n" +
			"Billing FAQ,,Invoices are sent monthly.,,\n"
		e.Upload("/helpdesk/imports", d.headers, "articles.csv", []byte(articles), "object", "articles").Expect(202).JSON(&imp)
		if got := d.finished(e, "/helpdesk/imports/"+imp.ID); got.Created != 2 || got.Failed != 3 {
			t.Fatalf("articles import: %+v", got)
		}
		var found struct {
			Data []struct{ Slug, Title string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/public/kb/" + d.id + "/search?q=forgot"}).Expect(200).JSON(&found)
		if len(found.Data) != 1 || found.Data[0].Slug != "reset-your-password" {
			t.Fatalf("the imported article is not found by the help center's search: %+v", found)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers, Body: map[string]any{"object": "articles"}}).
			Expect(202).JSON(&exp)
		articlesCSV := e.Do(apitest.Request{Method: "GET", Path: d.finished(e, "/helpdesk/exports/"+exp.ID).DownloadURL, Headers: d.headers}).
			Expect(200).Body
		type article struct {
			Title, Slug, Body, BodyHTML, Status, CategoryID, PublishedAt string
		}
		var before struct{ Data []article }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/knowledge-base/articles", Headers: d.headers}).Expect(200).JSON(&before)
		var ids struct{ Data []struct{ ID string } }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/knowledge-base/articles", Headers: d.headers}).Expect(200).JSON(&ids)
		for _, a := range ids.Data {
			e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/knowledge-base/articles/" + a.ID, Headers: d.headers}).Expect(204)
		}
		e.Upload("/helpdesk/imports", d.headers, "articles-export.csv", articlesCSV, "object", "articles").Expect(202).JSON(&imp)
		if got := d.finished(e, "/helpdesk/imports/"+imp.ID); got.Created != 2 || got.Failed != 0 {
			t.Fatalf("the export imported back: %+v", got)
		}
		var back struct{ Data []article }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/knowledge-base/articles", Headers: d.headers}).Expect(200).JSON(&back)
		for _, list := range [][]article{before.Data, back.Data} {
			slices.SortFunc(list, func(a, b article) int { return strings.Compare(a.Slug, b.Slug) })
		}
		if fmt.Sprintf("%+v", back) != fmt.Sprintf("%+v", before) || len(back.Data) != 2 || !strings.Contains(back.Data[1].BodyHTML, "<strong>Forgot</strong>") {
			t.Fatalf("articles round trip:\nbefore %+v\nafter  %+v", before, back)
		}

		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers,
			Body: map[string]any{"object": "customers", "format": "ndjson", "filters": map[string]string{"fields.tier": "gold"}}}).Expect(202).JSON(&exp)
		done := d.finished(e, "/helpdesk/exports/"+exp.ID)
		body := e.Do(apitest.Request{Method: "GET", Path: done.DownloadURL, Headers: d.headers}).Expect(200).Body
		var ann struct {
			Email, Company string
			Fields         map[string]any
		}
		if err := json.Unmarshal(bytes.TrimSpace(body), &ann); err != nil || done.Processed != 1 || ann.Email != "ann@example.com" ||
			ann.Company != "Acme Ltd" || ann.Fields["tier"] != "gold" {
			t.Fatalf("NDJSON export %+v (%v):\n%s", done, err, body)
		}

		// Refused: another app's object, a filter of no field, a column of none.
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers, Body: map[string]any{"object": "contacts"}}).
			ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers,
			Body: map[string]any{"object": "customers", "filters": map[string]string{"type": "person"}}}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers,
			Body: map[string]any{"object": "customers", "columns": []string{"name", "password"}}}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/imports", Headers: d.asAgent}).ExpectProblem(403, "admin_required")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/exports/" + exp.ID, Headers: d.outsider}).ExpectProblem(404, "not_found")

		// A CSV export neutralizes what a spreadsheet would run.
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers", Headers: d.headers,
			Body: map[string]any{"name": "=1+1", "email": "formula@example.com", "notes": "@SUM(A1)"}}).Expect(201)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/exports", Headers: d.headers,
			Body: map[string]any{"object": "customers", "filters": map[string]string{"q": "formula"}, "columns": []string{"name", "notes"}}}).
			Expect(202).JSON(&exp)
		rows, err := csv.NewReader(bytes.NewReader(e.Do(apitest.Request{Method: "GET", Path: d.finished(e, "/helpdesk/exports/"+exp.ID).DownloadURL,
			Headers: d.headers}).Expect(200).Body)).ReadAll()
		if err != nil || fmt.Sprint(rows) != "[[name notes] ['=1+1 '@SUM(A1)]]" {
			t.Fatalf("CSV export: %v %v", rows, err)
		}
	})
}
