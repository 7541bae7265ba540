package models_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// billingOrg seeds an organization on plan with members (active) and
// invites (pending) and, when subscribed, an active Stripe subscription.
func billingOrg(t *testing.T, db *gorm.DB, plan string, members, invites int, subscribed bool) string {
	t.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: plan,
		Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&org).Error; err != nil {
		t.Fatal(err)
	}
	for i := range members + invites {
		m := models.Member{ID: models.NewID(), OrgID: org.ID, Email: fmt.Sprintf("m%d@acme.io", i), Role: models.RoleAgent,
			Status: models.MemberActive, CreatedAt: now, UpdatedAt: now}
		if i >= members {
			m.Status = models.MemberInvited
		} else {
			uid := models.NewID()
			m.UserID = &uid
		}
		if err := db.Create(&m).Error; err != nil {
			t.Fatal(err)
		}
	}
	// A removed member holds no seat.
	gone := models.Member{ID: models.NewID(), OrgID: org.ID, Email: "gone@acme.io", Role: models.RoleAgent,
		Status: models.MemberRemoved, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&gone).Error; err != nil {
		t.Fatal(err)
	}
	if subscribed {
		a := models.BillingAccount{OrgID: org.ID, StripeCustomerID: "cus_" + org.ID, StripeSubscriptionID: "sub_" + org.ID,
			SubscriptionStatus: "active", Plan: plan, Interval: models.IntervalYear, StripePriceID: "price_old", CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
	}
	return org.ID
}

func open(db *gorm.DB, req models.OpenChange) (*models.SubscriptionChange, error) {
	var c *models.SubscriptionChange
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		c, err = models.OpenSubscriptionChange(tx, req)
		return err
	})
	return c, err
}

// problem returns the code of a domain error and its field codes.
func problem(err error) (string, []string) {
	var de *models.DomainError
	if !errors.As(err, &de) {
		return "", nil
	}
	var fields []string
	for _, f := range de.Fields {
		fields = append(fields, f.Field+":"+f.Code)
	}
	return de.Code, fields
}

func TestOpenSubscriptionChangeRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		free := billingOrg(t, db, models.PlanFree, 1, 0, false)
		starter := billingOrg(t, db, models.PlanStarter, 1, 0, true)
		cases := []struct {
			name   string
			req    models.OpenChange
			kind   error
			code   string
			fields string
			want   string // the kind of change opened
		}{
			{"unknown plan and interval", models.OpenChange{OrgID: free, Plan: "platinum", Interval: "week"}, models.ErrInvalid, "validation_failed", "[interval:oneof plan:oneof]", ""},
			{"free is not bought", models.OpenChange{OrgID: free, Plan: models.PlanFree}, models.ErrInvalid, "validation_failed", "[plan:free_not_orderable]", ""},
			{"current plan", models.OpenChange{OrgID: starter, Plan: models.PlanStarter}, models.ErrInvalid, "validation_failed", "[plan:current_plan]", ""},
			{"lower plan is a downgrade", models.OpenChange{OrgID: billingOrg(t, db, models.PlanBusiness, 1, 0, true), Plan: models.PlanStarter}, models.ErrInvalid, "validation_failed", "[plan:lower_plan]", ""},
			{"unknown organization", models.OpenChange{OrgID: models.NewID(), Plan: models.PlanStarter}, models.ErrNotFound, "", "", ""},
			{"downgrade needs a subscription", models.OpenChange{OrgID: billingOrg(t, db, models.PlanBusiness, 1, 0, false), Plan: models.PlanStarter, Downgrade: true}, models.ErrConflict, "no_subscription", "", ""},
			{"downgrade must go down", models.OpenChange{OrgID: starter, Plan: models.PlanBusiness, Downgrade: true}, models.ErrInvalid, "validation_failed", "[plan:not_lower]", ""},
			{"no subscription: create", models.OpenChange{OrgID: free, Plan: models.PlanBusiness, Interval: models.IntervalYear}, nil, "", "", models.ChangeCreate},
			{"operator-set plan, no subscription: create even when lower", models.OpenChange{OrgID: billingOrg(t, db, models.PlanEnterprise, 1, 0, false), Plan: models.PlanStarter}, nil, "", "", models.ChangeCreate},
			{"higher plan: upgrade", models.OpenChange{OrgID: starter, Plan: models.PlanEnterprise}, nil, "", "", models.ChangeUpgrade},
			{"downgrade to free: cancel", models.OpenChange{OrgID: billingOrg(t, db, models.PlanStarter, 2, 0, true), Plan: models.PlanFree, Downgrade: true}, nil, "", "", models.ChangeCancel},
			{"lower paid plan: downgrade", models.OpenChange{OrgID: billingOrg(t, db, models.PlanBusiness, 3, 2, true), Plan: models.PlanStarter, Downgrade: true}, nil, "", "", models.ChangeDowngrade},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c, err := open(db, tc.req)
				if tc.kind != nil {
					code, fields := problem(err)
					if !errors.Is(err, tc.kind) || code != tc.code || fmt.Sprint(fields) != fmt.Sprint(tc.fields) && tc.fields != "" {
						t.Fatalf("got %v (code %q, fields %v), want %v %s %s", err, code, fields, tc.kind, tc.code, tc.fields)
					}
					var n int64
					db.Model(&models.SubscriptionChange{}).Where("org_id = ?", tc.req.OrgID).Count(&n)
					if n != 0 {
						t.Fatal("a refused change was recorded")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if c.Kind != tc.want || c.Status != models.ChangePending || c.Attempts != 1 || c.ToPlan != tc.req.Plan {
					t.Fatalf("opened %+v", c)
				}
				var org models.Organization
				db.Take(&org, "id = ?", tc.req.OrgID)
				if c.FromPlan != org.Plan {
					t.Fatalf("from plan %s, organization on %s", c.FromPlan, org.Plan)
				}
				if org.Plan == tc.req.Plan {
					t.Fatal("opening a change must not change the plan")
				}
			})
		}
		// Downgrades keep the subscription's interval and name its ids.
		var down models.SubscriptionChange
		db.Where("kind = ?", models.ChangeDowngrade).Take(&down)
		if down.Interval != models.IntervalYear || down.StripeSubscriptionID == "" || down.StripeCustomerID == "" {
			t.Fatalf("downgrade %+v", down)
		}
		var created models.SubscriptionChange
		db.Where("org_id = ?", free).Take(&created)
		if created.Interval != models.IntervalYear {
			t.Fatalf("create interval %q", created.Interval)
		}
	})
}

func TestDowngradeBlockedWhileSeatsExceedTheTarget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// business → starter (5 seats) with 4 members and 2 pending invites.
		org := billingOrg(t, db, models.PlanBusiness, 4, 2, true)
		_, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanStarter, Downgrade: true})
		var blocked *models.DowngradeBlocked
		if !errors.As(err, &blocked) || !errors.Is(err, models.ErrConflict) {
			t.Fatalf("got %v", err)
		}
		if code, _ := problem(err); code != "downgrade_blocked" || blocked.Seats != 5 || blocked.SeatsInUse != 6 || blocked.Plan != models.PlanStarter {
			t.Fatalf("blocked %+v code %s", blocked, code)
		}
		if blocked.Error() != "downgrade_blocked: 6 seats are in use (members and pending invites) but the starter plan has 5: remove 1 before downgrading." {
			t.Fatalf("message %q", blocked.Error())
		}
		// To free (2 seats) is blocked too; removing members unblocks.
		if _, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanFree, Downgrade: true}); !errors.As(err, &blocked) || blocked.Seats != 2 {
			t.Fatalf("to free: %v", err)
		}
		dbtest.MustExec(t, db, "UPDATE members SET status = 'removed' WHERE org_id = ? AND status = 'invited'", org)
		dbtest.MustExec(t, db, "UPDATE members SET status = 'removed' WHERE id IN (SELECT id FROM members WHERE org_id = ? AND status = 'active' LIMIT 1)", org)
		if _, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanStarter, Downgrade: true}); err != nil {
			t.Fatalf("3 members on 5 seats: %v", err)
		}
	})
}

func TestOneOpenChangePerOrganization(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := billingOrg(t, db, models.PlanFree, 1, 0, false)
		first, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanStarter})
		if err != nil {
			t.Fatal(err)
		}
		for _, status := range []string{models.ChangePending, models.ChangeAwaitingPayment} {
			if status != first.Status {
				if _, err := models.RecordChangeProgress(ctx, db, first.ID, models.ChangeProgress{Status: status}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanBusiness})
			if code, _ := problem(err); !errors.Is(err, models.ErrConflict) || code != "change_in_progress" {
				t.Fatalf("second change while the first is %s: %v", status, err)
			}
		}
		// A failed change is not open: a new one may start.
		if _, err := models.CloseSubscriptionChange(ctx, db, first.ID, models.ChangeFailed, "card_declined", "Your card was declined."); err != nil {
			t.Fatal(err)
		}
		if _, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanBusiness}); err != nil {
			t.Fatalf("after the first failed: %v", err)
		}

		// Concurrent requests: exactly one wins, the others get 409.
		org2 := billingOrg(t, db, models.PlanFree, 1, 0, false)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = open(db, models.OpenChange{OrgID: org2, Plan: models.PlanStarter})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if code, _ := problem(err); code != "change_in_progress" {
				t.Fatalf("concurrent open: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d concurrent changes opened, want 1", won)
		}
	})
}

func TestChangeStateMachine(t *testing.T) {
	allowed := map[string][]string{
		models.ChangePending:         {models.ChangeAwaitingPayment, models.ChangeScheduled, models.ChangeApplied, models.ChangeFailed, models.ChangeExpired, models.ChangeCanceled},
		models.ChangeAwaitingPayment: {models.ChangeApplied, models.ChangeFailed, models.ChangeExpired, models.ChangeCanceled},
		models.ChangeScheduled:       {models.ChangeApplied, models.ChangeFailed, models.ChangeCanceled},
		models.ChangeFailed:          {models.ChangePending},
	}
	for _, from := range models.ChangeStatuses {
		for _, to := range models.ChangeStatuses {
			want := false
			for _, a := range allowed[from] {
				want = want || a == to
			}
			if got := models.CanChangeTransition(from, to); got != want {
				t.Errorf("%s → %s: %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestProgressApplyAndClose(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		// free (2 seats) with 2 members: no seat left until the plan applies.
		org := billingOrg(t, db, models.PlanFree, 2, 0, false)
		change, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanStarter})
		if err != nil {
			t.Fatal(err)
		}
		got, err := models.RecordChangeProgress(ctx, db, change.ID, models.ChangeProgress{Step: models.StepSubscription, Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeCustomerID: "cus_1", StripeSubscriptionID: "sub_1", StripePriceID: "price_starter", StripeInvoiceID: "in_1", ClientSecret: "pi_1_secret"}})
		if err != nil || got.Status != models.ChangeAwaitingPayment || got.StripeSubscriptionID != "sub_1" || got.ClientSecret != "pi_1_secret" {
			t.Fatalf("progress %+v %v", got, err)
		}
		// Awaiting payment: the limits have not changed.
		if err := seatCheck(db, org); err == nil {
			t.Fatal("a seat was granted before payment")
		}
		if _, err := models.RecordChangeProgress(ctx, db, change.ID, models.ChangeProgress{Status: models.ChangeScheduled}); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("awaiting_payment → scheduled: %v", err)
		}
		applied, err := models.ApplySubscriptionChange(ctx, db, change.ID)
		if err != nil || applied.Status != models.ChangeApplied || applied.CompletedAt == nil || applied.Step != models.StepApply {
			t.Fatalf("apply %+v %v", applied, err)
		}
		if err := seatCheck(db, org); err != nil {
			t.Fatalf("starter has 5 seats: %v", err)
		}
		account, _ := models.FindBillingAccount(ctx, db, org)
		if account == nil || !account.HasActiveSubscription() || account.StripeSubscriptionID != "sub_1" || account.Plan != models.PlanStarter || account.StripePriceID != "price_starter" {
			t.Fatalf("account %+v", account)
		}
		// Applying again is a no-op; progress on a closed change is refused.
		if again, err := models.ApplySubscriptionChange(ctx, db, change.ID); err != nil || again.Status != models.ChangeApplied {
			t.Fatalf("apply again %v", err)
		}
		if _, err := models.RecordChangeProgress(ctx, db, change.ID, models.ChangeProgress{Step: models.StepPayment}); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("progress on an applied change: %v", err)
		}
		if _, err := models.CloseSubscriptionChange(ctx, db, change.ID, models.ChangeFailed, "x", "y"); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("failing an applied change: %v", err)
		}

		// A failed change cannot be applied.
		up, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanBusiness})
		if err != nil || up.Kind != models.ChangeUpgrade {
			t.Fatalf("upgrade %+v %v", up, err)
		}
		failed, err := models.CloseSubscriptionChange(ctx, db, up.ID, models.ChangeFailed, "card_declined", "Your card was declined.")
		if err != nil || failed.LastErrorCode != "card_declined" || failed.CompletedAt == nil {
			t.Fatalf("fail %+v %v", failed, err)
		}
		if _, err := models.ApplySubscriptionChange(ctx, db, up.ID); !errors.Is(err, models.ErrConflict) {
			t.Fatalf("applying a failed change: %v", err)
		}
		if _, err := models.CloseSubscriptionChange(ctx, db, up.ID, models.ChangeApplied, "", ""); err == nil {
			t.Fatal("applied is not a closing status")
		}
		var plan string
		db.Model(&models.Organization{}).Where("id = ?", org).Pluck("plan", &plan)
		if plan != models.PlanStarter {
			t.Fatalf("a failed upgrade changed the plan to %s", plan)
		}
	})
}

// seatCheck asks whether one more member fits the organization's plan.
func seatCheck(db *gorm.DB, orgID string) error {
	org, err := models.FindOrg(context.Background(), db, orgID)
	if err != nil {
		return err
	}
	return models.CheckSeat(db, org)
}

func TestOneStripeCustomerPerOrganization(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := billingOrg(t, db, models.PlanFree, 1, 0, false)
		first, err := models.SetStripeCustomer(ctx, db, org, "cus_first")
		if err != nil || first != "cus_first" {
			t.Fatalf("%s %v", first, err)
		}
		second, err := models.SetStripeCustomer(ctx, db, org, "cus_second")
		if err != nil || second != "cus_first" {
			t.Fatalf("second customer: %s %v", second, err)
		}
		if _, err := models.SetStripeCustomer(ctx, db, models.NewID(), "cus_x"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown org: %v", err)
		}
		// Two organizations never share a customer.
		other := billingOrg(t, db, models.PlanFree, 1, 0, false)
		if _, err := models.SetStripeCustomer(ctx, db, other, "cus_first"); !database.IsUniqueViolation(err) {
			t.Fatalf("shared customer: %v", err)
		}
	})
}

func TestRetryRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		retry := func(id string) (*models.SubscriptionChange, *models.SubscriptionChangeRetry, error) {
			var c *models.SubscriptionChange
			var r *models.SubscriptionChangeRetry
			err := db.Transaction(func(tx *gorm.DB) error {
				var err error
				c, r, err = models.RetrySubscriptionChange(tx, id, "staff-1")
				return err
			})
			return c, r, err
		}
		expectCode := func(err error, code string) {
			t.Helper()
			if got, _ := problem(err); !errors.Is(err, models.ErrConflict) || got != code {
				t.Fatalf("got %v, want 409 %s", err, code)
			}
		}
		org := billingOrg(t, db, models.PlanFree, 1, 0, false)
		change, _ := open(db, models.OpenChange{OrgID: org, Plan: models.PlanStarter})
		_, _, err := retry(change.ID)
		expectCode(err, "change_in_progress")
		if _, _, err := retry(models.NewID()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown change: %v", err)
		}
		if _, err := models.RecordChangeProgress(ctx, db, change.ID, models.ChangeProgress{Step: models.StepPayment, Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeSubscriptionID: "sub_r"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := models.CloseSubscriptionChange(ctx, db, change.ID, models.ChangeFailed, "card_declined", "Your card was declined."); err != nil {
			t.Fatal(err)
		}
		// Another change opened meanwhile blocks the retry.
		other, err := open(db, models.OpenChange{OrgID: org, Plan: models.PlanBusiness})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = retry(change.ID)
		expectCode(err, "change_in_progress")
		if _, err := models.CloseSubscriptionChange(ctx, db, other.ID, models.ChangeExpired, "payment_timeout", "No payment."); err != nil {
			t.Fatal(err)
		}
		_, _, err = retry(other.ID)
		expectCode(err, "change_not_retryable")

		c, r, err := retry(change.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != models.ChangePending || c.Attempts != 2 || c.Retry() != 1 || c.Step != models.StepPayment || c.StripeSubscriptionID != "sub_r" || c.CompletedAt != nil {
			t.Fatalf("retried change %+v", c)
		}
		if r.Number != 1 || r.RequestedBy != "staff-1" || r.FromStep != models.StepPayment || r.ErrorCode != "card_declined" || r.Outcome != models.ChangePending {
			t.Fatalf("retry record %+v", r)
		}
		// It fails again, is retried again, and is applied: each retry has
		// its outcome.
		if _, err := models.CloseSubscriptionChange(ctx, db, change.ID, models.ChangeFailed, "insufficient_funds", "Insufficient funds."); err != nil {
			t.Fatal(err)
		}
		if _, _, err := retry(change.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := models.ApplySubscriptionChange(ctx, db, change.ID); err != nil {
			t.Fatal(err)
		}
		retries, err := models.SubscriptionChangeRetries(ctx, db, change.ID)
		if err != nil || len(retries) != 2 {
			t.Fatalf("retries %v %v", retries, err)
		}
		if retries[0].Outcome != models.ChangeFailed || retries[0].OutcomeCode != "insufficient_funds" || retries[0].OutcomeAt == nil ||
			retries[1].Outcome != models.ChangeApplied || retries[1].Number != 2 || retries[1].ErrorCode != "insufficient_funds" {
			t.Fatalf("retry outcomes %+v", retries)
		}
		_, _, err = retry(change.ID)
		expectCode(err, "change_applied")

		// A failed change whose starting plan is no longer current is stale.
		stale, _ := open(db, models.OpenChange{OrgID: org, Plan: models.PlanBusiness})
		if _, err := models.CloseSubscriptionChange(ctx, db, stale.ID, models.ChangeFailed, "card_declined", "declined"); err != nil {
			t.Fatal(err)
		}
		if err := models.SetOrgPlan(ctx, db, org, models.PlanEnterprise); err != nil {
			t.Fatal(err)
		}
		_, _, err = retry(stale.ID)
		expectCode(err, "change_superseded")

		// A downgrade retry checks the seats again: a member joined since.
		big := billingOrg(t, db, models.PlanBusiness, 2, 0, true)
		down, err := open(db, models.OpenChange{OrgID: big, Plan: models.PlanFree, Downgrade: true})
		if err != nil {
			t.Fatal(err)
		}
		dbtest.MustExec(t, db, "UPDATE members SET status = 'invited' WHERE org_id = ? AND status = 'removed'", big)
		if _, err := models.CloseSubscriptionChange(ctx, db, down.ID, models.ChangeFailed, "resource_missing", "No such subscription"); err != nil {
			t.Fatal(err)
		}
		_, _, err = retry(down.ID)
		var blocked *models.DowngradeBlocked
		if !errors.As(err, &blocked) {
			t.Fatalf("downgrade retry with 3 members on 2 seats: %v", err)
		}
	})
}

func TestChangeQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		a := billingOrg(t, db, models.PlanFree, 1, 0, false)
		b := billingOrg(t, db, models.PlanFree, 1, 0, false)
		ca, _ := open(db, models.OpenChange{OrgID: a, Plan: models.PlanStarter})
		cb, _ := open(db, models.OpenChange{OrgID: b, Plan: models.PlanStarter})
		if _, err := models.CloseSubscriptionChange(ctx, db, cb.ID, models.ChangeFailed, "card_declined", "declined"); err != nil {
			t.Fatal(err)
		}
		// Another organization's change is not found.
		if _, err := models.FindSubscriptionChange(ctx, db, a, cb.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("cross-organization read: %v", err)
		}
		if _, err := models.FindSubscriptionChange(ctx, db, a, "not-an-id"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("malformed id: %v", err)
		}
		if got, err := models.FindSubscriptionChange(ctx, db, "", cb.ID); err != nil || got.ID != cb.ID {
			t.Fatalf("staff read: %v", err)
		}
		count := func(f models.ChangeFilter) int64 {
			var n int64
			if err := models.SubscriptionChanges(db, f).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if count(models.ChangeFilter{OrgID: a}) != 1 || count(models.ChangeFilter{Status: models.ChangeFailed}) != 1 ||
			count(models.ChangeFilter{}) != 2 || count(models.ChangeFilter{OrgID: a, Status: models.ChangeFailed}) != 0 {
			t.Fatal("filters")
		}
		if code, fields := problem(models.ChangeFilter{Status: "done", OrgID: "x"}.Validate()); code != "validation_failed" || len(fields) != 2 {
			t.Fatalf("bad filter: %s %v", code, fields)
		}
		overview, err := models.OrgBilling(ctx, db, a)
		if err != nil || overview.Plan != models.PlanFree || overview.Pending == nil || overview.Pending.ID != ca.ID || overview.Account != nil {
			t.Fatalf("overview %+v %v", overview, err)
		}
	})
}

func TestRecordStripeEvent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		record := func(ev models.StripeEventData) *models.EventRoute {
			t.Helper()
			if ev.Payload == "" {
				ev.Payload = `{"id":"` + ev.ID + `"}`
			}
			if ev.Created.IsZero() {
				ev.Created = time.Now()
			}
			var route *models.EventRoute
			if err := db.Transaction(func(tx *gorm.DB) error {
				var err error
				route, err = models.RecordStripeEvent(tx, ev)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return route
		}
		plan := func(org string) string {
			var p string
			db.Model(&models.Organization{}).Where("id = ?", org).Pluck("plan", &p)
			return p
		}

		// The organization's subscription, canceled in Stripe's dashboard:
		// back to free.
		paid := billingOrg(t, db, models.PlanBusiness, 1, 0, true)
		sub := "sub_" + paid
		r := record(models.StripeEventData{ID: "evt_deleted", Type: models.StripeSubscriptionDeleted, SubscriptionID: sub, SubscriptionStatus: "canceled"})
		if r.Duplicate || r.Change != nil || r.Event.OrgID != paid || r.Event.Outcome != models.EventOrgReturnedFree+","+models.EventNoOpenChange || r.Event.ProcessedAt == nil {
			t.Fatalf("route %+v event %+v", r, r.Event)
		}
		if plan(paid) != models.PlanFree {
			t.Fatalf("plan after deletion: %s", plan(paid))
		}
		account, _ := models.FindBillingAccount(ctx, db, paid)
		if account.HasActiveSubscription() || account.SubscriptionStatus != "canceled" {
			t.Fatalf("account %+v", account)
		}
		// A replay is stored once and does nothing.
		if err := models.SetOrgPlan(ctx, db, paid, models.PlanStarter); err != nil {
			t.Fatal(err)
		}
		if r := record(models.StripeEventData{ID: "evt_deleted", Type: models.StripeSubscriptionDeleted, SubscriptionID: sub}); !r.Duplicate || plan(paid) != models.PlanStarter {
			t.Fatalf("replay %+v plan %s", r, plan(paid))
		}
		var n int64
		db.Model(&models.StripeEvent{}).Where("id = ?", "evt_deleted").Count(&n)
		if n != 1 {
			t.Fatalf("%d rows for one event", n)
		}

		// Subscription updates are kept in step; an older one is stale.
		other := billingOrg(t, db, models.PlanStarter, 1, 0, true)
		osub := "sub_" + other
		end := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
		now := time.Now()
		r = record(models.StripeEventData{ID: "evt_upd_new", Type: models.StripeSubscriptionUpdated, Created: now, SubscriptionID: osub,
			SubscriptionStatus: "past_due", CurrentPeriodEnd: &end, CancelAtPeriodEnd: true})
		if r.Event.Outcome != models.EventAccountUpdated+","+models.EventNoOpenChange {
			t.Fatalf("update outcome %s", r.Event.Outcome)
		}
		r = record(models.StripeEventData{ID: "evt_upd_old", Type: models.StripeSubscriptionUpdated, Created: now.Add(-time.Minute), SubscriptionID: osub, SubscriptionStatus: "active"})
		if r.Event.Outcome != models.EventStaleIgnored+","+models.EventNoOpenChange {
			t.Fatalf("stale outcome %s", r.Event.Outcome)
		}
		account, _ = models.FindBillingAccount(ctx, db, other)
		if account.SubscriptionStatus != "past_due" || !account.CancelAtPeriodEnd || account.CurrentPeriodEnd == nil || !account.CurrentPeriodEnd.Equal(end) {
			t.Fatalf("account after updates %+v", account)
		}

		// Routed to the open change by its subscription id.
		up, err := open(db, models.OpenChange{OrgID: other, Plan: models.PlanBusiness})
		if err != nil {
			t.Fatal(err)
		}
		r = record(models.StripeEventData{ID: "evt_paid", Type: models.StripeInvoicePaid, SubscriptionID: osub, InvoiceID: "in_1"})
		if r.Change == nil || r.Change.ID != up.ID || r.Event.ChangeID != up.ID || r.Event.Outcome != models.EventDelivered {
			t.Fatalf("invoice.paid route %+v %+v", r, r.Event)
		}
		// An event for another subscription of the organization is not the change's.
		if r := record(models.StripeEventData{ID: "evt_elsewhere", Type: models.StripeInvoicePaid, SubscriptionID: "sub_unrelated", MetaOrgID: other}); r.Change != nil || r.Event.Outcome != models.EventNoRelevantChange {
			t.Fatalf("unrelated subscription %+v %+v", r, r.Event)
		}

		// A new subscription not yet recorded on its change: routed by the
		// changeId and orgId metadata.
		fresh := billingOrg(t, db, models.PlanFree, 1, 0, false)
		create, _ := open(db, models.OpenChange{OrgID: fresh, Plan: models.PlanStarter})
		r = record(models.StripeEventData{ID: "evt_meta", Type: models.StripeInvoicePaid, SubscriptionID: "sub_new", MetaOrgID: fresh, MetaChangeID: create.ID})
		if r.Change == nil || r.Change.ID != create.ID || r.Event.OrgID != fresh {
			t.Fatalf("metadata route %+v %+v", r, r.Event)
		}
		// Once recorded, the subscription id routes it.
		if _, err := models.RecordChangeProgress(ctx, db, create.ID, models.ChangeProgress{Status: models.ChangeAwaitingPayment, StripeRefs: models.StripeRefs{StripeSubscriptionID: "sub_new"}}); err != nil {
			t.Fatal(err)
		}
		if r := record(models.StripeEventData{ID: "evt_failed", Type: models.StripeInvoicePaymentFailed, SubscriptionID: "sub_new"}); r.Change == nil || r.Change.ID != create.ID {
			t.Fatalf("route by the change's subscription %+v", r)
		}

		// Unknown organizations and unhandled types are stored, not acted on.
		if r := record(models.StripeEventData{ID: "evt_nobody", Type: models.StripeInvoicePaid, SubscriptionID: "sub_nobody", MetaOrgID: models.NewID()}); r.Change != nil || r.Event.Outcome != models.EventUnrouted || r.Event.OrgID != "" {
			t.Fatalf("unrouted %+v", r.Event)
		}
		if r := record(models.StripeEventData{ID: "evt_other", Type: "charge.refunded", SubscriptionID: osub}); r.Change != nil || r.Event.Outcome != models.EventIgnoredType {
			t.Fatalf("ignored type %+v", r.Event)
		}
	})
}

func TestRecordSubscriptionState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		org := billingOrg(t, db, models.PlanStarter, 1, 0, true)
		sub := "sub_" + org
		end := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
		now := time.Now()
		if ok, err := models.RecordSubscriptionState(ctx, db, org, sub, models.SubscriptionState{Status: "active", CurrentPeriodEnd: &end}, now); err != nil || !ok {
			t.Fatalf("%v %v", ok, err)
		}
		// Older news, and news of another subscription, change nothing.
		if ok, _ := models.RecordSubscriptionState(ctx, db, org, sub, models.SubscriptionState{Status: "incomplete"}, now.Add(-time.Second)); ok {
			t.Fatal("a stale state was recorded")
		}
		if ok, _ := models.RecordSubscriptionState(ctx, db, org, "sub_other", models.SubscriptionState{Status: "canceled"}, now.Add(time.Second)); ok {
			t.Fatal("another subscription's state was recorded")
		}
		a, _ := models.FindBillingAccount(ctx, db, org)
		if a.SubscriptionStatus != "active" || a.CurrentPeriodEnd == nil || !a.CurrentPeriodEnd.Equal(end) {
			t.Fatalf("account %+v", a)
		}
	})
}
