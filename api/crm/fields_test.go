package crm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

type fieldDef struct {
	ID, Key, Status, Label string
	Options                []string
}

type fieldContact struct {
	ID     string
	Fields map[string]any
}

// An organization's admins define custom fields; every object answers
// its values under "fields", create and update take them (checked by
// type, defaults applied, required ones enforced, null clearing), lists
// filter by them, rules test them, and deleting a field removes its
// values (a FieldChange workflow) — all within the organization.
func TestCustomFields(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		base := "/crm/organization/" + p.id + "/fields"
		define := func(body map[string]any) fieldDef {
			var f fieldDef
			e.Do(apitest.Request{Method: "POST", Path: base, Headers: p.owner.Auth(), Body: body}).Expect(201).JSON(&f)
			return f
		}
		plan := define(map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "select",
			"options": []string{"free", "gold", "platinum"}, "default": "free"})
		define(map[string]any{"object": "contact", "key": "seats", "label": "Seats", "type": "number"})
		define(map[string]any{"object": "contact", "key": "renewal_date", "label": "Renewal", "type": "date"})
		define(map[string]any{"object": "contact", "key": "regions", "label": "Regions", "type": "multiselect", "options": []string{"eu", "us"}})
		define(map[string]any{"object": "contact", "key": "owner", "label": "Owner", "type": "member"})
		define(map[string]any{"object": "ticket", "key": "severity", "label": "Severity", "type": "select", "options": []string{"s1", "s2"},
			"required": true})

		// Bad definitions: each problem named; a key taken; agents may not.
		problem := e.Do(apitest.Request{Method: "POST", Path: base, Headers: p.owner.Auth(), Body: map[string]any{
			"object": "invoice", "key": "Plan", "label": "", "type": "select"}}).ExpectProblem(422, "validation_failed")
		for _, want := range []string{"object:oneof", "key:pattern", "label:required", "options:required"} {
			if !slices.Contains(apitest.ProblemCodes(problem), want) {
				t.Errorf("no %s in %v", want, apitest.ProblemCodes(problem))
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: p.owner.Auth(), Body: map[string]any{
			"object": "contact", "key": "plan", "label": "Plan", "type": "text"}}).ExpectProblem(409, "field_key_taken")
		e.Do(apitest.Request{Method: "POST", Path: base, Headers: p.agentA.Auth(), Body: map[string]any{
			"object": "contact", "key": "x", "label": "X", "type": "text"}}).ExpectProblem(403, "admin_required")
		var listed struct{ Data []fieldDef }
		e.Do(apitest.Request{Method: "GET", Path: base + "?object=contact", Headers: p.agentA.Auth()}).Expect(200).JSON(&listed)
		if len(listed.Data) != 5 {
			t.Fatalf("an agent lists %d contact fields, want 5", len(listed.Data))
		}
		// Options are added to; the default's cannot be taken away.
		var edited fieldDef
		e.Do(apitest.Request{Method: "PATCH", Path: base + "/" + plan.ID, Headers: p.owner.Auth(),
			Body: map[string]any{"label": "Plan tier", "options": []string{"free", "gold", "platinum", "diamond"}}}).Expect(200).JSON(&edited)
		if edited.Label != "Plan tier" || len(edited.Options) != 4 {
			t.Fatalf("edited: %+v", edited)
		}
		problem = e.Do(apitest.Request{Method: "PATCH", Path: base + "/" + plan.ID, Headers: p.owner.Auth(),
			Body: map[string]any{"options": []string{"gold"}}}).ExpectProblem(422, "validation_failed")
		if !slices.Contains(apitest.ProblemCodes(problem), "default:invalid") {
			t.Fatalf("removing the default's option: %v", apitest.ProblemCodes(problem))
		}

		create := func(fields map[string]any, status int) fieldContact {
			var c fieldContact
			body := map[string]any{"orgId": p.id, "name": "Ada"}
			if fields != nil {
				body["fields"] = fields
			}
			e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: p.owner.Auth(), Body: body}).Expect(status).JSON(&c)
			return c
		}
		plain := create(nil, 201)
		if plain.Fields["plan"] != "free" || len(plain.Fields) != 1 {
			t.Fatalf("a contact without fields: %v, want the default plan", plain.Fields)
		}
		gold := create(map[string]any{"plan": "gold", "seats": 12, "regions": []string{"eu"}, "renewal_date": "2027-01-31", "owner": p.memberA}, 201)
		if gold.Fields["plan"] != "gold" || gold.Fields["seats"] != float64(12) || gold.Fields["owner"] != p.memberA {
			t.Fatalf("a gold contact: %v", gold.Fields)
		}
		small := create(map[string]any{"plan": "gold", "seats": 3}, 201)
		problem = e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: p.owner.Auth(), Body: map[string]any{"orgId": p.id, "name": "X",
			"fields": map[string]any{"plan": "silver", "seats": 1.5, "nope": 1, "owner": models.NewID(), "renewal_date": "31/01/2027"}}}).
			ExpectProblem(422, "validation_failed")
		for _, want := range []string{"fields.plan:invalid", "fields.seats:invalid", "fields.nope:unknown_field", "fields.owner:not_a_member", "fields.renewal_date:invalid"} {
			if !slices.Contains(apitest.ProblemCodes(problem), want) {
				t.Errorf("no %s in %v", want, apitest.ProblemCodes(problem))
			}
		}
		// An update changes what it sends; null clears.
		var updated fieldContact
		e.Do(apitest.Request{Method: "PUT", Path: "/crm/contacts/" + gold.ID, Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "fields": map[string]any{"seats": nil, "plan": "platinum"}}}).Expect(200).JSON(&updated)
		if _, has := updated.Fields["seats"]; has || updated.Fields["plan"] != "platinum" || updated.Fields["renewal_date"] != "2027-01-31" {
			t.Fatalf("updated: %v", updated.Fields)
		}

		list := func(query string) []string {
			var page struct{ Data []fieldContact }
			e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + p.id + "&" + query, Headers: p.owner.Auth()}).Expect(200).JSON(&page)
			var ids []string
			for _, c := range page.Data {
				ids = append(ids, c.ID)
			}
			return ids
		}
		if got := list("fields.plan=gold"); !slices.Equal(got, []string{small.ID}) {
			t.Fatalf("plan gold: %v, want %s", got, small.ID)
		}
		if got := list("fields.plan=free"); !slices.Equal(got, []string{plain.ID}) {
			t.Fatalf("plan free: %v, want %s", got, plain.ID)
		}
		if got := list("fields.seats[gte]=3&fields.seats[lt]=10"); !slices.Equal(got, []string{small.ID}) {
			t.Fatalf("seats in [3, 10): %v", got)
		}
		if got := list("fields.regions=eu"); !slices.Equal(got, []string{gold.ID}) {
			t.Fatalf("region eu: %v", got)
		}
		if got := list("fields.renewal_date[gte]=2027-01-01"); !slices.Equal(got, []string{gold.ID}) {
			t.Fatalf("renewing in 2027: %v", got)
		}
		problem = e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + p.id + "&fields.nope=1&fields.plan[gte]=gold",
			Headers: p.owner.Auth()}).ExpectProblem(422, "validation_failed")
		if got := apitest.ProblemCodes(problem); !slices.Contains(got, "fields.nope:unknown_field") || !slices.Contains(got, "fields.plan[gte]:invalid") {
			t.Fatalf("bad filters: %v", got)
		}

		// A required ticket field: refused without it, kept with it.
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
			Body: map[string]any{"subject": "Down", "email": "ops@engines.io"}}).ExpectProblem(422, "validation_failed")
		var tk struct {
			ID     string
			Fields map[string]any
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: p.hd,
			Body: map[string]any{"subject": "Down", "email": "ops@engines.io", "fields": map[string]any{"severity": "s1"}}}).Expect(201).JSON(&tk)
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/tickets/" + tk.ID, Headers: p.hd,
			Body: map[string]any{"fields": map[string]any{"severity": "s2"}}}).Expect(200).JSON(&tk)
		if tk.Fields["severity"] != "s2" {
			t.Fatalf("the ticket's fields: %v", tk.Fields)
		}

		// A rule tests a custom field.
		var rule automation
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + p.id + "/automations", Headers: p.owner.Auth(), Body: map[string]any{
			"name": "Gold", "object": "contact", "on": []string{"created"}, "active": false,
			"conditions": map[string]any{"all": []any{map[string]any{"field": "fields.plan", "operator": "is", "value": "gold"}}},
			"steps":      []any{map[string]any{"action": "notify", "to": "admins"}}}}).Expect(201).JSON(&rule)
		var test struct{ Matches bool }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + p.id + "/automations/" + rule.ID + "/test", Headers: p.owner.Auth(),
			Body: map[string]any{"objectId": small.ID}}).Expect(200).JSON(&test)
		if !test.Matches {
			t.Fatal("a rule on fields.plan does not match a gold contact")
		}

		// Another organization sees none of it.
		other := newPeople(t, e, models.PlanBusiness)
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + other.id + "/fields/" + plan.ID, Headers: other.owner.Auth()}).
			ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + other.id + "&fields.plan=gold", Headers: other.owner.Auth()}).
			ExpectProblem(422, "validation_failed")

		// Deleting the field removes its values, then the definition.
		var deleting fieldDef
		e.Do(apitest.Request{Method: "DELETE", Path: base + "/" + plan.ID, Headers: p.owner.Auth()}).Expect(202).JSON(&deleting)
		if deleting.Status != models.FieldDeleting {
			t.Fatalf("deleting: %+v", deleting)
		}
		e.Eventually(func() bool {
			return e.Do(apitest.Request{Method: "GET", Path: base + "/" + plan.ID, Headers: p.owner.Auth()}).Status == 404
		}, "the field to be deleted")
		for _, id := range []string{plain.ID, gold.ID, small.ID} {
			c := fieldContact{}
			e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + id + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200).JSON(&c)
			if _, has := c.Fields["plan"]; has {
				t.Fatalf("contact %s still has a plan: %v", id, c.Fields)
			}
		}
		if n := apitest.Count(t, e.DB, &models.CustomField{}, "org_id = ?", p.id); n != 5 {
			t.Fatalf("%d definitions left, want 5", n)
		}
	})
}

// Deleting a field removes its value from every object of the
// organization, over several batches (activities.FieldBatchSize), and
// from no other organization's: each object once, none skipped.
func TestFieldDeletionRewritesEveryBatch(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p, other := newPeople(t, e, models.PlanBusiness), newPeople(t, e, models.PlanBusiness)
		var field fieldDef
		for _, o := range []*people{p, other} {
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/fields", Headers: o.owner.Auth(),
				Body: map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "text"}}).Expect(201).JSON(&field)
		}
		const n = 2*activities.FieldBatchSize + 7
		now := models.Now()
		var rows []models.Contact
		for i := range n {
			for _, o := range []*people{p, other} {
				rows = append(rows, models.Contact{ID: models.NewID(), OrgID: o.id, Name: "Contact", Type: models.ContactPerson,
					Fields: models.FieldValues{"plan": "gold", "kept": i}, CreatedAt: now, UpdatedAt: now})
			}
		}
		if err := e.DB.CreateInBatches(rows, 500).Error; err != nil {
			t.Fatal(err)
		}
		var fields struct{ Data []fieldDef }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + p.id + "/fields", Headers: p.owner.Auth()}).Expect(200).JSON(&fields)
		e.Do(apitest.Request{Method: "DELETE", Path: "/crm/organization/" + p.id + "/fields/" + fields.Data[0].ID, Headers: p.owner.Auth()}).Expect(202)
		e.Eventually(func() bool {
			return apitest.Count(t, e.DB, &models.CustomField{}, "org_id = ?", p.id) == 0
		}, "the field to be deleted")
		count := func(orgID string) (plan, kept int) {
			var contacts []models.Contact
			if err := e.DB.Where("org_id = ?", orgID).Find(&contacts).Error; err != nil {
				t.Fatal(err)
			}
			for _, c := range contacts {
				if _, ok := c.Fields["plan"]; ok {
					plan++
				}
				if _, ok := c.Fields["kept"]; ok {
					kept++
				}
			}
			return plan, kept
		}
		if plan, kept := count(p.id); plan != 0 || kept != n {
			t.Fatalf("after the deletion: %d contacts keep the plan, %d the other value (want 0, %d)", plan, kept, n)
		}
		if plan, kept := count(other.id); plan != n || kept != n {
			t.Fatalf("the other organization: %d plans, %d other values (want %d of each)", plan, kept, n)
		}
	})
}

// Taking options away from a select and a multiselect takes them out of
// the stored values of every object of the organization, over several
// batches, and of no other organization's; the other values stay. While
// it runs, the field changes no further.
func TestFieldOptionRemovalRewritesEveryBatch(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		p, other := newPeople(t, e, models.PlanBusiness), newPeople(t, e, models.PlanBusiness)
		ids := map[*people][2]string{}
		for _, o := range []*people{p, other} {
			var plan, regions fieldDef
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/fields", Headers: o.owner.Auth(),
				Body: map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "select", "options": []string{"free", "gold"}}}).
				Expect(201).JSON(&plan)
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/fields", Headers: o.owner.Auth(),
				Body: map[string]any{"object": "contact", "key": "regions", "label": "Regions", "type": "multiselect",
					"options": []string{"eu", "us", "apac"}}}).Expect(201).JSON(&regions)
			ids[o] = [2]string{plan.ID, regions.ID}
		}
		const n = 2*activities.FieldBatchSize + 7
		now := models.Now()
		var rows []models.Contact
		for i := range n {
			plan := []string{"free", "gold"}[i%2]
			for _, o := range []*people{p, other} {
				rows = append(rows, models.Contact{ID: models.NewID(), OrgID: o.id, Name: "Contact", Type: models.ContactPerson,
					Fields: models.FieldValues{"plan": plan, "regions": []any{"eu", "us"}}, CreatedAt: now, UpdatedAt: now})
			}
		}
		if err := e.DB.CreateInBatches(rows, 500).Error; err != nil {
			t.Fatal(err)
		}
		base := "/crm/organization/" + p.id + "/fields/"
		var changed struct {
			fieldDef
			Progress struct {
				Change  string
				Options []string
				Done    bool
			}
		}
		e.Do(apitest.Request{Method: "PATCH", Path: base + ids[p][0], Headers: p.owner.Auth(),
			Body: map[string]any{"options": []string{"free"}}}).Expect(202).JSON(&changed)
		if changed.Progress.Change != models.FieldChangeRemoveOptions || fmt.Sprint(changed.Progress.Options) != "[gold]" || changed.Progress.Done {
			t.Fatalf("the change: %+v", changed)
		}
		e.Do(apitest.Request{Method: "PATCH", Path: base + ids[p][1], Headers: p.owner.Auth(),
			Body: map[string]any{"options": []string{"eu", "apac"}}}).Expect(202)
		for _, id := range ids[p] {
			e.Eventually(func() bool {
				changed.Progress.Done = false // absent while it runs
				e.Do(apitest.Request{Method: "GET", Path: base + id, Headers: p.owner.Auth()}).Expect(200).JSON(&changed)
				return changed.Progress.Done
			}, "the options' removal")
		}
		count := func(orgID string) (free, gold, us, eu int) {
			var contacts []models.Contact
			if err := e.DB.Where("org_id = ?", orgID).Find(&contacts).Error; err != nil {
				t.Fatal(err)
			}
			for _, c := range contacts {
				switch c.Fields["plan"] {
				case "free":
					free++
				case "gold":
					gold++
				}
				regions, _ := c.Fields["regions"].([]any)
				for _, r := range regions {
					if r == "us" {
						us++
					}
					if r == "eu" {
						eu++
					}
				}
			}
			return
		}
		if free, gold, us, eu := count(p.id); free != n/2+1 || gold != 0 || us != 0 || eu != n {
			t.Fatalf("after the removal: %d free, %d gold, %d us, %d eu (want %d, 0, 0, %d)", free, gold, us, eu, n/2+1, n)
		}
		if free, gold, us, eu := count(other.id); free != n/2+1 || gold != n/2 || us != n || eu != n {
			t.Fatalf("the other organization: %d free, %d gold, %d us, %d eu", free, gold, us, eu)
		}
		// A field whose options are being removed changes no further.
		if err := e.DB.Model(&models.CustomField{}).Where("id = ?", ids[p][0]).
			Update("progress", `{"change":"remove_options","rewritten":3,"options":["silver"]}`).Error; err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "PATCH", Path: base + ids[p][0], Headers: p.owner.Auth(), Body: map[string]any{"label": "Tier"}}).
			ExpectProblem(409, "field_changing")
		e.Do(apitest.Request{Method: "DELETE", Path: base + ids[p][0], Headers: p.owner.Auth()}).ExpectProblem(409, "field_changing")
	})
}

// What the suite creates itself starts with the defaults too: a lead from
// the web form, and the contact and the deal of its conversion.
func TestFieldDefaultsForWhatTheSuiteCreates(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		for _, object := range []string{"lead", "contact", "deal"} {
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + p.id + "/fields", Headers: p.owner.Auth(),
				Body: map[string]any{"object": object, "key": "region", "label": "Region", "type": "text", "default": "emea"}}).Expect(201)
		}
		var intake struct{ IntakeID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook",
			Body: map[string]any{"orgId": p.id, "name": "Grace", "email": "grace@navy.example"}}).Expect(202).JSON(&intake)
		var lead struct {
			ID     string
			Fields map[string]any
		}
		e.Eventually(func() bool {
			var in models.LeadIntake
			return e.DB.Take(&in, "id = ? AND status = ?", intake.IntakeID, models.IntakeProcessed).Error == nil && in.LeadID != ""
		}, "the intake to become a lead")
		var in models.LeadIntake
		if err := e.DB.Take(&in, "id = ?", intake.IntakeID).Error; err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/leads/" + in.LeadID + "?orgId=" + p.id, Headers: p.owner.Auth()}).Expect(200).JSON(&lead)
		if lead.Fields["region"] != "emea" {
			t.Fatalf("the web form's lead: %v", lead.Fields)
		}
		var converted struct {
			Contact struct{ ID string }
			Deal    struct{ Fields map[string]any }
		}
		e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/" + lead.ID + "/convert", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id}}).Expect(201).JSON(&converted)
		var contact fieldContact
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts/" + converted.Contact.ID + "?orgId=" + p.id, Headers: p.owner.Auth()}).
			Expect(200).JSON(&contact)
		if contact.Fields["region"] != "emea" || converted.Deal.Fields["region"] != "emea" {
			t.Fatalf("the conversion's contact %v and deal %v", contact.Fields, converted.Deal.Fields)
		}
	})
}

// Changing a field's type is a FieldChange that converts every stored
// value to the new type across batches — clearing, and counting, those
// no reading of fits — and converts the default; writes take the new type
// at once, and another organization's values are untouched.
func TestFieldTypeChangeConvertsEveryBatch(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		p, other := newPeople(t, e, models.PlanBusiness), newPeople(t, e, models.PlanBusiness)
		ids := map[*people]string{}
		for _, o := range []*people{p, other} {
			var seats fieldDef
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + o.id + "/fields", Headers: o.owner.Auth(),
				Body: map[string]any{"object": "contact", "key": "seats", "label": "Seats", "type": "text", "default": "5"}}).
				Expect(201).JSON(&seats)
			ids[o] = seats.ID
		}
		const n = activities.FieldBatchSize + 3
		texts := []string{"12", " 7.6", "twelve"}
		now := models.Now()
		var rows []models.Contact
		for i := range n {
			for _, o := range []*people{p, other} {
				rows = append(rows, models.Contact{ID: models.NewID(), OrgID: o.id, Name: "Contact", Type: models.ContactPerson,
					Fields: models.FieldValues{"seats": texts[i%3]}, CreatedAt: now, UpdatedAt: now})
			}
		}
		if err := e.DB.CreateInBatches(rows, 500).Error; err != nil {
			t.Fatal(err)
		}
		base := "/crm/organization/" + p.id + "/fields/" + ids[p]
		e.Do(apitest.Request{Method: "PATCH", Path: base, Headers: p.owner.Auth(), Body: map[string]any{"type": "select"}}).
			ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "PATCH", Path: base, Headers: p.owner.Auth(), Body: map[string]any{"type": "vector"}}).
			ExpectProblem(422, "validation_failed")
		type progress struct {
			Change, From, To   string
			Rewritten, Cleared int
			Done               bool
		}
		var changed struct {
			fieldDef
			Type     string
			Default  any
			Progress progress
		}
		e.Do(apitest.Request{Method: "PATCH", Path: base, Headers: p.owner.Auth(), Body: map[string]any{"type": "number"}}).
			Expect(202).JSON(&changed)
		if changed.Type != "number" || changed.Default != 5.0 || changed.Progress.Change != models.FieldChangeConvert ||
			changed.Progress.From != "text" || changed.Progress.To != "number" || changed.Progress.Done {
			t.Fatalf("the change: %+v", changed)
		}
		// The new type holds for writes at once.
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: p.owner.Auth(),
			Body: map[string]any{"orgId": p.id, "name": "New", "fields": map[string]any{"seats": "many"}}}).
			ExpectProblem(422, "validation_failed")
		e.Eventually(func() bool {
			changed.Progress = progress{}
			e.Do(apitest.Request{Method: "GET", Path: base, Headers: p.owner.Auth()}).Expect(200).JSON(&changed)
			return changed.Progress.Done
		}, "the conversion")
		thirds := [3]int{(n + 2) / 3, (n + 1) / 3, n / 3}
		if changed.Progress.Rewritten != n || changed.Progress.Cleared != thirds[2] {
			t.Fatalf("progress %+v, want %d rewritten, %d cleared", changed.Progress, n, thirds[2])
		}
		count := func(orgID string) map[string]int {
			var contacts []models.Contact
			if err := e.DB.Where("org_id = ?", orgID).Find(&contacts).Error; err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for _, c := range contacts {
				v, ok := c.Fields["seats"]
				out[fmt.Sprintf("%T %v %v", v, v, ok)]++
			}
			return out
		}
		want := fmt.Sprint(map[string]int{"float64 12 true": thirds[0], "float64 8 true": thirds[1], "<nil> <nil> false": thirds[2]})
		if got := fmt.Sprint(count(p.id)); got != want {
			t.Fatalf("after the conversion: %s, want %s", got, want)
		}
		want = fmt.Sprint(map[string]int{"string 12 true": thirds[0], "string  7.6 true": thirds[1], "string twelve true": thirds[2]})
		if got := fmt.Sprint(count(other.id)); got != want {
			t.Fatalf("the other organization: %s, want %s", got, want)
		}
		// A value not yet converted (as a batch still to come leaves it)
		// matches no range of the new type and sorts last; the list
		// answers.
		late := models.Contact{ID: models.NewID(), OrgID: p.id, Name: "Late", Type: models.ContactPerson,
			Fields: models.FieldValues{"seats": "1000"}, CreatedAt: now, UpdatedAt: now}
		if err := e.DB.Create(&late).Error; err != nil {
			t.Fatal(err)
		}
		var page struct{ Data []fieldContact }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?limit=100&orgId=" + p.id + "&fields.seats[gte]=10", Headers: p.owner.Auth()}).
			Expect(200).JSON(&page)
		if len(page.Data) != min(thirds[0], 100) || slices.ContainsFunc(page.Data, func(c fieldContact) bool { return c.ID == late.ID }) {
			t.Fatalf("seats ≥ 10 while a value is not converted: %d contacts", len(page.Data))
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?limit=1&orgId=" + p.id + "&sort=-fields.seats", Headers: p.owner.Auth()}).
			Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].Fields["seats"] != 12.0 {
			t.Fatalf("the highest seats first: %+v", page.Data)
		}
		// A field whose type is changing changes no further.
		if err := e.DB.Model(&models.CustomField{}).Where("id = ?", ids[p]).
			Update("progress", `{"change":"convert","rewritten":3,"from":"number","to":"text"}`).Error; err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "PATCH", Path: base, Headers: p.owner.Auth(), Body: map[string]any{"type": "text"}}).
			ExpectProblem(409, "field_changing")
	})
}

// ?sort=fields.<key> orders a list by a custom field, lowest or highest
// first, the objects without a value last and ties by id, across pages;
// with the filters; a cursor pages on only in its own order; a
// multiselect or an unknown key does not order.
func TestListsSortByACustomField(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		p := newPeople(t, e, models.PlanBusiness)
		base := "/crm/organization/" + p.id + "/fields"
		for _, def := range []map[string]any{
			{"key": "seats", "type": "decimal"}, {"key": "renewal", "type": "date"}, {"key": "vip", "type": "bool"},
			{"key": "plan", "type": "select", "options": []string{"free", "gold"}}, {"key": "regions", "type": "multiselect", "options": []string{"eu"}},
		} {
			def["object"], def["label"] = "contact", def["key"]
			e.Do(apitest.Request{Method: "POST", Path: base, Headers: p.owner.Auth(), Body: def}).Expect(201)
		}
		// Nine contacts: seats 10, 2.5, 10, none, 300, none, 2.5, 40, 7.
		seats := []any{10, 2.5, 10, nil, 300, nil, 2.5, 40, 7}
		names := map[string]int{}
		for i, s := range seats {
			fields := map[string]any{"renewal": fmt.Sprintf("2027-0%d-01", 9-i), "vip": i%3 == 0, "plan": []string{"free", "gold"}[i%2]}
			if s != nil {
				fields["seats"] = s
			}
			c := p.contact(e, "POST", "/crm/contacts", map[string]any{"name": fmt.Sprint("C", i), "fields": fields}, 201)
			names[c.ID] = i
		}
		// The list in an order, two at a time: each contact's index.
		walk := func(query string) []int {
			var out []int
			cursor := ""
			for range 10 {
				var page struct {
					Data       []fieldContact
					NextCursor *string
				}
				e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?limit=2&orgId=" + p.id + query + cursor, Headers: p.owner.Auth()}).
					Expect(200).JSON(&page)
				for _, c := range page.Data {
					out = append(out, names[c.ID])
				}
				if page.NextCursor == nil {
					return out
				}
				cursor = "&cursor=" + *page.NextCursor
			}
			t.Fatalf("%s: more pages than contacts", query)
			return nil
		}
		// sorted checks the order of query: before(a, b) tells whether
		// contact a goes before contact b, equal ones by id (by index, as
		// the ids grow), lowest first unless desc.
		sorted := func(query string, desc bool, before func(a, b int) bool) {
			t.Helper()
			got := walk(query)
			ok := len(got) == len(seats)
			for i := 1; ok && i < len(got); i++ {
				a, b := got[i-1], got[i]
				ok = before(a, b) || !before(b, a) && (a < b) != desc
			}
			if !ok {
				t.Errorf("%s: %v", query, got)
			}
		}
		num := func(i int) (float64, bool) {
			switch v := seats[i].(type) {
			case int:
				return float64(v), true
			case float64:
				return v, true
			}
			return 0, false
		}
		sorted("&sort=fields.seats", false, func(a, b int) bool {
			x, okA := num(a)
			y, okB := num(b)
			return okA && (!okB || x < y)
		})
		sorted("&sort=-fields.seats", true, func(a, b int) bool {
			x, okA := num(a)
			y, okB := num(b)
			return okA && (!okB || x > y)
		})
		sorted("&sort=fields.renewal", false, func(a, b int) bool { return a > b })
		sorted("&sort=-fields.vip", true, func(a, b int) bool { return a%3 == 0 && b%3 != 0 })
		if got := walk("&sort=fields.seats&fields.plan=gold"); fmt.Sprint(got) != "[1 7 3 5]" {
			t.Errorf("gold contacts by seats: %v, want [1 7 3 5]", got)
		}
		var page struct{ NextCursor *string }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?limit=2&sort=fields.seats&orgId=" + p.id, Headers: p.owner.Auth()}).
			Expect(200).JSON(&page)
		for _, query := range []string{"&sort=-fields.seats", "&sort=fields.renewal", ""} {
			problem := e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?orgId=" + p.id + query + "&cursor=" + *page.NextCursor,
				Headers: p.owner.Auth()}).ExpectProblem(422, "validation_failed")
			if fields := apitest.ProblemCodes(problem); fmt.Sprint(fields) != "[cursor:invalid]" {
				t.Errorf("%s with a fields.seats cursor: %v", query, fields)
			}
		}
		for _, sort := range []string{"fields.regions", "fields.nope", "name", "-fields."} {
			problem := e.Do(apitest.Request{Method: "GET", Path: "/crm/contacts?sort=" + sort + "&limit=0&orgId=" + p.id, Headers: p.owner.Auth()}).
				ExpectProblem(422, "validation_failed")
			if fields := apitest.ProblemCodes(problem); fmt.Sprint(fields) != "[limit:range sort:invalid]" {
				t.Errorf("sort=%s: %v", sort, fields)
			}
		}
	})
}
