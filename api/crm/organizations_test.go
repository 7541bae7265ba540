package crm_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

type org struct {
	ID, Name, Status, Plan, Role, Timezone, Currency, FailureReason string
}

type member struct {
	ID, Email, Role, Status string
	UserID                  *string
	Target                  float64
}

// The registration runs end to end: the handler records the workflow in the
// outbox, the real Temporal server runs it, and its activities call the
// real identity service over HTTP.
func TestCreateOrganizationRegistersWithIdentity(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("founder"))
		body := map[string]string{"name": "Acme", "timezone": "Europe/Paris", "currency": "EUR", "website": "https://acme.example"}
		r := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: u.Auth(), Body: body})
		var created org
		r.JSON(&created)
		if r.Status != 201 || created.Status != models.OrgActive || created.Role != models.RoleOwner || created.Plan != models.PlanFree {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		if r.Header.Get("Location") != "/crm/organization/"+created.ID {
			t.Fatalf("Location %q", r.Header.Get("Location"))
		}
		// The identity service knows the organization and its owner.
		orgs, err := e.Identity.UserOrgs(t.Context(), u.ID)
		if err != nil || len(orgs) != 1 || orgs[0].OrgID != created.ID || orgs[0].Role != models.RoleOwner || orgs[0].Name != "Acme" {
			t.Fatalf("identity memberships: %+v %v", orgs, err)
		}
		// The workflow is visible with its search attributes.
		desc, err := e.Temporal.DescribeWorkflowExecution(t.Context(), names.OrgRegistrationID(created.ID), "")
		if err != nil {
			t.Fatal(err)
		}
		sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
		if sa["OrgId"] == nil || sa["Kind"] == nil {
			t.Fatalf("search attributes missing: %v", sa)
		}

		var got org
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + created.ID, Headers: u.Auth()}).Expect(200).JSON(&got)
		if got.Timezone != "Europe/Paris" || got.Currency != "EUR" {
			t.Fatalf("get: %+v", got)
		}
		var list struct {
			Data         []org
			Synchronized bool
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: u.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != created.ID || !list.Synchronized {
			t.Fatalf("list: %+v", list)
		}

		// Bad bodies change nothing and list every bad field.
		bad := map[string]any{"name": "", "timezone": "Mars/Olympus", "currency": "EURO", "nickname": "x"}
		p := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: u.Auth(), Body: bad}).ExpectProblem(422, "validation_failed")
		if n := len(p["errors"].([]any)); n != 4 {
			// the unknown field and the three broken rules, at once
			t.Fatalf("errors: %v", p["errors"])
		}
		delete(bad, "nickname")
		p = e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: u.Auth(), Body: bad}).ExpectProblem(422, "validation_failed")
		var fields []string
		for _, fe := range p["errors"].([]any) {
			fields = append(fields, fe.(map[string]any)["field"].(string))
		}
		if strings.Join(fields, ",") != "name,timezone,currency" {
			t.Fatalf("want name, timezone and currency reported by their JSON names: %v", fields)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: u.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 {
			t.Fatal("a refused request created an organization")
		}
	})
}

// With Temporal unable to finish quickly the caller gets 202 and a Location;
// here the identity service is unreachable, so the saga eventually gives up
// — we only check the immediate answer and that nothing is lost.
func TestCreateOrganizationAnswers202WhileProvisioning(t *testing.T) {
	e := apitest.New(t, database.SQLite, apitest.WithIdentityURL("http://127.0.0.1:1/identity"))
	u := e.SignUp(apitest.UniqueEmail("slow"))
	r := e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: u.Auth(), Body: map[string]string{"name": "Slow Co"}}).Expect(202)
	var created org
	r.JSON(&created)
	if created.Status != models.OrgProvisioning || r.Header.Get("Location") == "" {
		t.Fatalf("202 body: %s", r.Body)
	}
	// Listing still works while the identity service is down, from the
	// local copy, and says so.
	var list struct {
		Data         []org
		Synchronized bool
	}
	e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: u.Auth()}).Expect(200).JSON(&list)
	if list.Synchronized || len(list.Data) != 1 || list.Data[0].Status != models.OrgProvisioning {
		t.Fatalf("list while identity is down: %+v", list)
	}
}

func TestMembersInvitesSeatsAndOwners(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Seats")
		members := "/crm/organization/" + orgID + "/members"

		// Free plan: 2 seats. The owner holds one; one invite takes the other.
		inviteeEmail := apitest.UniqueEmail("Invitee")
		var inv struct {
			member
			Invitation struct{ Token string }
		}
		r := e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
			Body: map[string]any{"email": inviteeEmail, "role": "AGENT", "target": 5000}}).Expect(201)
		r.JSON(&inv)
		if inv.Status != models.MemberInvited || inv.UserID != nil || inv.Target != 5000 || inv.Invitation.Token == "" ||
			r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("invite: %s", r.Body)
		}
		e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
			Body: map[string]any{"email": inviteeEmail, "role": "AGENT"}}).ExpectProblem(409, "already_member")
		e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
			Body: map[string]any{"email": apitest.UniqueEmail("third"), "role": "AGENT"}}).ExpectProblem(402, "seat_limit_reached")

		// The invitee signs up: that alone grants nothing; the token does.
		agent := e.SignUp(inviteeEmail)
		var list struct{ Data []org }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: agent.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("signing up made the invitee a member: %+v", list)
		}
		e.Accept(agent, inv.Invitation.Token).Expect(200)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: agent.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 || list.Data[0].ID != orgID || list.Data[0].Role != models.RoleAgent {
			t.Fatalf("invitee's organizations: %+v", list)
		}
		if used, _ := models.SeatsInUse(e.DB, orgID); used != 2 {
			t.Fatalf("%d seats in use after acceptance, want 2", used)
		}
		// …and the membership reaches the identity service (OrgSync workflow).
		e.Eventually(func() bool {
			ms, err := e.Identity.UserOrgs(context.Background(), agent.ID)
			return err == nil && len(ms) == 1 && ms[0].Role == models.RoleAgent
		}, "the accepted invite to reach the identity service")

		var page struct {
			Data    []member
			HasMore bool
		}
		e.Do(apitest.Request{Method: "GET", Path: members, Headers: agent.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 2 {
			t.Fatalf("members: %+v", page)
		}
		e.Do(apitest.Request{Method: "GET", Path: members + "?status=invited", Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 0 {
			t.Fatalf("invited after acceptance: %+v", page)
		}

		// Upgrade for more seats; concurrent invites cannot overbook.
		e.SetPlan(orgID, models.PlanStarter) // 5 seats, 2 used
		var wg sync.WaitGroup
		statuses := make(chan int, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
					Body: map[string]any{"email": apitest.UniqueEmail("rush"), "role": "AGENT"}})
				statuses <- r.Status
			}()
		}
		wg.Wait()
		close(statuses)
		created := 0
		for s := range statuses {
			if s == 201 {
				created++
			} else if s != 402 {
				t.Fatalf("concurrent invite answered %d", s)
			}
		}
		if used, _ := models.SeatsInUse(e.DB, orgID); created != 3 || used != 5 {
			t.Fatalf("concurrent invites: %d created, %d seats used; want 3 and 5", created, used)
		}

		// Owners: the last OWNER can be neither demoted nor removed.
		var ownerMember member
		e.Do(apitest.Request{Method: "GET", Path: members + "?status=active", Headers: owner.Auth()}).Expect(200).JSON(&page)
		var agentMember member
		for _, m := range page.Data {
			switch m.Role {
			case models.RoleOwner:
				ownerMember = m
			case models.RoleAgent:
				agentMember = m
			}
		}
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + ownerMember.ID, Headers: owner.Auth(),
			Body: map[string]string{"role": "ADMIN"}}).ExpectProblem(409, "last_owner")
		e.Do(apitest.Request{Method: "DELETE", Path: members + "/" + ownerMember.ID, Headers: owner.Auth()}).ExpectProblem(409, "last_owner")
		// Targets and roles change; an ADMIN cannot create OWNERs.
		var updated member
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + agentMember.ID, Headers: owner.Auth(),
			Body: map[string]any{"role": "ADMIN", "target": 12000.5}}).Expect(200).JSON(&updated)
		if updated.Role != models.RoleAdmin || updated.Target != 12000.5 {
			t.Fatalf("update: %+v", updated)
		}
		e.SignIn(agent) // roles are read per request; the token needs no refresh, but exercise it anyway
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + agentMember.ID, Headers: agent.Auth(),
			Body: map[string]any{"role": "OWNER"}}).ExpectProblem(403, "owner_required")
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + agentMember.ID, Headers: owner.Auth(),
			Body: map[string]any{"role": "OWNER"}}).Expect(200)
		// Now there are two owners: one may step down.
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + ownerMember.ID, Headers: owner.Auth(),
			Body: map[string]string{"role": "ADMIN"}}).Expect(200)
		e.Do(apitest.Request{Method: "DELETE", Path: members + "/" + models.NewID(), Headers: agent.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "PUT", Path: members + "/" + agentMember.ID, Headers: owner.Auth(),
			Body: map[string]any{"target": -1}}).ExpectProblem(422, "validation_failed")
	})
}

// Every ADMIN-only route: OWNER and ADMIN may, AGENT may not (403), and API
// keys may not where keys are not allowed (403); another organization's id
// is a 404 for everyone.
func TestRoleMatrixOfAdminRoutes(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Matrix")
		e.SetPlan(orgID, models.PlanBusiness)
		admin := e.AddMember(owner, orgID, models.RoleAdmin)
		agent := e.AddMember(owner, orgID, models.RoleAgent)
		key := e.CreateKey(owner, orgID, "crm")
		outsider := e.SignUp(apitest.UniqueEmail("outsider"))
		e.CreateOrg(outsider, "Elsewhere")
		base := "/crm/organization/" + orgID

		type route struct {
			method, path string
			body         func() any
			ok           int
		}
		routes := []route{
			{"PUT", base, func() any { return map[string]string{"industry": "Retail"} }, 200},
			{"POST", base + "/members", func() any { return map[string]string{"email": apitest.UniqueEmail("m"), "role": "AGENT"} }, 201},
			{"GET", base + "/apikeys", nil, 200},
			{"POST", base + "/apikeys", func() any { return map[string]string{"name": "k", "service": "crm"} }, 201},
		}
		callers := []struct {
			name    string
			headers map[string]string
			want    func(ok int) int
		}{
			{"owner", owner.Auth(), func(ok int) int { return ok }},
			{"admin", admin.Auth(), func(ok int) int { return ok }},
			{"agent", agent.Auth(), func(int) int { return 403 }},
			{"crm key", apitest.Bearer(key), func(int) int { return 403 }},
			{"outsider", outsider.Auth(), func(int) int { return 404 }},
		}
		for _, rt := range routes {
			for _, c := range callers {
				var body any
				if rt.body != nil {
					body = rt.body()
				}
				r := e.Do(apitest.Request{Method: rt.method, Path: rt.path, Headers: c.headers, Body: body})
				if want := c.want(rt.ok); r.Status != want {
					t.Errorf("%s %s as %s: %d, want %d: %s", rt.method, rt.path, c.name, r.Status, want, r.Body)
				}
			}
		}
		// Member update/removal and key revocation, per caller, on fresh targets.
		for _, c := range callers {
			var m member
			e.Do(apitest.Request{Method: "POST", Path: base + "/members", Headers: owner.Auth(),
				Body: map[string]string{"email": apitest.UniqueEmail("t"), "role": "AGENT"}}).Expect(201).JSON(&m)
			var k struct{ ID string }
			e.Do(apitest.Request{Method: "POST", Path: base + "/apikeys", Headers: owner.Auth(),
				Body: map[string]string{"name": "t", "service": "ai"}}).Expect(201).JSON(&k)
			checks := []struct {
				method, path string
				body         any
				ok           int
			}{
				{"PUT", base + "/members/" + m.ID, map[string]any{"target": 10}, 200},
				{"DELETE", base + "/apikeys/" + k.ID, nil, 204},
				{"DELETE", base + "/members/" + m.ID, nil, 204},
			}
			for _, ch := range checks {
				r := e.Do(apitest.Request{Method: ch.method, Path: ch.path, Headers: c.headers, Body: ch.body})
				if want := c.want(ch.ok); r.Status != want {
					t.Errorf("%s %s as %s: %d, want %d: %s", ch.method, ch.path, c.name, r.Status, want, r.Body)
				}
			}
		}
		// Reads are open to every member and the key; not to outsiders.
		for _, c := range callers[:4] {
			e.Do(apitest.Request{Method: "GET", Path: base, Headers: c.headers}).Expect(200)
			e.Do(apitest.Request{Method: "GET", Path: base + "/members", Headers: c.headers}).Expect(200)
		}
		e.Do(apitest.Request{Method: "GET", Path: base, Headers: outsider.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: base + "/members", Headers: outsider.Auth()}).ExpectProblem(404, "not_found")
		// Keys cannot create organizations either.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization", Headers: apitest.Bearer(key),
			Body: map[string]string{"name": "Key Co"}}).ExpectProblem(403, "user_required")
	})
}

func TestAPIKeysAreShownOnceAndRevocable(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("keys"))
		orgID := e.CreateOrg(owner, "Keys")
		base := "/crm/organization/" + orgID + "/apikeys"
		var created struct {
			ID, Key, Prefix, Last4, Service string
			LastUsedAt                      *string
		}
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: owner.Auth(),
			Body: map[string]string{"name": "Zapier", "service": "crm"}}).Expect(201).JSON(&created)
		if created.Prefix != "crm" || len(created.Key) < 36 || created.Key[:4] != "crm_" || created.Last4 != created.Key[len(created.Key)-4:] {
			t.Fatalf("created key: %+v", created)
		}
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: owner.Auth(),
			Body: map[string]string{"name": "x", "service": "billing"}}).ExpectProblem(422, "validation_failed")

		// The key works, and its use is recorded.
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID, Headers: apitest.Bearer(created.Key)}).Expect(200)
		var list struct {
			Data []map[string]any
		}
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: base, Headers: owner.Auth()}).Expect(200).JSON(&list)
			return len(list.Data) == 1 && list.Data[0]["lastUsedAt"] != nil
		}, "lastUsedAt to be recorded")
		if _, shown := list.Data[0]["key"]; shown {
			t.Fatal("the key text is listed again")
		}
		var stored models.APIKey
		e.DB.Take(&stored, "id = ?", created.ID)
		if stored.Hash == created.Key || stored.Hash != models.HashKey(created.Key) {
			t.Fatal("the key is not stored as its SHA-256")
		}

		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + created.ID, Headers: owner.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + created.ID, Headers: owner.Auth()}).Expect(204)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID, Headers: apitest.Bearer(created.Key)}).ExpectProblem(401, "api_key_revoked")
		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + models.NewID(), Headers: owner.Auth()}).ExpectProblem(404, "not_found")
	})
}

// A removed member stays removed even while the identity service still
// lists the membership (its OrgSync has not run yet): listing
// organizations must not mirror it back in. Re-inviting works.
func TestRemovedMemberIsNotResurrectedBySync(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Churn")
		agent := e.AddMember(owner, orgID, models.RoleAgent)
		var m models.Member
		if err := e.DB.Take(&m, "org_id = ? AND user_id = ?", orgID, agent.ID).Error; err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/organization/" + orgID + "/members/" + m.ID, Headers: owner.Auth()}).Expect(204)
		// The identity service has not heard of the removal yet.
		if err := e.Identity.SetMembers(e.DB.WithContext(t.Context()), orgID, []identity.Membership{
			{OrgID: orgID, UserID: owner.ID, Role: models.RoleOwner}, {OrgID: orgID, UserID: agent.ID, Role: models.RoleAgent},
		}); err != nil {
			t.Fatal(err)
		}
		var list struct{ Data []org }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: agent.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("the removed member sees %+v", list.Data)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID, Headers: agent.Auth()}).ExpectProblem(404, "not_found")
		var page struct{ Data []member }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID + "/members", Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 {
			t.Fatalf("members after removal: %+v", page.Data)
		}
		// Re-inviting the same address works and takes a seat again; the
		// identity service's stale membership does not make the new invite
		// a membership — only its token does.
		inv := e.Invite(owner, orgID, agent.Email, "AGENT")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: agent.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("re-invited member is in before accepting: %+v", list.Data)
		}
		e.Accept(agent, inv.Token).Expect(200)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: agent.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 1 {
			t.Fatalf("re-invited member: %+v", list.Data)
		}
	})
}
