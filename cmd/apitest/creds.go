package apitest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// User is a signed-up user with a fresh token pair.
type User struct {
	ID, Email, Name, Password string
	Token, Refresh            string
}

// Auth is the Authorization header for the user's token.
func (u *User) Auth() map[string]string { return Bearer(u.Token) }

// Bearer builds an Authorization: Bearer header.
func Bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// HelpdeskKey builds the Helpdesk's key headers.
func HelpdeskKey(key, workspace string) map[string]string {
	return map[string]string{"X-Api-Key": key, "X-Workspace-Id": workspace}
}

// HelpdeskUser builds the Helpdesk's user-token headers.
func HelpdeskUser(token, workspace string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, "X-Workspace-Id": workspace}
}

var seq atomic.Int64

// UniqueEmail returns an address no other test uses.
func UniqueEmail(prefix string) string {
	return fmt.Sprintf("%s-%d-%d@example.com", prefix, time.Now().UnixNano(), seq.Add(1))
}

// SignUp creates a user through the identity API and signs them in.
func (e *Env) SignUp(email string) *User {
	e.T.Helper()
	u := &User{Email: email, Name: "User " + email, Password: "correct horse battery"}
	var created struct{ ID string }
	e.Do(Request{Method: "POST", Path: "/identity/v1/users", Body: map[string]string{
		"email": u.Email, "password": u.Password, "name": u.Name}}).Expect(201).JSON(&created)
	u.ID = created.ID
	e.SignIn(u)
	return u
}

// SignIn refreshes u's tokens with the password grant.
func (e *Env) SignIn(u *User) {
	e.T.Helper()
	var pair struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	e.Do(Request{Method: "POST", Path: "/identity/v1/token", Body: map[string]string{
		"grant_type": "password", "email": u.Email, "password": u.Password}}).Expect(200).JSON(&pair)
	u.Token, u.Refresh = pair.AccessToken, pair.RefreshToken
}

// CreateOrg creates an organization owned by u and waits for it to be
// active (the OrgRegistration workflow runs on the real Temporal server).
func (e *Env) CreateOrg(u *User, name string) string {
	e.T.Helper()
	r := e.Do(Request{Method: "POST", Path: "/crm/organization", Headers: u.Auth(), Body: map[string]string{"name": name}})
	var org struct{ ID, Status string }
	r.JSON(&org)
	if r.Status != 201 && r.Status != 202 {
		e.T.Fatalf("create organization: %d %s", r.Status, r.Body)
	}
	e.WaitOrgStatus(org.ID, models.OrgActive)
	return org.ID
}

// WaitOrgStatus waits until the organization reaches status.
func (e *Env) WaitOrgStatus(orgID, status string) *models.Organization {
	e.T.Helper()
	var org *models.Organization
	e.Eventually(func() bool {
		var err error
		org, err = models.FindOrg(e.T.Context(), e.DB, orgID)
		return err == nil && org.Status == status
	}, "organization %s to become %s", orgID, status)
	return org
}

// Eventually polls cond for up to 20 s.
func (e *Env) Eventually(cond func() bool, what string, args ...any) {
	e.T.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.T.Fatalf("timed out waiting for "+what, args...)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Invitation is an invite as its inviter sees it once.
type Invitation struct {
	MemberID string
	ID       string
	Token    string
}

// Invite invites email with role to orgID (as inviter) and returns the
// invitation with its token, as shown once to the inviter.
func (e *Env) Invite(inviter *User, orgID, email, role string) Invitation {
	e.T.Helper()
	var out struct {
		ID         string
		Invitation struct{ ID, Token string }
	}
	e.Do(Request{Method: "POST", Path: "/crm/organization/" + orgID + "/members", Headers: inviter.Auth(),
		Body: map[string]string{"email": email, "role": role}}).Expect(201).JSON(&out)
	if out.Invitation.Token == "" {
		e.T.Fatalf("the invite shows no token")
	}
	return Invitation{MemberID: out.ID, ID: out.Invitation.ID, Token: out.Invitation.Token}
}

// Accept accepts an invitation as u.
func (e *Env) Accept(u *User, token string) *Response {
	e.T.Helper()
	return e.Do(Request{Method: "POST", Path: "/crm/invitations/accept", Headers: u.Auth(), Body: map[string]string{"token": token}})
}

// AddMember invites a new user with role to orgID (as owner), signs them up
// and lets them accept with the invitation's token; it returns the member
// user.
func (e *Env) AddMember(owner *User, orgID, role string) *User {
	e.T.Helper()
	email := UniqueEmail(role)
	inv := e.Invite(owner, orgID, email, role)
	u := e.SignUp(email)
	e.Accept(u, inv.Token).Expect(200)
	return u
}

// CreateKey creates an API key for service in orgID and returns its text.
func (e *Env) CreateKey(owner *User, orgID, service string) string {
	e.T.Helper()
	var k struct{ Key string }
	e.Do(Request{Method: "POST", Path: "/crm/organization/" + orgID + "/apikeys", Headers: owner.Auth(),
		Body: map[string]string{"name": service + " key", "service": service}}).Expect(201).JSON(&k)
	return k.Key
}

// SetPlan moves an organization to a plan.
func (e *Env) SetPlan(orgID, plan string) {
	e.T.Helper()
	if err := models.SetOrgPlan(e.T.Context(), e.DB, orgID, plan); err != nil {
		e.T.Fatal(err)
	}
}

// Count counts model's rows in db matching where, failing the test on error.
func Count(t testing.TB, db *gorm.DB, model any, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Model(model).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
