package api_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// TestEveryWriteRouteListsEveryBadFieldAtOnce sends each create/update
// route of the CRM, the Helpdesk and the identity service a body with an
// unknown field and several broken rules — tag rules, cross-field rules and
// references to rows the organization does not have — and expects one 422
// naming exactly those fields, each once.
func TestEveryWriteRouteListsEveryBadFieldAtOnce(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Validation")
		agent := e.AddMember(owner, org, models.RoleAgent)
		hdKey := e.CreateKey(owner, org, "helpdesk")
		crm, hd := owner.Auth(), apitest.HelpdeskKey(hdKey, org)
		member := apitest.HelpdeskUser(agent.Token, org)
		ownerHD := apitest.HelpdeskUser(owner.Token, org)
		nobody := models.NewID() // a well-formed id nothing has

		create := func(path string, headers map[string]string, body map[string]any) string {
			t.Helper()
			var out struct{ ID string }
			e.Do(apitest.Request{Method: "POST", Path: path, Headers: headers, Body: body}).Expect(201).JSON(&out)
			return out.ID
		}
		contact := create("/crm/contacts", crm, map[string]any{"orgId": org, "name": "Ada"})
		deal := create("/crm/deals", crm, map[string]any{"orgId": org, "title": "Engines"})
		lead := create("/crm/leads", crm, map[string]any{"orgId": org, "name": "Grace", "phone": "+1 415 555 2671"})
		task := create("/crm/tasks", crm, map[string]any{"orgId": org, "title": "Call"})
		ticket := create("/helpdesk/tickets", hd, map[string]any{"subject": "Broken", "email": "bob@example.com"})
		customer := create("/helpdesk/customers", hd, map[string]any{"name": "Bob", "email": "bob2@example.com"})
		category := create("/helpdesk/knowledge-base/categories", hd, map[string]any{"name": "Basics"})
		article := create("/helpdesk/knowledge-base/articles", hd, map[string]any{"title": "Reset"})
		var members struct {
			Data []struct{ ID, Email string }
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + org + "/members", Headers: crm}).Expect(200).JSON(&members)
		agentMember := members.Data[slices.IndexFunc(members.Data, func(m struct{ ID, Email string }) bool { return strings.EqualFold(m.Email, agent.Email) })].ID
		service := apitest.Bearer(apitest.ServiceToken)
		e.SetPlan(org, models.PlanBusiness)
		aiKey := apitest.Bearer(e.CreateKey(owner, org, "ai"))

		cases := []struct {
			method, path string
			headers      map[string]string
			body         map[string]any
			want         map[string]string // field → code
		}{
			// CRM
			{"POST", "/crm/contacts", crm, map[string]any{"orgId": org, "bogus": 1, "email": "nope", "type": "alien"},
				map[string]string{"bogus": "unknown_field", "email": "email", "type": "oneof", "name": "required"}},
			{"PUT", "/crm/contacts/" + contact, crm, map[string]any{"orgId": org, "bogus": 1, "email": "nope", "type": "alien", "name": " "},
				map[string]string{"bogus": "unknown_field", "email": "email", "type": "oneof", "name": "notblank"}},
			{"POST", "/crm/deals", crm, map[string]any{"orgId": org, "bogus": 1, "amount": -1, "closeDate": "tomorrow", "stage": "LOST", "assignedToId": nobody},
				map[string]string{"bogus": "unknown_field", "amount": "gte", "closeDate": "datetime", "title": "required", "lostReason": "required", "assignedToId": "not_a_member"}},
			{"PUT", "/crm/deals/" + deal, crm, map[string]any{"orgId": org, "bogus": 1, "amount": "lots", "stage": "DONE", "contactId": nobody},
				map[string]string{"bogus": "unknown_field", "amount": "invalid_type", "stage": "oneof", "contactId": "not_found"}},
			{"POST", "/crm/leads", crm, map[string]any{"orgId": org, "bogus": 1, "value": -1, "company": 5, "assignedToId": nobody},
				map[string]string{"bogus": "unknown_field", "value": "gte", "company": "invalid_type", "email": "required_without", "assignedToId": "not_a_member"}},
			{"PUT", "/crm/leads/" + lead, crm, map[string]any{"orgId": org, "bogus": 1, "email": "nope", "status": "WON", "assignedToId": nobody},
				map[string]string{"bogus": "unknown_field", "email": "email", "status": "oneof", "assignedToId": "not_a_member"}},
			{"POST", "/crm/leads/" + lead + "/activities", crm, map[string]any{"orgId": org, "bogus": 1, "type": "fax", "occurredAt": "2999-01-01T00:00:00Z"},
				map[string]string{"bogus": "unknown_field", "type": "oneof", "body": "required", "occurredAt": "future"}},
			{"POST", "/crm/leads/" + lead + "/send-message", crm, map[string]any{"orgId": org, "bogus": 1, "channel": "pigeon"},
				map[string]string{"bogus": "unknown_field", "channel": "oneof", "text": "required"}},
			{"POST", "/crm/leads/" + lead + "/convert", crm, map[string]any{"orgId": org, "bogus": 1, "stage": "WON", "amount": -1},
				map[string]string{"bogus": "unknown_field", "stage": "oneof", "amount": "gte"}},
			{"POST", "/crm/tasks", crm, map[string]any{"orgId": org, "bogus": 1, "dueDate": "soon", "priority": "NOW", "leadId": nobody},
				map[string]string{"bogus": "unknown_field", "dueDate": "datetime", "priority": "oneof", "leadId": "not_found", "title": "required"}},
			{"PUT", "/crm/tasks/" + task, crm, map[string]any{"orgId": org, "bogus": 1, "title": " ", "status": "MAYBE", "dealId": nobody},
				map[string]string{"bogus": "unknown_field", "title": "notblank", "status": "oneof", "dealId": "not_found"}},
			{"POST", "/crm/organization", crm, map[string]any{"bogus": 1, "timezone": "Mars/Base", "currency": "XXXY"},
				map[string]string{"bogus": "unknown_field", "timezone": "timezone", "currency": "iso4217", "name": "required"}},
			{"PUT", "/crm/organization/" + org, crm, map[string]any{"bogus": 1, "website": "not a url", "name": ""},
				map[string]string{"bogus": "unknown_field", "website": "url_or_empty", "name": "notblank"}},
			{"POST", "/crm/organization/" + org + "/members", crm, map[string]any{"bogus": 1, "email": "nope", "role": "KING"},
				map[string]string{"bogus": "unknown_field", "email": "email", "role": "oneof"}},
			{"PUT", "/crm/organization/" + org + "/members/" + agentMember, crm, map[string]any{"bogus": 1, "role": "KING", "target": -1},
				map[string]string{"bogus": "unknown_field", "role": "oneof", "target": "gte"}},
			{"POST", "/crm/organization/" + org + "/apikeys", crm, map[string]any{"bogus": 1, "service": "mail"},
				map[string]string{"bogus": "unknown_field", "service": "oneof", "name": "required"}},
			{"POST", "/crm/leads/webhook", nil, map[string]any{"orgId": org, "bogus": 1, "email": "nope", "value": -1},
				map[string]string{"bogus": "unknown_field", "email": "email", "value": "gte"}},
			// Helpdesk
			{"POST", "/helpdesk/tickets", hd, map[string]any{"bogus": 1, "email": "nope", "priority": "asap"},
				map[string]string{"bogus": "unknown_field", "email": "email", "priority": "oneof", "subject": "required"}},
			{"PUT", "/helpdesk/tickets/" + ticket, hd, map[string]any{"bogus": 1, "status": "done", "agentId": "", "subject": " "},
				map[string]string{"bogus": "unknown_field", "status": "oneof", "agentId": "uuid", "subject": "notblank"}},
			{"PUT", "/helpdesk/tickets/" + ticket, hd, map[string]any{"priority": "asap", "agentId": nobody},
				map[string]string{"priority": "oneof", "agentId": "not_a_member"}},
			{"POST", "/helpdesk/tickets/" + ticket + "/comments", hd, map[string]any{"bogus": 1, "author": "robot"},
				map[string]string{"bogus": "unknown_field", "author": "oneof", "body": "required"}},
			{"POST", "/helpdesk/tickets/" + ticket + "/comments", hd, map[string]any{"bogus": 1, "author": "customer", "public": false},
				map[string]string{"bogus": "unknown_field", "public": "customer_public", "body": "required"}},
			{"POST", "/helpdesk/customers", hd, map[string]any{"bogus": 1, "email": "nope", "phone": 5},
				map[string]string{"bogus": "unknown_field", "email": "email", "phone": "invalid_type", "name": "required"}},
			{"PUT", "/helpdesk/customers/" + customer, hd, map[string]any{"bogus": 1, "email": "nope", "name": ""},
				map[string]string{"bogus": "unknown_field", "email": "email", "name": "notblank"}},
			{"POST", "/helpdesk/customers/" + customer + "/time-entries", hd, map[string]any{"bogus": 1, "minutes": 0, "ticketId": nobody},
				map[string]string{"bogus": "unknown_field", "minutes": "required", "ticketId": "not_customer_ticket"}},
			{"POST", "/helpdesk/knowledge-base/categories", hd, map[string]any{"bogus": 1, "slug": "Not A Slug", "position": -1},
				map[string]string{"bogus": "unknown_field", "slug": "slug", "position": "gte", "name": "required"}},
			{"PUT", "/helpdesk/knowledge-base/categories/" + category, hd, map[string]any{"bogus": 1, "slug": "Not A Slug", "name": ""},
				map[string]string{"bogus": "unknown_field", "slug": "slug", "name": "notblank"}},
			{"POST", "/helpdesk/knowledge-base/articles", hd, map[string]any{"bogus": 1, "status": "live", "categoryId": nobody},
				map[string]string{"bogus": "unknown_field", "status": "oneof", "categoryId": "not_found", "title": "required"}},
			{"PUT", "/helpdesk/knowledge-base/articles/" + article, hd, map[string]any{"bogus": 1, "status": "live", "slug": "Not A Slug", "categoryId": nobody},
				map[string]string{"bogus": "unknown_field", "status": "oneof", "slug": "slug", "categoryId": "not_found"}},
			{"POST", "/helpdesk/notifications/read", member, map[string]any{"bogus": 1, "id": 5, "all": "yes"},
				map[string]string{"bogus": "unknown_field", "id": "invalid_type", "all": "invalid_type"}},
			{"POST", "/helpdesk/notifications/subscribe", member, map[string]any{"bogus": 1, "endpoint": "http://push.example.com/x", "expirationTime": 1},
				map[string]string{"bogus": "unknown_field", "endpoint": "https_url", "expirationTime": "expired", "keys": "required"}},
			// Payments (the owner's token; billing configured below)
			{"POST", "/helpdesk/payments/create-order", ownerHD, map[string]any{"bogus": 1, "plan": "platinum", "interval": "week"},
				map[string]string{"bogus": "unknown_field", "plan": "oneof", "interval": "oneof"}},
			{"POST", "/helpdesk/payments/downgrade", ownerHD, map[string]any{"bogus": 1, "interval": "month"},
				map[string]string{"bogus": "unknown_field", "interval": "unknown_field", "plan": "required"}},
			// Generative AI (snake_case)
			{"POST", "/v1/ai/documents", aiKey, map[string]any{"bogus": 1, "title": 5, "content": "Hi", "content_type": "text/html", "source_id": "x"},
				map[string]string{"bogus": "unknown_field", "title": "invalid_type", "content_type": "oneof", "source_id": "uuid"}},
			{"POST", "/v1/ai/summarize", aiKey, map[string]any{"bogus": 1, "length": "epic", "refresh": "yes"},
				map[string]string{"bogus": "unknown_field", "length": "oneof", "refresh": "invalid_type", "document_id": "required"}},
			{"POST", "/v1/ai/action-items", aiKey, map[string]any{"bogus": 1, "document_id": "x"},
				map[string]string{"bogus": "unknown_field", "document_id": "uuid"}},
			{"POST", "/v1/ai/analyze", aiKey, map[string]any{"bogus": 1, "data": "no table here", "format": "xml", "question": strings.Repeat("?", 1001)},
				map[string]string{"bogus": "unknown_field", "data": "format", "format": "oneof", "question": "max"}},
			// Identity
			{"POST", "/identity/v1/users", nil, map[string]any{"bogus": 1, "email": "nope", "password": "short"},
				map[string]string{"bogus": "unknown_field", "email": "email", "password": "min", "name": "required"}},
			{"POST", "/identity/v1/token", nil, map[string]any{"bogus": 1, "grant_type": "magic", "email": "nope"},
				map[string]string{"bogus": "unknown_field", "grant_type": "oneof", "email": "email", "password": "required"}},
			{"POST", "/identity/v1/token/refresh", nil, map[string]any{"bogus": 1},
				map[string]string{"bogus": "unknown_field", "refresh_token": "required"}},
			{"PUT", "/identity/v1/orgs/" + org, service, map[string]any{"bogus": 1},
				map[string]string{"bogus": "unknown_field", "name": "required"}},
			{"PUT", "/identity/v1/orgs/" + org + "/members", service, map[string]any{"bogus": 1, "members": []map[string]string{{"userId": "x", "role": "KING"}}},
				map[string]string{"bogus": "unknown_field", "members[0].userId": "uuid", "members[0].role": "oneof"}},
		}
		for _, tc := range cases {
			r := e.Do(apitest.Request{Method: tc.method, Path: tc.path, Headers: tc.headers, Body: tc.body})
			if r.Status != 422 {
				t.Errorf("%s %s: status %d, want 422: %s", tc.method, tc.path, r.Status, r.Body)
				continue
			}
			var p struct{ Errors []models.FieldError }
			r.JSON(&p)
			got := map[string]string{}
			for _, f := range p.Errors {
				if _, twice := got[f.Field]; twice {
					t.Errorf("%s %s names %s twice: %s", tc.method, tc.path, f.Field, r.Body)
				}
				got[f.Field] = f.Code
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("%s %s: fields %v, want %v", tc.method, tc.path, got, tc.want)
			}
		}
		// Billing is on (so the payments routes reach their input), with a
		// Stripe address where nothing answers: no case may get that far.
	}, apitest.WithBilling(stripeconfig.Config{SecretKey: "sk_test_validation", APIBase: "http://127.0.0.1:9"}))
}
