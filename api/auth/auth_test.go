package auth_test

import (
	"crypto/ed25519"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// probeApp mounts each interface's middleware in front of a handler that
// reports who the caller is, so every credential rule can be tried alone.
func probeApp(t *testing.T, e *apitest.Env) *fiber.App { return probeAppOn(t, e, e.DB) }

// probeAppOn is probeApp reading the database through db.
func probeAppOn(t *testing.T, e *apitest.Env, db *gorm.DB) *fiber.App {
	issuer := e.BaseURL + "/identity"
	verifier, err := auth.NewJWKSVerifier(t.Context(), issuer+"/.well-known/jwks.json", issuer, "business-suite")
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(db, verifier)
	app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	app.Use(web.RequestIDMiddleware())
	whoami := func(c *fiber.Ctx) error {
		p := auth.From(c)
		return c.JSON(fiber.Map{"user": p.UserID, "key": p.IsKey(), "org": p.OrgID, "role": p.Role})
	}
	app.Get("/crm/probe", a.CRM(), func(c *fiber.Ctx) error {
		if _, err := a.ResolveOrg(c, c.Query("orgId")); err != nil {
			return err
		}
		return whoami(c)
	})
	app.Get("/helpdesk/probe", a.Helpdesk(), whoami)
	app.Get("/ai/probe", a.AI(), whoami)
	return app
}

type call struct {
	name    string
	path    string
	headers map[string]string
	status  int
	code    string
}

func run(t *testing.T, app *fiber.App, calls []call) {
	t.Helper()
	for _, c := range calls {
		req := httptest.NewRequest("GET", c.path, nil)
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := app.Test(req, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if c.code != "" && !strings.Contains(string(body), `"code":"`+c.code+`"`) {
			t.Errorf("%s: want code %s: %s", c.name, c.code, body)
		}
	}
}

// sign makes a token with the identity service's own key but chosen claims.
func sign(t *testing.T, e *apitest.Env, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	var row models.IdentitySigningKey
	if err := e.DB.Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = row.KID
	if key == nil {
		key = ed25519.NewKeyFromSeed(row.PrivateSeed)
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCredentialRules(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		app := probeApp(t, e)
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Acme")
		stranger := e.SignUp(apitest.UniqueEmail("stranger"))
		otherOrg := e.CreateOrg(stranger, "Other")
		crmKey := e.CreateKey(owner, org, "crm")
		hdKey := e.CreateKey(owner, org, "helpdesk")
		aiKey := e.CreateKey(owner, org, "ai")
		revoked := e.CreateKey(owner, org, "crm")
		var keys struct{ Data []struct{ ID, Last4 string } }
		e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + org + "/apikeys", Headers: owner.Auth()}).Expect(200).JSON(&keys)
		for _, k := range keys.Data {
			if k.Last4 == revoked[len(revoked)-4:] {
				e.Do(apitest.Request{Method: "DELETE", Path: "/crm/organization/" + org + "/apikeys/" + k.ID, Headers: owner.Auth()}).Expect(204)
			}
		}

		now := time.Now()
		claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
			c := jwt.MapClaims{"iss": e.BaseURL + "/identity", "aud": "business-suite", "sub": owner.ID,
				"email": owner.Email, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
			if mod != nil {
				mod(c)
			}
			return c
		}
		good := sign(t, e, jwt.SigningMethodEdDSA, nil, claims(nil))
		expired := sign(t, e, jwt.SigningMethodEdDSA, nil, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }))
		wrongAud := sign(t, e, jwt.SigningMethodEdDSA, nil, claims(func(c jwt.MapClaims) { c["aud"] = "another-api" }))
		wrongIss := sign(t, e, jwt.SigningMethodEdDSA, nil, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }))
		noExp := sign(t, e, jwt.SigningMethodEdDSA, nil, claims(func(c jwt.MapClaims) { delete(c, "exp") }))
		_, otherKey, _ := ed25519.GenerateKey(nil)
		forged := sign(t, e, jwt.SigningMethodEdDSA, otherKey, claims(nil))
		none := sign(t, e, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil))
		// One character inside the signature changed: the last characters
		// of a base64url signature carry padding bits, so a change there
		// can decode to the same bytes.
		at := len(owner.Token) - 10
		swap := byte('A')
		if owner.Token[at] == swap {
			swap = 'B'
		}
		tampered := owner.Token[:at] + string(swap) + owner.Token[at+1:]

		crm := "/crm/probe?orgId=" + org
		run(t, app, []call{
			{"crm: no credential", crm, nil, 401, "unauthorized"},
			{"crm: not bearer", crm, map[string]string{"Authorization": "Basic abc"}, 401, "unauthorized"},
			{"crm: user token", crm, owner.Auth(), 200, ""},
			{"crm: minted good token", crm, apitest.Bearer(good), 200, ""},
			{"crm: crm key", crm, apitest.Bearer(crmKey), 200, ""},
			{"crm: crm key without orgId", "/crm/probe", apitest.Bearer(crmKey), 200, ""},
			{"crm: user without orgId", "/crm/probe", owner.Auth(), 422, "validation_failed"},
			{"crm: helpdesk key", crm, apitest.Bearer(hdKey), 403, "wrong_service_key"},
			{"crm: ai key", crm, apitest.Bearer(aiKey), 403, "wrong_service_key"},
			{"crm: revoked key", crm, apitest.Bearer(revoked), 401, "api_key_revoked"},
			{"crm: unknown key", crm, apitest.Bearer("crm_doesnotexist000000000000000000000000"), 401, "invalid_api_key"},
			{"crm: tampered token", crm, apitest.Bearer(tampered), 401, "invalid_token"},
			{"crm: expired token", crm, apitest.Bearer(expired), 401, "invalid_token"},
			{"crm: wrong audience", crm, apitest.Bearer(wrongAud), 401, "invalid_token"},
			{"crm: wrong issuer", crm, apitest.Bearer(wrongIss), 401, "invalid_token"},
			{"crm: no expiry", crm, apitest.Bearer(noExp), 401, "invalid_token"},
			{"crm: forged signature", crm, apitest.Bearer(forged), 401, "invalid_token"},
			{"crm: alg none", crm, apitest.Bearer(none), 401, "invalid_token"},
			{"crm: another org (user)", "/crm/probe?orgId=" + otherOrg, owner.Auth(), 404, "not_found"},
			{"crm: another org (key)", "/crm/probe?orgId=" + otherOrg, apitest.Bearer(crmKey), 404, "not_found"},
			{"crm: unknown org", "/crm/probe?orgId=" + models.NewID(), owner.Auth(), 404, "not_found"},
			{"crm: malformed org", "/crm/probe?orgId=nope", owner.Auth(), 404, "not_found"},

			{"hd: key + workspace", "/helpdesk/probe", apitest.HelpdeskKey(hdKey, org), 200, ""},
			{"hd: user + workspace", "/helpdesk/probe", apitest.HelpdeskUser(owner.Token, org), 200, ""},
			{"hd: nothing", "/helpdesk/probe", nil, 401, "unauthorized"},
			{"hd: key without workspace", "/helpdesk/probe", map[string]string{"X-Api-Key": hdKey}, 401, "workspace_required"},
			{"hd: user without workspace", "/helpdesk/probe", owner.Auth(), 401, "workspace_required"},
			{"hd: hd key in Authorization", "/helpdesk/probe", map[string]string{"Authorization": "Bearer " + hdKey, "X-Workspace-Id": org}, 401, "api_key_in_authorization"},
			{"hd: crm key", "/helpdesk/probe", apitest.HelpdeskKey(crmKey, org), 403, "wrong_service_key"},
			{"hd: ai key", "/helpdesk/probe", apitest.HelpdeskKey(aiKey, org), 403, "wrong_service_key"},
			{"hd: another workspace (key)", "/helpdesk/probe", apitest.HelpdeskKey(hdKey, otherOrg), 404, "not_found"},
			{"hd: another workspace (user)", "/helpdesk/probe", apitest.HelpdeskUser(owner.Token, otherOrg), 404, "not_found"},
			{"hd: expired token", "/helpdesk/probe", apitest.HelpdeskUser(expired, org), 401, "invalid_token"},
			{"hd: unknown key", "/helpdesk/probe", apitest.HelpdeskKey("hd_nope", org), 401, "invalid_api_key"},

			{"ai: free plan", "/ai/probe", apitest.Bearer(aiKey), 402, "plan_upgrade_required"},
			{"ai: user token", "/ai/probe", owner.Auth(), 401, "unauthorized"},
			{"ai: crm key", "/ai/probe", apitest.Bearer(crmKey), 403, "wrong_service_key"},
			{"ai: hd key", "/ai/probe", apitest.Bearer(hdKey), 403, "wrong_service_key"},
			{"ai: nothing", "/ai/probe", nil, 401, "unauthorized"},
		})
		for _, plan := range []string{models.PlanBusiness, models.PlanEnterprise} {
			e.SetPlan(org, plan)
			run(t, app, []call{{"ai: " + plan, "/ai/probe", apitest.Bearer(aiKey), 200, ""}})
		}
		e.SetPlan(org, models.PlanStarter)
		run(t, app, []call{{"ai: starter", "/ai/probe", apitest.Bearer(aiKey), 402, "plan_upgrade_required"}})
	})
}

// TestKeysAreCachedAndRevokedInEveryProcess: two API processes (two
// Authenticators on one database) serve a key from their caches without
// reading api_keys, and both refuse it once it is revoked behind their
// backs — by SQL, as another process or an operator would.
func TestKeysAreCachedAndRevokedInEveryProcess(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		// Process A has a database handle of its own, which counts its reads
		// of api_keys (a callback added to the Env's handle would race with
		// the relay and the worker using it).
		dbA := dbtest.Reopen(t, e.DB)
		var keyReads atomic.Int64
		if err := dbA.Callback().Query().After("gorm:query").Register("count-api-key-reads", func(tx *gorm.DB) {
			if tx.Statement.Table == "api_keys" {
				keyReads.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
		procA, procB := probeAppOn(t, e, dbA), probeApp(t, e)
		owner := e.SignUp(apitest.UniqueEmail("owner"))
		org := e.CreateOrg(owner, "Acme")
		key := e.CreateKey(owner, org, "crm")
		withKey := map[string]string{"Authorization": "Bearer " + key}
		probe := "/crm/probe?orgId=" + org
		run(t, procA, []call{{"warm A", probe, withKey, 200, ""}})
		run(t, procB, []call{{"warm B", probe, withKey, 200, ""}})
		if keyReads.Load() == 0 {
			t.Fatal("process A warmed its cache without reading api_keys: the count sees nothing")
		}
		keyReads.Store(0)
		for range 20 {
			run(t, procA, []call{{"cached", probe, withKey, 200, ""}})
		}
		if n := keyReads.Load(); n != 0 {
			t.Fatalf("%d reads of api_keys for 20 requests with a cached key", n)
		}

		epoch := func() int64 {
			n, err := models.ReadCacheEpoch(t.Context(), e.DB, models.APIKeysEpoch)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := epoch()
		dbtest.MustExec(t, e.DB, "UPDATE api_keys SET last_used_at = ? WHERE hash = ?", time.Now().UTC(), models.HashKey(key))
		if epoch() != before {
			t.Fatal("lastUsedAt bookkeeping moved the api_keys epoch: every cache would empty once a minute per key")
		}
		dbtest.MustExec(t, e.DB, "UPDATE api_keys SET revoked_at = ? WHERE hash = ?", time.Now().UTC(), models.HashKey(key))
		if epoch() == before {
			t.Fatal("revoking a key did not move the api_keys epoch")
		}
		for name, app := range map[string]*fiber.App{"A": procA, "B": procB} {
			e.Eventually(func() bool {
				resp, err := app.Test(authed(probe, withKey), 10_000)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode == 401
			}, "process %s refuses the revoked key", name)
		}
	})
}

func authed(path string, headers map[string]string) *http.Request {
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}
