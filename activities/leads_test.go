package activities_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/workflows/names"
)

func seedOrg(t *testing.T, db *gorm.DB, roles ...string) (string, []string) {
	t.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: models.PlanBusiness,
		Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&org).Error; err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, role := range roles {
		uid := models.NewID()
		m := models.Member{ID: models.NewID(), OrgID: org.ID, UserID: &uid, Email: role + string(rune('a'+i)) + "@acme.io",
			Role: role, Status: models.MemberActive, CreatedAt: now.Add(time.Duration(i) * time.Second), UpdatedAt: now}
		if err := db.Create(&m).Error; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return org.ID, ids
}

// intake stores an authenticated intake (crm_ key or API) of p.
func intake(t *testing.T, db *gorm.DB, orgID string, p models.IntakePayload) string {
	t.Helper()
	return storeIntake(t, db, orgID, p, true)
}

func storeIntake(t *testing.T, db *gorm.DB, orgID string, p models.IntakePayload, authenticated bool) string {
	t.Helper()
	b, _ := json.Marshal(p)
	in := models.LeadIntake{ID: models.NewID(), OrgID: orgID, DedupeKey: models.NewID(), LeadID: models.NewID(),
		Payload: string(b), Status: models.IntakeReceived, Authenticated: authenticated, CreatedAt: models.Now()}
	if err := db.Create(&in).Error; err != nil {
		t.Fatal(err)
	}
	return in.ID
}

func TestIntakeDedupesAssignsRoundRobinAndIsIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		a := &activities.Leads{DB: db}
		orgID, members := seedOrg(t, db, models.RoleOwner, models.RoleAgent, models.RoleAgent, models.RoleAgent)
		agents := members[1:]
		for _, m := range agents {
			subscribe(t, db, orgID, m)
		}

		var assignees []string
		for i, email := range []string{"a@x.io", "b@x.io", "c@x.io", "d@x.io"} {
			id := intake(t, db, orgID, models.IntakePayload{Name: "Lead", Email: email, Company: "X", Source: "referral"})
			out, err := a.UpsertLead(ctx, id)
			if err != nil || out.Duplicate {
				t.Fatalf("intake %d: %+v %v", i, out, err)
			}
			again, err := a.UpsertLead(ctx, id) // a retried activity
			if err != nil || again.LeadID != out.LeadID {
				t.Fatalf("retried upsert: %+v %v", again, err)
			}
			who, err := a.AssignLead(ctx, out.LeadID)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := a.AssignLead(ctx, out.LeadID); again != who {
				t.Fatal("a retried assignment moved the lead")
			}
			for range 2 { // a retried activity notifies once
				if _, err := a.NotifyAssignee(ctx, id, out.LeadID, who); err != nil {
					t.Fatal(err)
				}
			}
			if n := pushes(t, db, models.DerivedID(id, "notify", who)); n != 1 {
				t.Fatalf("%d pushes of the assignee's notification recorded, want 1", n)
			}
			assignees = append(assignees, who)
		}
		want := []string{agents[0], agents[1], agents[2], agents[0]}
		for i := range want {
			if assignees[i] != want[i] {
				t.Fatalf("round robin %v, want %v", assignees, want)
			}
		}
		var notes int64
		db.Model(&models.Notification{}).Where("org_id = ? AND type = ?", orgID, "lead_assigned").Count(&notes)
		if notes != 4 {
			t.Fatalf("%d notifications, want 4 (one per intake)", notes)
		}

		// The same e-mail again (any case) merges into the existing lead.
		id := intake(t, db, orgID, models.IntakePayload{Email: "A@X.io", Phone: "+14155552671", Value: 20000, Source: "event"})
		out, err := a.UpsertLead(ctx, id)
		if err != nil || !out.Duplicate {
			t.Fatalf("duplicate: %+v %v", out, err)
		}
		var lead models.Lead
		db.Take(&lead, "id = ?", out.LeadID)
		if lead.Email != "a@x.io" || lead.Phone != "+14155552671" || lead.Value != 20000 || lead.Source != "referral" || lead.Name != "Lead" {
			t.Fatalf("merge: %+v", lead)
		}
		var leads, merged int64
		db.Model(&models.Lead{}).Where("org_id = ?", orgID).Count(&leads)
		db.Model(&models.LeadActivity{}).Where("lead_id = ? AND type = 'system'", lead.ID).Count(&merged)
		if leads != 4 || merged != 1 {
			t.Fatalf("%d leads and %d merge activities, want 4 and 1", leads, merged)
		}
		// The API flags a duplicate it can see at submission time and gives
		// the existing lead's id; the merge still happens, once.
		b, _ := json.Marshal(models.IntakePayload{Email: "b@x.io", Company: "Bee"})
		flagged := models.LeadIntake{ID: models.NewID(), OrgID: orgID, DedupeKey: "flagged", Payload: string(b),
			Status: models.IntakeReceived, Duplicate: true, Authenticated: true, CreatedAt: models.Now()}
		db.Model(&models.Lead{}).Select("id").Where("org_id = ? AND email = ?", orgID, "b@x.io").Scan(&flagged.LeadID)
		if err := db.Create(&flagged).Error; err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if out, err := a.UpsertLead(ctx, flagged.ID); err != nil || !out.Duplicate || out.LeadID != flagged.LeadID {
				t.Fatalf("flagged duplicate: %+v %v", out, err)
			}
		}
		db.Model(&models.LeadActivity{}).Where("lead_id = ? AND type = 'system'", flagged.LeadID).Count(&merged)
		if merged != 1 {
			t.Fatalf("%d merge activities for the flagged duplicate, want 1", merged)
		}
		// The duplicated lead changed its e-mail before the intake ran: the
		// submission still merges into it (no endless retry on its id).
		b2, _ := json.Marshal(models.IntakePayload{Email: "c@x.io", Phone: "+14155552671"})
		var cLead models.Lead
		db.Take(&cLead, "org_id = ? AND email = ?", orgID, "c@x.io")
		moved := models.LeadIntake{ID: models.NewID(), OrgID: orgID, DedupeKey: "moved", LeadID: cLead.ID, Payload: string(b2),
			Status: models.IntakeReceived, Duplicate: true, Authenticated: true, CreatedAt: models.Now()}
		db.Create(&moved)
		db.Model(&models.Lead{}).Where("id = ?", cLead.ID).Update("email", "c-new@x.io")
		if out, err := a.UpsertLead(ctx, moved.ID); err != nil || out.LeadID != cLead.ID || !out.Duplicate {
			t.Fatalf("merge into a lead whose e-mail changed: %+v %v", out, err)
		}
		if err := a.LogIntakeActivity(ctx, id, lead.ID); err != nil {
			t.Fatal(err)
		}
		if err := a.CompleteIntake(ctx, id); err != nil {
			t.Fatal(err)
		}
		var in models.LeadIntake
		db.Take(&in, "id = ?", id)
		if in.Status != models.IntakeProcessed || !in.Duplicate || in.LeadID != lead.ID || in.ProcessedAt == nil {
			t.Fatalf("intake after processing: %+v", in)
		}
	})
}

func TestAssignLeadWithoutAgentsLeavesItUnassigned(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db, models.RoleOwner, models.RoleAdmin)
		a := &activities.Leads{DB: db}
		out, err := a.UpsertLead(context.Background(), intake(t, db, orgID, models.IntakePayload{Name: "Solo"}))
		if err != nil {
			t.Fatal(err)
		}
		who, err := a.AssignLead(context.Background(), out.LeadID)
		if err != nil || who != "" {
			t.Fatalf("assignee %q %v", who, err)
		}
	})
}

// An anonymous (orgId-only) submission whose e-mail is already a lead
// changes none of the lead's fields: it is recorded on the timeline as a
// new submission, once, however often the activity runs.
func TestAnonymousDuplicateIsOnlyRecorded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		a := &activities.Leads{DB: db}
		orgID, _ := seedOrg(t, db, models.RoleOwner, models.RoleAgent)
		first, err := a.UpsertLead(ctx, intake(t, db, orgID, models.IntakePayload{Name: "Vic", Email: "cfo@victim.example", Value: 5000, Source: "referral"}))
		if err != nil {
			t.Fatal(err)
		}
		var before models.Lead
		db.Take(&before, "id = ?", first.LeadID)

		id := storeIntake(t, db, orgID, models.IntakePayload{Name: "Mallory", Email: "CFO@victim.example", Phone: "+14155552671",
			Company: "Evil", Value: 999999999999, Source: "attack"}, false)
		for range 2 { // a retried activity records once
			out, err := a.UpsertLead(ctx, id)
			if err != nil || !out.Duplicate || !out.RecordedOnly || out.LeadID != first.LeadID {
				t.Fatalf("anonymous duplicate: %+v %v", out, err)
			}
			if err := a.LogIntakeActivity(ctx, id, out.LeadID); err != nil {
				t.Fatal(err)
			}
		}
		var after models.Lead
		db.Take(&after, "id = ?", first.LeadID)
		if after.Name != "Vic" || after.Value != 5000 || after.Source != "referral" || after.Phone != "" || after.Company != "" ||
			after.Score != before.Score || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("the anonymous submission changed the lead: %+v, was %+v", after, before)
		}
		var acts []models.LeadActivity
		db.Where("lead_id = ?", first.LeadID).Order("created_at").Find(&acts)
		if len(acts) != 1 || !strings.Contains(acts[0].Body, "not changed") || !strings.Contains(acts[0].Body, `name "Mallory"`) ||
			!strings.Contains(acts[0].Body, "value 999999999999") {
			t.Fatalf("timeline: %+v", acts)
		}
		var in models.LeadIntake
		db.Take(&in, "id = ?", id)
		if !in.Duplicate || in.LeadID != first.LeadID {
			t.Fatalf("intake: %+v", in)
		}
	})
}

// The member who created a lead (through the CRM, as models.Actor) is not
// told it was assigned to them; anyone else is.
func TestNoAssignmentNoticeForTheLeadsCreator(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		orgID, members := seedOrg(t, db, models.RoleOwner, models.RoleAgent)
		creator, other := members[0], members[1]
		now := models.Now()
		lead := models.Lead{ID: models.NewID(), OrgID: orgID, Name: "Ada", Email: "ada@x.io", Status: models.LeadNew,
			CreatedBy: models.MemberActor(creator), CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&lead).Error; err != nil {
			t.Fatal(err)
		}
		a := &activities.Leads{DB: db}
		id := intake(t, db, orgID, models.IntakePayload{Name: "Ada", Email: "ada@x.io"})
		notes := func(member string) (n int64) {
			db.Model(&models.Notification{}).Where("member_id = ? AND resource_id = ?", member, lead.ID).Count(&n)
			return n
		}
		if _, err := a.NotifyAssignee(ctx, id, lead.ID, creator); err != nil || notes(creator) != 0 {
			t.Fatalf("the creator was notified: %d notifications, %v", notes(creator), err)
		}
		// Another member is notified; without a push subscription there is
		// nothing to push, so no push is recorded.
		if _, err := a.NotifyAssignee(ctx, id, lead.ID, other); err != nil || notes(other) != 1 {
			t.Fatalf("%d notifications for the other member, want 1 (%v)", notes(other), err)
		}
		if n := pushes(t, db, models.DerivedID(id, "notify", other)); n != 0 {
			t.Fatalf("a push recorded for a member without subscriptions")
		}
		subscribe(t, db, orgID, other)
		again := intake(t, db, orgID, models.IntakePayload{Name: "Ada", Email: "ada@x.io"})
		if _, err := a.NotifyAssignee(ctx, again, lead.ID, other); err != nil {
			t.Fatal(err)
		}
		if n := pushes(t, db, models.DerivedID(again, "notify", other)); n != 1 {
			t.Fatalf("%d pushes recorded for a subscribed member, want 1", n)
		}
	})
}

// pushes counts the recorded starts of notificationID's push.
func pushes(t *testing.T, db *gorm.DB, notificationID string) int64 {
	t.Helper()
	var n int64
	if err := db.Model(&models.WorkflowStart{}).Where("workflow_id = ? AND workflow_type = ?",
		names.NotificationDeliveryID(notificationID), names.NotificationDeliveryWorkflow).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// subscribe registers a browser push subscription for member.
func subscribe(t *testing.T, db *gorm.DB, orgID, memberID string) {
	t.Helper()
	now := models.Now()
	if err := db.Create(&models.PushSubscription{ID: models.NewID(), OrgID: orgID, MemberID: memberID,
		Endpoint: "https://push.example.com/" + models.NewID(), P256dh: "key", Auth: "auth", CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
}

// A submission from an erased address is refused, its payload forgotten,
// and no lead made — however often the activity runs (a retry after its
// commit finds the intake refused and makes no blank lead).
func TestIntakeFromAnErasedAddressIsRefusedOnEveryRun(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		a := &activities.Leads{DB: db}
		orgID, _ := seedOrg(t, db, models.RoleOwner, models.RoleAgent)
		until := models.Now().Add(time.Hour)
		if err := db.Create(&models.Erasure{ID: models.NewID(), OrgID: orgID, EmailHash: models.EmailHash(orgID, "gone@example.com"),
			State: models.ErasureDone, Found: "{}", Erased: "{}", RequestedBy: "member:x", CreatedAt: models.Now(), ConfirmBy: models.Now(),
			BlockedUntil: &until}).Error; err != nil {
			t.Fatal(err)
		}
		id := storeIntake(t, db, orgID, models.IntakePayload{Name: "Gone", Email: "Gone@example.com"}, true)
		for range 2 {
			out, err := a.UpsertLead(ctx, id)
			if err != nil || !out.Refused || out.LeadID != "" {
				t.Fatalf("the erased address's intake: %+v %v", out, err)
			}
		}
		var in models.LeadIntake
		if err := db.Take(&in, "id = ?", id).Error; err != nil || in.Status != models.IntakeRefused || in.Payload != "{}" {
			t.Fatalf("the intake: %+v %v", in, err)
		}
		var n int64
		if err := db.Model(&models.Lead{}).Where("org_id = ?", orgID).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("%d leads made (%v)", n, err)
		}
	})
}
