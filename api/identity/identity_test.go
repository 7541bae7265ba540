package identity_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/business-suite/suite/api/identity"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

func TestSignUpAndPasswordGrant(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		email := apitest.UniqueEmail("Ada")
		// Validation lists every bad field at once.
		p := e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/users",
			Body: map[string]string{"email": "not-an-email", "password": "short"}}).ExpectProblem(422, "validation_failed")
		for _, f := range []string{"email", "password", "name"} {
			if !strings.Contains(fmtErrors(p), `"`+f+`"`) {
				t.Errorf("field %s not reported: %v", f, p["errors"])
			}
		}
		u := e.SignUp(email)
		if u.ID == "" || u.Token == "" || u.Refresh == "" {
			t.Fatalf("sign up: %+v", u)
		}
		// E-mail addresses are case-insensitive: the same address is taken.
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/users",
			Body: map[string]string{"email": strings.ToUpper(email), "password": "another long one", "name": "X"}}).ExpectProblem(409, "email_taken")

		me := e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/me", Headers: u.Auth()}).Expect(200).Map()
		if me["id"] != u.ID || me["email"] != strings.ToLower(email) {
			t.Fatalf("me: %v", me)
		}
		// Wrong password and unknown account answer the same.
		for _, creds := range []map[string]string{
			{"grant_type": "password", "email": email, "password": "wrong password!"},
			{"grant_type": "password", "email": "nobody@example.com", "password": "wrong password!"},
		} {
			e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token", Body: creds}).ExpectProblem(401, "invalid_grant")
		}
		e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/me"}).ExpectProblem(401, "unauthorized")
		e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/me", Headers: apitest.Bearer(u.Token + "x")}).ExpectProblem(401, "invalid_token")
	})
}

func fmtErrors(p map[string]any) string {
	var b strings.Builder
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok {
			b.WriteString(`"` + m["field"].(string) + `"`)
		}
	}
	return b.String()
}

func TestRefreshTokensRotateAndReuseRevokesTheFamily(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("rot"))
		refresh := func(token string) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token/refresh", Body: map[string]string{"refresh_token": token}})
		}
		var second struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			TokenType    string `json:"token_type"`
		}
		refresh(u.Refresh).Expect(200).JSON(&second)
		if second.RefreshToken == u.Refresh || second.TokenType != "Bearer" {
			t.Fatalf("rotation: %+v", second)
		}
		// The old token is spent; presenting it again is reuse: the whole
		// family — including the new token — is revoked.
		refresh(u.Refresh).ExpectProblem(401, "refresh_token_reused")
		refresh(second.RefreshToken).ExpectProblem(401, "invalid_refresh_token")
		// Another sign-in (another family) is unaffected.
		e.SignIn(u)
		refresh(u.Refresh).Expect(200)
		refresh("rt_nonsense").ExpectProblem(401, "invalid_refresh_token")
	})
}

// Reusing a refresh token revokes the sign-in's access tokens too: every
// interface refuses them (within the few seconds an API process takes to
// re-read the revocations), while another sign-in of the same user goes
// on working.
func TestRevokedSessionRefusesItsAccessTokens(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("stolen"))
		org := e.CreateOrg(u, "Revocation")
		other := &apitest.User{Email: u.Email, Password: u.Password}
		e.SignIn(other) // a second sign-in: another session

		var second struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token/refresh", Body: map[string]string{"refresh_token": u.Refresh}}).
			Expect(200).JSON(&second)
		calls := func(token string) []apitest.Request {
			return []apitest.Request{
				{Method: "GET", Path: "/identity/v1/me", Headers: apitest.Bearer(token)},
				{Method: "GET", Path: "/crm/organization/" + org, Headers: apitest.Bearer(token)},
				{Method: "GET", Path: "/helpdesk/tickets", Headers: apitest.HelpdeskUser(token, org)},
			}
		}
		for _, token := range []string{u.Token, second.AccessToken} {
			for _, r := range calls(token) {
				e.Do(r).Expect(200)
			}
		}
		// The spent refresh token again: reuse revokes the session.
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token/refresh", Body: map[string]string{"refresh_token": u.Refresh}}).
			ExpectProblem(401, "refresh_token_reused")
		for _, token := range []string{u.Token, second.AccessToken} {
			for _, r := range calls(token) {
				e.Eventually(func() bool { return e.Do(r).Status == 401 }, "%s %s to refuse the revoked session", r.Method, r.Path)
				e.Do(r).ExpectProblem(401, "session_revoked")
			}
		}
		for _, r := range calls(other.Token) {
			e.Do(r).Expect(200)
		}
	})
}

func TestDiscoveryDocuments(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	for _, path := range []string{"/.well-known/jwks.json", "/identity/.well-known/jwks.json"} {
		jwks := e.Do(apitest.Request{Method: "GET", Path: path}).Expect(200).Map()
		keys := jwks["keys"].([]any)
		k := keys[0].(map[string]any)
		if len(keys) != 1 || k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["kid"] == "" {
			t.Fatalf("%s: %v", path, jwks)
		}
	}
	conf := e.Do(apitest.Request{Method: "GET", Path: "/.well-known/openid-configuration"}).Expect(200).Map()
	if conf["issuer"] != e.BaseURL+"/identity" || conf["jwks_uri"] != e.BaseURL+"/identity/.well-known/jwks.json" {
		t.Fatalf("discovery: %v", conf)
	}
}

func TestLoginIsRateLimitedPerAccount(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	u := e.SignUp(apitest.UniqueEmail("rl"))
	bad := map[string]string{"grant_type": "password", "email": u.Email, "password": "wrong password!"}
	for range 5 {
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token", Body: bad}).ExpectProblem(401, "invalid_grant")
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token", Body: bad})
	r.ExpectProblem(429, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// Another account from the same address is not locked out.
	other := e.SignUp(apitest.UniqueEmail("rl2"))
	if other.Token == "" {
		t.Fatal("other account locked out")
	}
}

func TestServiceEndpointsNeedTheServiceToken(t *testing.T) {
	e := apitest.New(t, database.SQLite)
	u := e.SignUp(apitest.UniqueEmail("svc"))
	orgID := models.NewID()
	path := "/identity/v1/orgs/" + orgID
	e.Do(apitest.Request{Method: "PUT", Path: path, Body: map[string]string{"name": "Acme"}}).ExpectProblem(401, "unauthorized")
	e.Do(apitest.Request{Method: "PUT", Path: path, Body: map[string]string{"name": "Acme"}, Headers: u.Auth()}).ExpectProblem(401, "unauthorized")

	svc := apitest.Bearer(apitest.ServiceToken)
	e.Do(apitest.Request{Method: "PUT", Path: path, Body: map[string]string{"name": "Acme"}, Headers: svc}).Expect(201)
	e.Do(apitest.Request{Method: "PUT", Path: path, Body: map[string]string{"name": "Acme Inc"}, Headers: svc}).Expect(200)
	members := map[string]any{"members": []map[string]string{{"userId": u.ID, "role": "OWNER"}}}
	e.Do(apitest.Request{Method: "PUT", Path: path + "/members", Body: members, Headers: svc}).Expect(200)
	unknown := map[string]any{"members": []map[string]string{{"userId": models.NewID(), "role": "AGENT"}}}
	e.Do(apitest.Request{Method: "PUT", Path: path + "/members", Body: unknown, Headers: svc}).ExpectProblem(422, "validation_failed")

	var orgs struct {
		Data []struct{ OrgID, OrgName, Role string }
	}
	e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/users/" + u.ID + "/orgs", Headers: svc}).Expect(200).JSON(&orgs)
	if len(orgs.Data) != 1 || orgs.Data[0].OrgID != orgID || orgs.Data[0].OrgName != "Acme Inc" || orgs.Data[0].Role != "OWNER" {
		t.Fatalf("user orgs: %+v", orgs)
	}
	e.Do(apitest.Request{Method: "DELETE", Path: path, Headers: svc}).Expect(204)
	e.Do(apitest.Request{Method: "DELETE", Path: path, Headers: svc}).Expect(204) // idempotent
	e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/users/" + u.ID + "/orgs", Headers: svc}).Expect(200).JSON(&orgs)
	if len(orgs.Data) != 0 {
		t.Fatalf("memberships survived deregistration: %+v", orgs)
	}
}

// Billing staff carry a `staff` claim in the tokens issued after the grant
// (and on refresh); other users' tokens have none.
func TestStaffClaim(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("staff"))
		claims := func(token string) *identity.Claims {
			t.Helper()
			c, err := e.Identity.Verify(token)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if claims(u.Token).Staff || strings.Contains(jwtPayload(t, u.Token), `"staff"`) {
			t.Fatal("a user who is not staff got the claim")
		}
		if _, err := models.SetUserStaff(t.Context(), e.DB, u.Email, true); err != nil {
			t.Fatal(err)
		}
		e.SignIn(u)
		if me := e.Do(apitest.Request{Method: "GET", Path: "/identity/v1/me", Headers: u.Auth()}).Expect(200).Map(); me["staff"] != true {
			t.Fatalf("me: %v", me)
		}
		if !claims(u.Token).Staff {
			t.Fatal("the grant is not in the next token")
		}
		var pair struct {
			AccessToken string `json:"access_token"`
		}
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token/refresh", Body: map[string]string{"refresh_token": u.Refresh}}).Expect(200).JSON(&pair)
		if !claims(pair.AccessToken).Staff {
			t.Fatal("a refreshed token lost the claim")
		}
	})
}

func jwtPayload(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
