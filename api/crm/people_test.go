package crm_test

import (
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
