package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/business-suite/suite/models"
)

func TestAdminBillingStaffAndRetries(t *testing.T) {
	var out bytes.Buffer
	stdout = &out
	ctx := context.Background()
	db := adminDB(t)
	now := models.Now()
	user := models.IdentityUser{ID: models.NewID(), Email: "billing@suite.example", Name: "Billing", PasswordHash: "x", CreatedAt: now, UpdatedAt: now}
	org := models.Organization{ID: models.NewID(), Name: "Ops", Status: models.OrgActive, Plan: models.PlanFree, CreatedBy: models.NewID(),
		CreatedAt: now, UpdatedAt: now}
	for _, row := range []any{&user, &org} {
		if err := db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	change := func(status string) string {
		c := models.SubscriptionChange{ID: models.NewID(), OrgID: org.ID, Kind: models.ChangeCreate, FromPlan: models.PlanFree,
			ToPlan: models.PlanStarter, Interval: models.IntervalMonth, Status: status, Step: models.StepPayment, Attempts: 1,
			CreatedAt: models.Now(), UpdatedAt: models.Now()}
		if status == models.ChangeFailed {
			c.LastErrorCode = "card_declined"
		}
		if err := db.Create(&c).Error; err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	failed, applied := change(models.ChangeFailed), change(models.ChangeApplied)

	staffOf := func() bool {
		var u models.IdentityUser
		db.Take(&u, "id = ?", user.ID)
		return u.Staff
	}
	if err := run(ctx, []string{"admin", "grant-staff", "Billing@Suite.example"}); err != nil || !staffOf() {
		t.Fatalf("grant-staff: %v, staff %v", err, staffOf())
	}
	if err := run(ctx, []string{"admin", "revoke-staff", user.Email}); err != nil || staffOf() {
		t.Fatalf("revoke-staff: %v, staff %v", err, staffOf())
	}
	if err := run(ctx, []string{"admin", "grant-staff", "nobody@suite.example"}); err == nil || !strings.Contains(err.Error(), "no user") {
		t.Fatalf("unknown user: %v", err)
	}

	out.Reset()
	if err := run(ctx, []string{"admin", "billing", "list", "--status", "failed", "--org", org.ID}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), failed) || strings.Contains(out.String(), applied) || !strings.Contains(out.String(), "card_declined") {
		t.Fatalf("list of failed changes:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"admin", "billing", "list", "--org", models.NewID()}); err != nil || strings.Contains(out.String(), failed) {
		t.Fatalf("another organization's list: %v\n%s", err, out.String())
	}
	if err := run(ctx, []string{"admin", "billing", "list", "--status", "broken"}); err == nil {
		t.Fatal("an unknown status was accepted")
	}

	if err := run(ctx, []string{"admin", "billing", "retry", failed}); err == nil || !strings.Contains(err.Error(), "billing_not_configured") {
		t.Fatalf("retry without Stripe: %v", err)
	}
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_shell")
	out.Reset()
	if err := run(ctx, []string{"admin", "billing", "retry", failed}); err != nil || !strings.Contains(out.String(), "subscription/"+org.ID+"/"+failed+"/retry-1") {
		t.Fatalf("retry: %v\n%s", err, out.String())
	}
	var retries []models.SubscriptionChangeRetry
	db.Where("change_id = ?", failed).Find(&retries)
	if len(retries) != 1 || retries[0].RequestedBy != shellRequester || retries[0].FromStep != models.StepPayment {
		t.Fatalf("retry records %+v", retries)
	}
	var starts int64
	db.Model(&models.WorkflowStart{}).Where("workflow_id = ?", "subscription/"+org.ID+"/"+failed+"/retry-1").Count(&starts)
	if starts != 1 {
		t.Fatalf("%d workflow starts recorded for the retry", starts)
	}
	if err := run(ctx, []string{"admin", "billing", "retry", applied}); err == nil || !strings.Contains(err.Error(), "change_applied") {
		t.Fatalf("retry of an applied change: %v", err)
	}
	if err := run(ctx, []string{"admin", "billing", "retry", models.NewID()}); err == nil || !strings.Contains(err.Error(), "no subscription change") {
		t.Fatalf("retry of an unknown change: %v", err)
	}
	if err := run(ctx, []string{"admin", "billing"}); err == nil {
		t.Fatal("billing without a task accepted")
	}
	// Every retry from the shell is in the staff audit log, refused or not
	// (without billing configured nothing was tried).
	var audited []models.StaffAuditEntry
	if err := db.Where("channel = ?", models.StaffViaShell).Order("created_at, id").Find(&audited).Error; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range audited {
		got = append(got, a.Actor+" "+a.Outcome+" "+strings.SplitN(a.Detail, ":", 2)[0])
	}
	want := []string{"suite-admin done retry 1 from step payment",
		"suite-admin refused change_applied", "suite-admin refused not_found"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit from the shell:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
