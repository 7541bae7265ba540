package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/smtp"
	"syscall"
	"testing"
	"time"
)

// TestMailAcceptedBeforeAKillIsNotLost is the e-mail channel's promise as
// an operator lives it: `suite dev` is killed (SIGKILL) the moment its SMTP
// listener has said 250 to the last of a batch of messages, before its
// workflows could read them; started again, it turns every one of them
// into a ticket, each exactly once.
func TestMailAcceptedBeforeAKillIsNotLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts suite processes")
	}
	smtpAddr := freeAddr(t)
	env := []string{"SUITE_DATA_DIR=" + t.TempDir(), "SUITE_HTTP_ADDR=" + freeAddr(t), "TEMPORAL_ADDRESS=" + freeAddr(t),
		"SUITE_TEMPORAL_UI_ADDR=", "SUITE_DEMO=false", "SUITE_SMTP_ADDR=" + smtpAddr, "SUITE_DEV_SMTP_ADDR=" + freeAddr(t)}
	p := startDevProcess(t, env)
	waitStatus(t, p.base+"/readyz", 200, 60*time.Second)
	token, orgID := signUpWithOrg(t, p.base, "mail-kill@example.com", "Mail Co")
	var ch struct{ Address string }
	helpdeskGet(t, p.base+"/helpdesk/channels/email", token, orgID, &ch)

	const n = 20
	for i := range n {
		msg := fmt.Sprintf("From: customer-%d@example.com\r\nTo: %s\r\nSubject: Request %d\r\nMessage-ID: <kill-%d@example.com>\r\n\r\nHelp %d.\r\n",
			i, ch.Address, i, i, i)
		if err := smtp.SendMail(smtpAddr, nil, fmt.Sprintf("customer-%d@example.com", i), []string{ch.Address}, []byte(msg)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	// Killed right after the last 250: nothing that said 250 may be lost.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p = startDevProcess(t, env)
	waitStatus(t, p.base+"/readyz", 200, 60*time.Second)
	token = signIn(t, p.base, "mail-kill@example.com")
	deadline := time.Now().Add(60 * time.Second)
	for {
		var page struct {
			Data []struct{ Subject, Channel string }
		}
		helpdeskGet(t, p.base+"/helpdesk/tickets?limit=100", token, orgID, &page)
		seen := map[string]int{}
		for _, tk := range page.Data {
			seen[tk.Subject]++
		}
		if len(page.Data) == n && len(seen) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tickets (%d subjects) after the restart, want %d, one each\n%s", len(page.Data), len(seen), n, p.out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// testPassword is the password of the users the process tests sign up.
const testPassword = "correct horse battery"

// signUpWithOrg signs up a user with email on the suite at base and creates
// an organization they own; it returns their access token and the
// organization's id.
func signUpWithOrg(t *testing.T, base, email, orgName string) (token, orgID string) {
	t.Helper()
	if code := call(t, "POST", base+"/identity/v1/users", "", map[string]string{
		"email": email, "password": testPassword, "name": "Owner"}, nil); code != 201 {
		t.Fatalf("sign up: %d", code)
	}
	token = signIn(t, base, email)
	var org struct{ ID string }
	if code := call(t, "POST", base+"/crm/organization", token, map[string]string{"name": orgName}, &org); code != 201 {
		t.Fatalf("organization: %d", code)
	}
	return token, org.ID
}

// signIn is an access token of the user with email (testPassword).
func signIn(t *testing.T, base, email string) string {
	t.Helper()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if code := call(t, "POST", base+"/identity/v1/token", "", map[string]string{"grant_type": "password", "email": email,
		"password": testPassword}, &tok); code != 200 {
		t.Fatalf("sign in: %d", code)
	}
	return tok.AccessToken
}

// helpdeskGet reads a Helpdesk route as a user of workspace.
func helpdeskGet(t *testing.T, url, token, workspace string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Workspace-Id", workspace)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
