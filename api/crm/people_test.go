package crm_test

import (
	"slices"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type personContact struct {
	ID, Email  string
	CustomerID *string
}

type personCustomer struct {
	ID, Email string
	ContactID *string
}

// people is an organization's CRM (owner token) and Helpdesk (hd_ key).
type people struct {
	*crmOrg
	hd map[string]string
}

func newPeople(t *testing.T, e *apitest.Env, plan string) *people {
	o := newCRMOrg(t, e)
	e.SetPlan(o.id, plan)
	return &people{crmOrg: o, hd: apitest.HelpdeskKey(e.CreateKey(o.owner, o.id, "helpdesk"), o.id)}
}

func (p *people) contact(e *apitest.Env, method, path string, body map[string]any, status int) personContact {
	var c personContact
	if body != nil {
		body["orgId"] = p.id
	}
	e.Do(apitest.Request{Method: method, Path: path + "?orgId=" + p.id, Headers: p.owner.Auth(), Body: body}).Expect(status).JSON(&c)
	return c
}

func (p *people) customer(e *apitest.Env, method, path string, body map[string]any, status int) personCustomer {
	var c personCustomer
	e.Do(apitest.Request{Method: method, Path: path, Headers: p.hd, Body: body}).Expect(status).JSON(&c)
	return c
}

func is(id *string, want string) bool { return (id == nil && want == "") || (id != nil && *id == want) }

// A contact and a customer of one organization with the same e-mail are
// one person, each carrying the other's id: linked when either is created
// (in any order, by any route: the API, a ticket's requester, a lead's
// conversion), re-linked when an e-mail changes or one is deleted (the
// customer's contact is the oldest of its e-mail), never across
// organizations.
func TestOnePersonAcrossCRMAndHelpdesk(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		for _, plan := range []string{models.PlanBusiness, models.PlanEnterprise} { // a ticket's transaction, its one statement
			p := newPeople(t, e, plan)
			other := newPeople(t, e, plan)

			cust := p.customer(e, "POST", "/helpdesk/customers", map[string]any{"name": "Ada", "email": "Ada@Engines.io"}, 201)
			if cust.ContactID != nil {
				t.Fatalf("a customer with no contact: %+v", cust)
			}
			elsewhere := other.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ada@engines.io"}, 201)
			first := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ADA@engines.io"}, 201)
			second := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada L.", "email": "ada@engines.io"}, 201)
			if !is(first.CustomerID, cust.ID) || !is(second.CustomerID, cust.ID) || elsewhere.CustomerID != nil {
				t.Fatalf("%s: contacts %+v, %+v, in another organization %+v; the customer is %s", plan, first, second, elsewhere, cust.ID)
			}
			if got := p.customer(e, "GET", "/helpdesk/customers/"+cust.ID, nil, 200); !is(got.ContactID, first.ID) {
				t.Fatalf("%s: the customer links %v, want the oldest contact %s", plan, got.ContactID, first.ID)
			}

			// The oldest contact goes: the customer is the next one's.
			e.Do(apitest.Request{Method: "DELETE", Path: "/crm/contacts/" + first.ID + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(204)
			if got := p.customer(e, "GET", "/helpdesk/customers/"+cust.ID, nil, 200); !is(got.ContactID, second.ID) {
				t.Fatalf("%s: after the delete the customer links %v, want %s", plan, got.ContactID, second.ID)
			}
			// The contact takes another address: no longer the customer.
			moved := p.contact(e, "PUT", "/crm/contacts/"+second.ID, map[string]any{"email": "ada@lovelace.example"}, 200)
			if moved.CustomerID != nil {
				t.Fatalf("%s: a re-addressed contact still links %v", plan, *moved.CustomerID)
			}
			if got := p.customer(e, "GET", "/helpdesk/customers/"+cust.ID, nil, 200); got.ContactID != nil {
				t.Fatalf("%s: the customer still links %v", plan, *got.ContactID)
			}
			// The customer follows it there.
			if got := p.customer(e, "PUT", "/helpdesk/customers/"+cust.ID, map[string]any{"email": "Ada@Lovelace.example"}, 200); !is(got.ContactID, second.ID) {
				t.Fatalf("%s: the re-addressed customer links %v, want %s", plan, got.ContactID, second.ID)
			}

			// A contact first, then a ticket from its address: the
			// requester's new customer is the contact.
			bob := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Bob", "email": "bob@engines.io"}, 201)
			var tk struct{ CustomerID *string }
			e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
				Body: map[string]any{"subject": "Engines down", "email": "Bob@engines.io"}}).Expect(201).JSON(&tk)
			if tk.CustomerID == nil {
				t.Fatalf("%s: a ticket without its customer", plan)
			}
			if got := p.customer(e, "GET", "/helpdesk/customers/"+*tk.CustomerID, nil, 200); !is(got.ContactID, bob.ID) {
				t.Fatalf("%s: the requester's customer links %v, want %s", plan, got.ContactID, bob.ID)
			}
			if got := p.contact(e, "GET", "/crm/contacts/"+bob.ID, nil, 200); !is(got.CustomerID, *tk.CustomerID) {
				t.Fatalf("%s: the contact links %v, want the requester's customer %s", plan, got.CustomerID, *tk.CustomerID)
			}

			// A lead converted: its new contact is the customer it already was.
			var lead struct{ ID string }
			e.Do(apitest.Request{Method: "POST", Path: "/crm/leads", Headers: p.owner.Auth(),
				Body: map[string]any{"orgId": p.id, "name": "Cy", "email": "cy@engines.io"}}).Expect(201).JSON(&lead)
			cy := p.customer(e, "POST", "/helpdesk/customers", map[string]any{"name": "Cy", "email": "cy@engines.io"}, 201)
			var converted struct{ Contact struct{ ID string } }
			e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + lead.ID + "/convert", Headers: p.owner.Auth(),
				Body: map[string]any{"orgId": p.id}}).Expect(201).JSON(&converted)
			if got := p.contact(e, "GET", "/crm/contacts/"+converted.Contact.ID, nil, 200); !is(got.CustomerID, cy.ID) {
				t.Fatalf("%s: the converted lead's contact links %v, want %s", plan, got.CustomerID, cy.ID)
			}
			// The customer goes: the contact links nobody.
			e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/customers/" + cy.ID, Headers: p.hd}).Expect(204)
			if got := p.contact(e, "GET", "/crm/contacts/"+converted.Contact.ID, nil, 200); got.CustomerID != nil {
				t.Fatalf("%s: the contact still links the deleted customer %v", plan, *got.CustomerID)
			}
		}
	})
}

type timelinePage struct {
	Data []struct {
		ID, Kind, Actor, Summary, ObjectType, ObjectID string
	}
	NextCursor *string
	HasMore    bool
}

// kinds are a timeline page's kinds, in order.
func (pg timelinePage) kinds() []string {
	var out []string
	for _, i := range pg.Data {
		out = append(out, i.Kind)
	}
	return out
}

// A person's timeline is one list, newest first, from the CRM and the
// Helpdesk alike: the contact's deals (and their moves) and tasks, the
// customer's tickets, comments (internal ones too; a public reply is e-mailed:
// email.sent) and time; it pages by
// cursor; an AGENT sees only the deals and tasks assigned to them; another
// organization sees nothing.
func TestPersonTimeline(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		ada := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ada@engines.io"}, 201)
		var deal struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "title": "Engines", "amount": 5000, "contactId": ada.ID}}).Expect(201).JSON(&deal)
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/deals/" + deal.ID, Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "stage": models.StageMeeting}}).Expect(200)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "title": "Call Ada", "contactId": ada.ID}}).Expect(201)
		var tk struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
			Body: map[string]any{"subject": "Engines down", "email": "ada@engines.io"}}).Expect(201).JSON(&tk)
		for _, public := range []bool{true, false} {
			e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: p.hd,
				Body: map[string]any{"body": "Looking into it", "public": public}}).Expect(201)
		}
		ada = p.contact(e, "GET", "/crm/contacts/"+ada.ID, nil, 200)
		if ada.CustomerID == nil {
			t.Fatal("the ticket's requester is not linked to the contact")
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers/" + *ada.CustomerID + "/time-entries", Headers: p.hd,
			Body: map[string]any{"ticketId": tk.ID, "minutes": 30, "description": "Diagnosis"}}).Expect(201)

		want := []string{"time.logged", "comment.internal", "email.sent", "ticket.created", "task.created", "deal.stage_changed", "deal.created"}
		var crm timelinePage
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ada.ID + "/timeline?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200).JSON(&crm)
		if got := crm.kinds(); !slices.Equal(got, want) {
			t.Fatalf("the contact's timeline: %v, want %v", got, want)
		}
		var hd timelinePage
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers/" + *ada.CustomerID + "/timeline", Headers: p.hd}).Expect(200).JSON(&hd)
		if got := hd.kinds(); !slices.Equal(got, want) {
			t.Fatalf("the customer's timeline: %v, want %v", got, want)
		}
		if s := crm.Data[5]; s.Summary != "Engines: NEW → MEETING" || s.ObjectType != "deal" || s.ObjectID != deal.ID {
			t.Fatalf("the stage change: %+v", s)
		}

		// Pages of three, by cursor: the same items, once each.
		var paged []string
		path := "/crm/contacts/" + ada.ID + "/timeline?orgId=" + p.id + "&limit=3"
		for cursor := ""; ; {
			var pg timelinePage
			e.Do(apitest.Request{Method: "GET", Path: path + cursor, Headers: p.owner.Auth()}).Expect(200).JSON(&pg)
			paged = append(paged, pg.kinds()...)
			if !pg.HasMore {
				break
			}
			cursor = "&cursor=" + *pg.NextCursor
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("paged: %v, want %v", paged, want)
		}

		// An AGENT sees the tickets, not the deal and task of the owner.
		var agent timelinePage
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ada.ID + "/timeline?orgId=" + p.id, Headers: p.agentA.Auth()}).Expect(200).JSON(&agent)
		if got := agent.kinds(); !slices.Equal(got, want[:4]) {
			t.Fatalf("an agent's timeline: %v, want %v", got, want[:4])
		}

		other := newPeople(t, e, models.PlanBusiness)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + ada.ID + "/timeline?orgId=" + other.id, Headers: other.owner.Auth()}).
			ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers/" + *ada.CustomerID + "/timeline", Headers: other.hd}).
			ExpectProblem(404, "not_found")
	})
}

// Merging a duplicate contact into another moves its deals and tasks to
// the survivor, folds in its values where the survivor's are blank
// (custom fields too), deletes it, and answers its id with a 301 to the
// survivor; a duplicate customer's tickets and time move likewise. A merge
// into itself, of another organization's record, or of one in a merge
// under way is refused.
func TestMergeDuplicates(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		var field fieldDef
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + p.id + "/fields", Headers: p.owner.Auth(),
			Body: map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "text"}}).Expect(201).JSON(&field)
		into := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ada@engines.io"}, 201)
		from := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada L.", "email": "ada@engines.io",
			"phone": "+1 415 555 2671", "company": "Engines", "fields": map[string]any{"plan": "gold"}}, 201)
		var deal, task struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/deals", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "title": "Engines", "amount": 5000, "contactId": from.ID}}).Expect(201).JSON(&deal)
		e.Do(apitest.Request{Method: "POST", Path: "/crm/tasks", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "title": "Call Ada", "contactId": from.ID}}).Expect(201).JSON(&task)

		var merge struct{ ID, Status, WorkflowID, FromID, IntoID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts/" + into.ID + "/merge", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "from": from.ID}}).Expect(202).JSON(&merge)
		if merge.Status != models.MergeRunning || merge.WorkflowID != "merge/"+p.id+"/"+from.ID+"->"+into.ID {
			t.Fatalf("merge: %+v", merge)
		}
		var gone *apitest.Response
		e.Eventually(func() bool {
			gone = e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + from.ID + "?orgId=" + p.id, Headers: p.owner.Auth()})
			return gone.Status == 301
		}, "the duplicate to be merged away")
		if loc := gone.Header.Get("Location"); loc != "/crm/contacts/"+into.ID {
			t.Fatalf("301 to %q, want the survivor", loc)
		}
		var survivor struct {
			Phone, Company string
			Fields         map[string]any
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + into.ID + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200).JSON(&survivor)
		if survivor.Phone != "+1 415 555 2671" || survivor.Company != "Engines" || survivor.Fields["plan"] != "gold" {
			t.Fatalf("the survivor: %+v", survivor)
		}
		for _, path := range []string{"/crm/deals/" + deal.ID, "/crm/tasks/" + task.ID} {
			var row struct{ ContactID *string }
			e.Do(apitest.Request{Method: "GET", Path: path + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200).JSON(&row)
			if !is(row.ContactID, into.ID) {
				t.Fatalf("%s points at %v, want the survivor %s", path, row.ContactID, into.ID)
			}
		}

		// Refused: into itself, another organization's, one merged away,
		// one in a merge under way.
		merge422 := func(intoID, fromID, code string) {
			t.Helper()
			problem := e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts/" + intoID + "/merge", Headers: p.owner.Auth(),
				Body: map[string]any{"orgId": p.id, "from": fromID}}).ExpectProblem(422, "validation_failed")
			if got := apitest.ProblemCodes(problem); !slices.Equal(got, []string{"from:" + code}) {
				t.Fatalf("merging %s into %s: %v, want from:%s", fromID, intoID, got, code)
			}
		}
		merge422(into.ID, into.ID, "same")
		other := newPeople(t, e, models.PlanBusiness)
		foreign := other.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Eve"}, 201)
		merge422(into.ID, foreign.ID, "not_found")
		merge422(into.ID, from.ID, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts/" + foreign.ID + "/merge", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "from": into.ID}}).ExpectProblem(404, "not_found")
		x := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "X"}, 201)
		y := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Y"}, 201)
		busy := models.PersonMerge{ID: models.NewID(), OrgID: p.id, Object: models.AutomationContact, FromID: x.ID, IntoID: y.ID,
			Status: models.MergeRunning, Moved: "{}", CreatedAt: models.Now()}
		if err := e.DB.Create(&busy).Error; err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts/" + into.ID + "/merge", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "from": y.ID}}).ExpectProblem(409, "merge_in_progress")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts/" + x.ID + "/merge", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "from": into.ID}}).ExpectProblem(409, "merge_in_progress")

		// Customers: the duplicate's tickets and time move to the survivor.
		keep := p.customer(e, "POST", "/helpdesk/customers", map[string]any{"name": "Bob", "email": "bob@engines.io"}, 201)
		var tk struct{ ID, CustomerID string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
			Body: map[string]any{"subject": "Engines down", "email": "bob.martin@engines.io"}}).Expect(201).JSON(&tk)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers/" + tk.CustomerID + "/time-entries", Headers: p.hd,
			Body: map[string]any{"ticketId": tk.ID, "minutes": 30}}).Expect(201)
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/customers/" + keep.ID + "/merge", Headers: p.hd,
			Body: map[string]any{"from": tk.CustomerID}}).Expect(202)
		e.Eventually(func() bool {
			return e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/customers/" + tk.CustomerID, Headers: p.hd}).Status == 301
		}, "the duplicate customer to be merged away")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: p.hd}).Expect(200).JSON(&tk)
		if tk.CustomerID != keep.ID {
			t.Fatalf("the ticket's customer is %s, want the survivor %s", tk.CustomerID, keep.ID)
		}
		if n := apitest.Count(t, e.DB, &models.TimeEntry{}, "customer_id = ?", keep.ID); n != 1 {
			t.Fatalf("%d time entries moved, want 1", n)
		}
	})
}

// The duplicates list names each contact that an older one may already
// be — the same e-mail, or the same name at the same company, without
// regard to case — newest first with its candidates and why, page by page;
// another organization's contacts are never candidates.
func TestContactDuplicates(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p, other := newPeople(t, e, models.PlanBusiness), newPeople(t, e, models.PlanBusiness)
		ada := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ada@engines.io", "company": "Engines"}, 201)
		other.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada", "email": "ada@engines.io"}, 201)
		adaL := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Ada L.", "email": "ADA@engines.io"}, 201)
		grace := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Grace", "company": "Navy"}, 201)
		p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Eve", "company": "Navy"}, 201)
		graceH := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "grace", "company": "NAVY"}, 201)
		// One phone number, written three ways (E.164 is what compares):
		// the last one by an update.
		lin := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Lin", "phone": "+1 415 555 0100"}, 201)
		linW := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Lin W", "phone": "(415) 555-0100"}, 201)
		other.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Lin", "phone": "+14155550100"}, 201)
		max := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": "Max", "phone": "not a number"}, 201)
		p.contact(e, "PUT", "/crm/contacts/"+max.ID, map[string]any{"phone": "415.555.0100"}, 200)

		type dup struct {
			ID         string
			Candidates []struct {
				Reason  string
				Contact struct{ ID string }
			}
		}
		var got []string
		path := "/crm/contacts/duplicates?orgId=" + p.id + "&limit=1"
		for cursor := ""; ; {
			var page struct {
				Data       []dup
				NextCursor *string
				HasMore    bool
			}
			e.Do(apitest.Request{Method: "GET", Path: path + cursor, Headers: p.owner.Auth()}).Expect(200).JSON(&page)
			for _, d := range page.Data {
				for _, c := range d.Candidates {
					got = append(got, d.ID+"~"+c.Contact.ID+":"+c.Reason)
				}
			}
			if !page.HasMore {
				break
			}
			cursor = "&cursor=" + *page.NextCursor
		}
		want := []string{max.ID + "~" + lin.ID + ":phone", max.ID + "~" + linW.ID + ":phone", linW.ID + "~" + lin.ID + ":phone",
			graceH.ID + "~" + grace.ID + ":name_company", adaL.ID + "~" + ada.ID + ":email"}
		if !slices.Equal(got, want) {
			t.Fatalf("duplicates: %v, want %v", got, want)
		}
		var none struct{ Data []dup }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/duplicates?orgId=" + other.id, Headers: other.owner.Auth()}).Expect(200).JSON(&none)
		if len(none.Data) != 0 {
			t.Fatalf("another organization's duplicates: %+v", none.Data)
		}
	})
}
