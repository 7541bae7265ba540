package crm_test

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

// transfer is an import or an export as the tests read it.
type transfer struct {
	ID, State, ErrorsURL, DownloadURL, Encoding  string
	Total                                        *int64
	Processed, Created, Updated, Skipped, Failed int64
	Percent                                      float64
}

// upload posts an import as o's owner.
func (o *crmOrg) upload(e *apitest.Env, filename string, file []byte, fields map[string]string) *apitest.Response {
	var pairs []string
	for _, k := range []string{"object", "format", "mode", "key", "mapping", "dryRun"} {
		if v, ok := fields[k]; ok {
			pairs = append(pairs, k, v)
		}
	}
	return e.Upload("/crm/imports?orgId="+o.id, o.owner.Auth(), filename, file, pairs...)
}

// finished waits for the import or export at path to end, and answers it.
func (o *crmOrg) finished(e *apitest.Env, path string) transfer {
	var got transfer
	e.Eventually(func() bool {
		e.Do(apitest.Request{Method: "GET", Path: path + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200).JSON(&got)
		return got.State != models.ImportQueued && got.State != models.ImportValidating && got.State != models.ImportRunning
	}, "%s to finish", path)
	return got
}

// A team imports its contacts from a spreadsheet: the good rows become
// contacts (custom fields, Latin-1 and formulas as they were), the bad
// ones fail with their line, column and reason while the rest go on, and
// a re-run as an upsert changes nothing. Their export, imported into a
// fresh organization, gives the same contacts. Bad files are refused
// before anything is stored; another organization sees none of it.
func TestImportAndExportContacts(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		o := newCRMOrg(t, e)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/fields", Headers: o.owner.Auth(),
			Body: map[string]any{"object": "contact", "key": "seats", "label": "Seats", "type": "number"}}).Expect(201)
		file := "Name,E-mail,Company,Seats,Notes\n" +
			"Ada Lovelace,ada@example.com,Analytical,12,\n" +
			"Zo\xeb Ren\xe9e,zoe@example.com,Caf\xe9,3,\"two\nlines\"\n" + // Latin-1, a cell over two lines
			",nobody@example.com,Nameless,1,\n" + // no name
			"Bad Mail,not-an-address,X,2,\n" +
			"Ragged,ragged@example.com\n" +
			"Formula,formula@example.com,=HYPERLINK(\"x\"),4,+1 555\n" +
			"Seats Wrong,seats@example.com,Y,many,\n"
		mapping := `{"E-mail": "email", "Seats": "fields.seats"}`
		var imp transfer
		o.upload(e, "contacts.csv", []byte(file), map[string]string{"object": "contacts", "mapping": mapping}).Expect(202).JSON(&imp)
		done := o.finished(e, "/crm/imports/"+imp.ID)
		if done.State != models.ImportDone || *done.Total != 7 || done.Processed != 7 || done.Created != 3 || done.Failed != 4 ||
			done.Encoding != "latin-1" || done.Percent != 100 || done.ErrorsURL != "/crm/imports/"+imp.ID+"/errors" {
			t.Fatalf("import: %+v", done)
		}
		errorsCSV := e.Do(apitest.Request{Method: "GET", Path: done.ErrorsURL + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200)
		lines, err := csv.NewReader(bytes.NewReader(errorsCSV.Body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{{"line", "column", "reason"}, {"5", "name", "name is required."}, {"6", "email", "Must be a valid e-mail address."},
			{"7", "", "The row has 2 cells; the header has 5."}, {"9", "fields.seats", "A whole number."}}
		if fmt.Sprint(lines) != fmt.Sprint(want) {
			t.Fatalf("error file:\n%s", errorsCSV.Body)
		}
		var page struct {
			Data []struct {
				Name, Email, Company, Notes string
				Fields                      map[string]any
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + o.id + "&fields.seats[gte]=4", Headers: o.owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 2 || page.Data[0].Company != `=HYPERLINK("x")` || page.Data[0].Notes != "+1 555" || page.Data[1].Name != "Ada Lovelace" {
			t.Fatalf("imported contacts: %+v", page.Data)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + o.id + "&q=caf", Headers: o.owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].Name != "Zoë Renée" || page.Data[0].Notes != "two\nlines" || page.Data[0].Fields["seats"] != float64(3) {
			t.Fatalf("Latin-1 contact: %+v", page.Data)
		}

		// The same file again, as an upsert by e-mail: nothing changes.
		o.upload(e, "contacts.csv", []byte(file), map[string]string{"object": "contacts", "mapping": mapping, "mode": "upsert", "key": "email"}).
			Expect(202).JSON(&imp)
		again := o.finished(e, "/crm/imports/"+imp.ID)
		if again.State != models.ImportDone || again.Created != 0 || again.Updated != 0 || again.Skipped != 3 || again.Failed != 4 {
			t.Fatalf("upsert re-run: %+v", again)
		}

		// Export, and import the export into a fresh organization.
		var exp transfer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/exports", Headers: o.owner.Auth(), Body: map[string]any{"orgId": o.id, "object": "contacts"}}).
			Expect(202).JSON(&exp)
		exported := o.finished(e, "/crm/exports/"+exp.ID)
		if exported.State != models.ExportDone || exported.Processed != 3 || exported.DownloadURL != "/crm/exports/"+exp.ID+"/file" {
			t.Fatalf("export: %+v", exported)
		}
		firstFile := e.Do(apitest.Request{Method: "GET", Path: exported.DownloadURL + "?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200).Body
		if !bytes.Contains(firstFile, []byte(`'=HYPERLINK(""x"")`)) || !bytes.Contains(firstFile, []byte("'+1 555")) {
			t.Fatalf("an exported formula is not neutralized:\n%s", firstFile)
		}
		fresh := newCRMOrg(t, e)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + fresh.id + "/fields", Headers: fresh.owner.Auth(),
			Body: map[string]any{"object": "contact", "key": "seats", "label": "Seats", "type": "number"}}).Expect(201)
		fresh.upload(e, "export.csv", firstFile, map[string]string{"object": "contacts"}).Expect(202).JSON(&imp)
		if back := fresh.finished(e, "/crm/imports/"+imp.ID); back.Created != 3 || back.Failed != 0 {
			t.Fatalf("re-import of the export: %+v", back)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/exports", Headers: fresh.owner.Auth(), Body: map[string]any{"orgId": fresh.id, "object": "contacts"}}).
			Expect(202).JSON(&exp)
		secondFile := e.Do(apitest.Request{Method: "GET", Path: fresh.finished(e, "/crm/exports/"+exp.ID).DownloadURL + "?orgId=" + fresh.id,
			Headers: fresh.owner.Auth()}).Expect(200).Body
		if a, b := sameObjects(t, firstFile), sameObjects(t, secondFile); a != b {
			t.Fatalf("an export imported elsewhere is not the same contacts:\n%s\n%s", a, b)
		}

		// Deals: new ones only, each with its first stage in its history,
		// its contact the organization's.
		var ada struct{ Data []struct{ ID string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + o.id + "&q=ada@", Headers: o.owner.Auth()}).Expect(200).JSON(&ada)
		var theirs struct{ Data []struct{ ID string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + fresh.id, Headers: fresh.owner.Auth()}).Expect(200).JSON(&theirs)
		deals := "title,amount,stage,contactId,lostReason,closeDate\n" +
			"Engines,5000,qualified," + ada.Data[0].ID + ",,2027-01-31\n" +
			"Lost one,100,LOST,,,\n" +
			"Bad amount,-3,NEW,,,\n" +
			"Someone else's,10,NEW," + theirs.Data[0].ID + ",,\n" +
			"Won,7,WON,,,\n" +
			"Not a number,NaN,NEW,,,\n" +
			"A NUL\x00,1,NEW,,,\n"
		o.upload(e, "deals.csv", []byte(deals), map[string]string{"object": "deals", "mode": "upsert", "key": "id"}).ExpectProblem(422, "validation_failed")
		var dealImport transfer
		o.upload(e, "deals.csv", []byte(deals), map[string]string{"object": "deals"}).Expect(202).JSON(&dealImport)
		if got := o.finished(e, "/crm/imports/"+dealImport.ID); got.Created != 2 || got.Failed != 5 {
			t.Fatalf("deals import: %+v", got)
		}
		var engines struct {
			Data []struct {
				Stage, ContactID string
				Amount           float64
				History          []struct{ ToStage string }
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals?orgId=" + o.id + "&stage=QUALIFIED", Headers: o.owner.Auth()}).Expect(200).JSON(&engines)
		if len(engines.Data) != 1 || engines.Data[0].ContactID != ada.Data[0].ID || engines.Data[0].Amount != 5000 {
			t.Fatalf("imported deal: %+v", engines.Data)
		}
		var dealExport transfer
		e.Do(apitest.Request{Method: "POST", Path: "/crm/exports", Headers: o.owner.Auth(), Body: map[string]any{"orgId": o.id, "object": "deals",
			"filters": map[string]string{"stage": "WON"}, "columns": []string{"title", "amount", "stage"}}}).Expect(202).JSON(&dealExport)
		won := e.Do(apitest.Request{Method: "GET", Path: o.finished(e, "/crm/exports/"+dealExport.ID).DownloadURL + "?orgId=" + o.id,
			Headers: o.owner.Auth()}).Expect(200).Body
		if string(won) != "title,amount,stage\nWon,7,WON\n" {
			t.Fatalf("deals export: %q", won)
		}

		// Tasks, about a deal of the organization.
		var wonDeal struct{ Data []struct{ ID string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/deals?orgId=" + o.id + "&stage=WON", Headers: o.owner.Auth()}).Expect(200).JSON(&wonDeal)
		tasks := "title,status,dealId,dueDate,priority\n" +
			"Send the invoice,DONE," + wonDeal.Data[0].ID + ",2027-02-01,high\n" +
			"Nobody's deal,OPEN," + theirs.Data[0].ID + ",,\n" +
			"Call back,,,2027-13-01,\n"
		var taskImport transfer
		o.upload(e, "tasks.csv", []byte(tasks), map[string]string{"object": "tasks"}).Expect(202).JSON(&taskImport)
		if got := o.finished(e, "/crm/imports/"+taskImport.ID); got.Created != 1 || got.Failed != 2 {
			t.Fatalf("tasks import: %+v", got)
		}
		var doneTasks struct {
			Data []struct {
				Priority, DealID string
				CompletedAt      *string
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/tasks?orgId=" + o.id + "&status=DONE", Headers: o.owner.Auth()}).Expect(200).JSON(&doneTasks)
		if len(doneTasks.Data) != 1 || doneTasks.Data[0].Priority != "HIGH" || doneTasks.Data[0].DealID != wonDeal.Data[0].ID ||
			doneTasks.Data[0].CompletedAt == nil {
			t.Fatalf("imported task: %+v", doneTasks.Data)
		}

		// Leads, scored; an e-mail a lead has fails.
		leads := "name,email,phone,company,value,status\n" +
			"Grace,grace@leads.example,+14155552671,Navy,50000,qualified\n" +
			"Dup,grace@leads.example,,,,\n" +
			",,,,,\n" +
			"Converted,conv@leads.example,,,,CONVERTED\n"
		var leadImport transfer
		o.upload(e, "leads.csv", []byte(leads), map[string]string{"object": "leads"}).Expect(202).JSON(&leadImport)
		if got := o.finished(e, "/crm/imports/"+leadImport.ID); got.Created != 1 || got.Failed != 2 || got.Skipped != 1 {
			t.Fatalf("leads import: %+v", got)
		}
		var qualified struct {
			Data []struct {
				Name, Source string
				Score        int
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads?orgId=" + o.id + "&status=QUALIFIED", Headers: o.owner.Auth()}).Expect(200).JSON(&qualified)
		if len(qualified.Data) != 1 || qualified.Data[0].Name != "Grace" || qualified.Data[0].Source != "import" || qualified.Data[0].Score == 0 {
			t.Fatalf("imported lead: %+v", qualified.Data)
		}

		// Bad files and bad fields: a 422 that stores nothing.
		var before struct{ Data []transfer }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/imports?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200).JSON(&before)
		for name, c := range map[string]struct {
			file   string
			fields map[string]string
			field  string
		}{
			"unknown field":              {"Name\nA\n", map[string]string{"object": "contacts", "mapping": `{"Name": "nickname"}`}, "mapping.Name"},
			"unknown column":             {"Name,Shoe size\nA,9\n", map[string]string{"object": "contacts"}, "file"},
			"no name column":             {"Email\na@example.com\n", map[string]string{"object": "contacts"}, "file"},
			"wrong object":               {"Name\nA\n", map[string]string{"object": "customers"}, "object"},
			"upsert, no key":             {"Name\nA\n", map[string]string{"object": "contacts", "mode": "upsert"}, "key"},
			"upsert by id, no id column": {"Name\nA\n", map[string]string{"object": "contacts", "mode": "upsert", "key": "id"}, "key"},
			"empty file":                 {"", map[string]string{"object": "contacts"}, "file"},
			"not UTF-8 later":            {"Name\n" + strings.Repeat("a", models.FilePartSize) + "\n\xff\n", map[string]string{"object": "contacts"}, "file"},
		} {
			p := o.upload(e, "x.csv", []byte(c.file), c.fields).ExpectProblem(422, "validation_failed")
			if !strings.Contains(fmt.Sprint(p["errors"]), c.field) {
				t.Errorf("%s: %v", name, p)
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/imports?orgId=" + o.id, Headers: o.owner.Auth(), Body: map[string]any{"object": "contacts"}}).
			ExpectProblem(415, "unsupported_media_type")
		free := newCRMOrg(t, e)
		e.SetPlan(free.id, models.PlanFree)
		big := "Name\n" + strings.Repeat("A name\n", 6<<20/7)
		if p := free.upload(e, "big.csv", []byte(big), map[string]string{"object": "contacts"}).ExpectProblem(413, "payload_too_large"); p["limit"] != float64(5<<20) {
			t.Fatalf("413: %v", p)
		}
		var after struct{ Data []transfer }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/imports?orgId=" + o.id, Headers: o.owner.Auth()}).Expect(200).JSON(&after)
		if len(after.Data) != len(before.Data) {
			t.Fatalf("a refused import was stored: %d, then %d", len(before.Data), len(after.Data))
		}

		// A finished import cannot be cancelled; agents and other
		// organizations see nothing.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/imports/" + imp.ID + "/cancel?orgId=" + fresh.id, Headers: fresh.owner.Auth()}).
			ExpectProblem(409, "import_finished")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/imports?orgId=" + o.id, Headers: o.agentA.Auth()}).ExpectProblem(403, "admin_required")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/imports/" + imp.ID + "?orgId=" + o.id, Headers: o.owner.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/exports/" + exp.ID + "/file?orgId=" + o.id, Headers: o.owner.Auth()}).ExpectProblem(404, "not_found")
	})
}

// sameObjects is an exported CSV's rows without what differs between
// organizations (ids, links, update times), sorted.
func sameObjects(t *testing.T, file []byte) string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(file)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := rows[0]
	var out []string
	for _, row := range rows[1:] {
		var keep []string
		for i, cell := range row {
			if !slices.Contains([]string{"id", "customerId", "updatedAt"}, header[i]) {
				keep = append(keep, header[i]+"="+cell)
			}
		}
		out = append(out, strings.Join(keep, "|"))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// An OWNER exports everything the organization holds about a person, as
// one JSON archive: found from their e-mail (any case), across CRM and
// Helpdesk, and nobody else's.
func TestPersonDataExport(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		maya := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Maya", "email": "maya@orbit.example"}, 201)
		p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Bob", "email": "bob@orbit.example"}, 201)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "title": "Orbit renewal", "amount": 1200, "contactId": maya.ID}}).Expect(201)
		var tk struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
			Body: map[string]any{"subject": "Invoice missing", "email": "maya@orbit.example"}}).Expect(201).JSON(&tk)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: p.hd,
			Body: map[string]any{"body": "Sent again today."}}).Expect(201)

		path := "/crm/organization/" + p.id + "/privacy/export"
		body := map[string]any{"email": "Maya@Orbit.example"}
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: apitest.Bearer(p.key), Body: body}).ExpectProblem(403, "user_required")
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: p.agentA.Auth(), Body: body}).ExpectProblem(403, "owner_required")
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: p.owner.Auth(), Body: map[string]any{"email": "nope"}}).ExpectProblem(422, "validation_failed")
		var exp transfer
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: p.owner.Auth(), Body: body}).Expect(202).JSON(&exp)
		done := p.finished(e, "/crm/exports/"+exp.ID)
		file := e.Do(apitest.Request{Method: "GET", Path: done.DownloadURL + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200)
		var archive struct {
			Email                                         string
			Contacts, Customers, Deals, Tickets, Comments []map[string]any
			CustomerEvents                                []map[string]any
		}
		if err := json.Unmarshal(file.Body, &archive); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/exports/" + exp.ID, Headers: apitest.Bearer(p.key)}).ExpectProblem(404, "not_found")
		var listed struct{ Data []transfer }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/exports", Headers: apitest.Bearer(p.key)}).Expect(200).JSON(&listed)
		if len(listed.Data) != 0 {
			t.Fatalf("a key lists a person's data export: %+v", listed.Data)
		}
		if archive.Email != "maya@orbit.example" || len(archive.Contacts) != 1 || len(archive.Customers) != 1 || len(archive.Deals) != 1 ||
			len(archive.Tickets) != 1 || len(archive.Comments) != 1 || archive.Comments[0]["body"] != "Sent again today." ||
			len(archive.CustomerEvents) == 0 || bytes.Contains(file.Body, []byte("bob@")) || done.Processed < 6 {
			t.Fatalf("archive (%+v):\n%s", done, file.Body)
		}
	})
}
