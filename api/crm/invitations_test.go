package crm_test

import (
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

var tokenPattern = regexp.MustCompile(`inv_[A-Za-z0-9_-]{43}`)

// mailedToken waits for the invitation e-mail to address (real SMTP, into
// the Env's sink) and returns its subject, body and token.
func mailedToken(t *testing.T, e *apitest.Env, address string) (subject, body, token string) {
	t.Helper()
	m, err := e.Mail.Wait(address, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	subject, _ = dec.DecodeHeader(msg.Header.Get("Subject"))
	return subject, string(raw), tokenPattern.FindString(string(raw))
}

// Whoever registers an invited address gets nothing by signing up: the
// invitation's token — e-mailed to the address, shown once to the inviter
// — is what makes a member, and only for a user of that address.
func TestInvitationNeedsItsTokenAndTheInvitedAddress(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Victim Corp")
		e.SetPlan(orgID, models.PlanBusiness)
		address := apitest.UniqueEmail("cfo")
		inv := e.Invite(owner, orgID, address, models.RoleAdmin)

		subject, body, token := mailedToken(t, e, address)
		if token != inv.Token || !strings.Contains(subject, "Victim Corp") || !strings.Contains(body, e.BaseURL+"/crm/invitations/accept") ||
			!strings.Contains(body, "accept-invitation?token="+inv.Token) || !strings.Contains(body, "as ADMIN") {
			t.Fatalf("invitation e-mail %q:\n%s", subject, body)
		}
		var stored models.Invitation
		if err := e.DB.Take(&stored, "id = ?", inv.ID).Error; err != nil {
			t.Fatal(err)
		}
		if stored.TokenHash != models.HashKey(inv.Token) || strings.Contains(stored.TokenHash, inv.Token) {
			t.Fatal("the token is not stored as its SHA-256")
		}
		e.Eventually(func() bool {
			e.DB.Take(&stored, "id = ?", inv.ID)
			return stored.EmailStatus == models.InviteEmailSent
		}, "the e-mail to be marked sent")
		// Nothing secret in the workflow's history: its input is the id.
		var start models.WorkflowStart
		if err := e.DB.Take(&start, "workflow_id = ?", names.InvitationEmailID(inv.ID)).Error; err != nil || strings.Contains(start.Input, "inv_") {
			t.Fatalf("workflow start %+v %v", start, err)
		}

		// A stranger registers the address (no verification) and signs in:
		// no membership, no access.
		squatter := e.SignUp(address)
		var list struct{ Data []org }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: squatter.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("signing up with the invited address granted %+v", list.Data)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID + "/apikeys", Headers: squatter.Auth()}).ExpectProblem(404, "not_found")
		// Even when the identity service lists the address's account as a
		// member (mirroring), the pending invitation is not taken.
		if err := e.Identity.SetMembers(e.DB.WithContext(t.Context()), orgID, []identity.Membership{
			{OrgID: orgID, UserID: owner.ID, Role: models.RoleOwner}, {OrgID: orgID, UserID: squatter.ID, Role: models.RoleAdmin},
		}); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization", Headers: squatter.Auth()}).Expect(200).JSON(&list)
		if len(list.Data) != 0 {
			t.Fatalf("identity mirroring took the invitation: %+v", list.Data)
		}
		// Guessing is hopeless: an unknown token is a 404.
		e.Accept(squatter, "inv_"+strings.Repeat("A", 43)).ExpectProblem(404, "invitation_not_found")
		// The real token in the hands of another account is refused, and
		// says nothing about the invitation.
		other := e.SignUp(apitest.UniqueEmail("other"))
		p := e.Accept(other, inv.Token).ExpectProblem(403, "invitation_email_mismatch")
		if strings.Contains(p["detail"].(string), address) {
			t.Fatalf("the refusal reveals the address: %v", p)
		}
		// A key cannot accept.
		key := e.CreateKey(owner, orgID, "crm")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/invitations/accept", Headers: apitest.Bearer(key),
			Body: map[string]string{"token": inv.Token}}).ExpectProblem(403, "user_required")
		e.Do(apitest.Request{Method: "POST", Path: "/crm/invitations/accept", Headers: other.Auth(),
			Body: map[string]string{}}).ExpectProblem(422, "validation_failed")

		// The invited address's account with the e-mailed token: ADMIN.
		var accepted struct {
			Organization org
			Member       member
		}
		e.Accept(squatter, token).Expect(200).JSON(&accepted)
		if accepted.Organization.ID != orgID || accepted.Organization.Role != models.RoleAdmin || accepted.Member.Status != models.MemberActive ||
			accepted.Member.UserID == nil || *accepted.Member.UserID != squatter.ID {
			t.Fatalf("accepted: %+v", accepted)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + orgID + "/apikeys", Headers: squatter.Auth()}).Expect(200)
		// Single use.
		e.Accept(squatter, token).ExpectProblem(409, "invitation_used")
		if used, _ := models.SeatsInUse(e.DB, orgID); used != 2 {
			t.Fatalf("%d seats in use, want 2", used)
		}
		e.Eventually(func() bool {
			ms, err := e.Identity.UserOrgs(t.Context(), squatter.ID)
			return err == nil && len(ms) == 1 && ms[0].Role == models.RoleAdmin
		}, "the accepted invitation to reach the identity service")
	})
}

// Invitations expire, a resend replaces the token, withdrawing revokes it,
// and pending invitations hold seats.
func TestInvitationExpiryResendAndWithdrawal(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		orgID := e.CreateOrg(owner, "Lifecycle")
		e.SetPlan(orgID, models.PlanStarter) // 5 seats
		members := "/crm/organization/" + orgID + "/members"

		late := e.SignUp(apitest.UniqueEmail("late"))
		expired := e.Invite(owner, orgID, late.Email, models.RoleAgent)
		e.DB.Model(&models.Invitation{}).Where("id = ?", expired.ID).Update("expires_at", time.Now().Add(-time.Minute))
		e.Accept(late, expired.Token).ExpectProblem(410, "invitation_expired")
		var page struct {
			Data []struct {
				member
				Invitation *struct{ ID, Status, EmailStatus string }
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: members + "?status=invited", Headers: owner.Auth()}).Expect(200).JSON(&page)
		if len(page.Data) != 1 || page.Data[0].Invitation == nil || page.Data[0].Invitation.Status != "expired" {
			t.Fatalf("invited members: %+v", page.Data)
		}

		// Resend: a new token (and e-mail); the old one is revoked.
		var resent struct{ ID, Token, ExpiresAt string }
		r := e.Do(apitest.Request{Method: "POST", Path: members + "/" + expired.MemberID + "/invitation", Headers: owner.Auth()}).Expect(201)
		r.JSON(&resent)
		if resent.Token == "" || resent.Token == expired.Token || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("resent: %s", r.Body)
		}
		e.Accept(late, expired.Token).ExpectProblem(410, "invitation_revoked")
		e.Accept(late, resent.Token).Expect(200)
		e.Do(apitest.Request{Method: "POST", Path: members + "/" + expired.MemberID + "/invitation", Headers: owner.Auth()}).
			ExpectProblem(409, "not_invited")
		admin := e.AddMember(owner, orgID, models.RoleAdmin)
		ownerInvite := e.Invite(owner, orgID, apitest.UniqueEmail("co-owner"), models.RoleOwner)
		e.Do(apitest.Request{Method: "POST", Path: members + "/" + ownerInvite.MemberID + "/invitation", Headers: admin.Auth()}).
			ExpectProblem(403, "owner_required")

		// Withdrawing the invite revokes its token and frees the seat.
		gone := e.SignUp(apitest.UniqueEmail("gone"))
		withdrawn := e.Invite(owner, orgID, gone.Email, models.RoleAgent)
		before, _ := models.SeatsInUse(e.DB, orgID)
		e.Do(apitest.Request{Method: "DELETE", Path: members + "/" + withdrawn.MemberID, Headers: owner.Auth()}).Expect(204)
		after, _ := models.SeatsInUse(e.DB, orgID)
		if after != before-1 {
			t.Fatalf("seats %d → %d after withdrawing", before, after)
		}
		e.Accept(gone, withdrawn.Token).ExpectProblem(410, "invitation_revoked")

		// Pending invites hold seats: 5 seats = owner, late, admin, the
		// OWNER invite and one more invite; the next is a 402.
		e.Invite(owner, orgID, apitest.UniqueEmail("fifth"), models.RoleAgent)
		e.Do(apitest.Request{Method: "POST", Path: members, Headers: owner.Auth(),
			Body: map[string]string{"email": apitest.UniqueEmail("sixth"), "role": "AGENT"}}).ExpectProblem(402, "seat_limit_reached")
	})
}
