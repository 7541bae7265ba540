package billing_test

import (
	"testing"

	"github.com/business-suite/suite/activities/stripetest"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
)

// seedChange records a change in a final state (no workflow runs for it).
func seedChange(t *testing.T, e *apitest.Env, org, status string) string {
	t.Helper()
	now := models.Now()
	c := models.SubscriptionChange{ID: models.NewID(), OrgID: org, Kind: models.ChangeCreate, FromPlan: models.PlanFree, ToPlan: models.PlanStarter,
		Interval: models.IntervalMonth, Status: status, Step: models.StepSubscription, Attempts: 1, CreatedAt: now, UpdatedAt: now}
	if status == models.ChangeFailed {
		c.LastErrorCode, c.LastErrorMessage = "card_declined", "Your card was declined."
	}
	if err := e.DB.Create(&c).Error; err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// The operator API is for billing staff only, across organizations.
func TestOpsBillingAPI(t *testing.T) {
	st := stripetest.Start(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		b := newBillingEnv(t, e, st)
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other")
		failedA, failedB := seedChange(t, e, b.org, models.ChangeFailed), seedChange(t, e, otherOrg, models.ChangeFailed)
		applied := seedChange(t, e, b.org, models.ChangeApplied)
		staff := b.staff()

		list := "/ops/v1/billing/changes?status=failed"
		e.Do(apitest.Request{Method: "GET", Path: list}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: b.owner.Auth()}).ExpectProblem(403, "staff_required")
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: apitest.Bearer(e.CreateKey(b.owner, b.org, "crm"))}).ExpectProblem(403, "staff_required")
		hdKey := e.CreateKey(b.owner, b.org, "helpdesk")
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: apitest.Bearer(hdKey)}).ExpectProblem(403, "staff_required")
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: apitest.HelpdeskKey(hdKey, b.org)}).ExpectProblem(403, "staff_required")
		e.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/" + failedA + "/retry", Headers: b.owner.Auth()}).ExpectProblem(403, "staff_required")

		type page struct {
			Data []struct {
				ID, OrgID, Status string
				LastError         *struct{ Code string }
				Retries           []any
			}
		}
		var all page
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: staff.Auth()}).Expect(200).JSON(&all)
		if len(all.Data) != 2 || all.Data[0].ID != failedB || all.Data[1].ID != failedA || all.Data[1].LastError == nil ||
			all.Data[1].LastError.Code != "card_declined" || all.Data[1].Retries == nil {
			t.Fatalf("failed changes %+v", all)
		}
		var one page
		e.Do(apitest.Request{Method: "GET", Path: list + "&orgId=" + b.org, Headers: staff.Auth()}).Expect(200).JSON(&one)
		if len(one.Data) != 1 || one.Data[0].ID != failedA || one.Data[0].OrgID != b.org {
			t.Fatalf("one organization's failed changes %+v", one)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/ops/v1/billing/changes?status=broken&orgId=nope", Headers: staff.Auth()}).ExpectProblem(422, "validation_failed")
		e.Do(apitest.Request{Method: "GET", Path: "/ops/v1/billing/changes/" + applied, Headers: staff.Auth()}).Expect(200)
		e.Do(apitest.Request{Method: "GET", Path: "/ops/v1/billing/changes/" + models.NewID(), Headers: staff.Auth()}).ExpectProblem(404, "not_found")

		e.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/" + applied + "/retry", Headers: staff.Auth()}).ExpectProblem(409, "change_applied")
		e.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/" + models.NewID() + "/retry", Headers: staff.Auth()}).ExpectProblem(404, "not_found")
		e.Do(apitest.Request{Method: "POST", Path: "/ops/v1/billing/changes/not-an-id/retry", Headers: staff.Auth()}).ExpectProblem(404, "not_found")
		if n := count(t, e.DB, &models.SubscriptionChangeRetry{}, "change_id = ?", applied); n != 0 {
			t.Fatalf("a refused retry was recorded (%d)", n)
		}
		// Each refusal is in the staff audit log, and only the refusal.
		var audited []models.StaffAuditEntry
		if err := e.DB.Where("actor = ? AND action = ?", staff.Email, models.StaffRetryChange).Order("created_at, id").Find(&audited).Error; err != nil {
			t.Fatal(err)
		}
		if len(audited) != 3 || audited[0].Target != applied || audited[0].OrgID != b.org || audited[0].Detail != "change_applied" ||
			audited[0].Channel != models.StaffViaAPI || audited[0].Outcome != models.StaffOutcomeRefused || audited[0].ActorID != staff.ID ||
			audited[1].Detail != "not_found" || audited[2].Target != "not-an-id" || audited[2].OrgID != "" {
			t.Fatalf("audit %+v", audited)
		}

		// Revoked staff lose the API with their next token.
		if _, err := models.SetUserStaff(t.Context(), e.DB, staff.Email, false); err != nil {
			t.Fatal(err)
		}
		e.SignIn(staff)
		e.Do(apitest.Request{Method: "GET", Path: list, Headers: staff.Auth()}).ExpectProblem(403, "staff_required")
	}, apitest.WithBilling(st.Config()))
}
