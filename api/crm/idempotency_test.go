package crm_test

import (
	"testing"

	"github.com/business-suite/suite/cmd/apitest"
)

// Idempotency-Keys belong to the principal, not to the token text: a client
// that refreshed its access token and retries gets the first response
// replayed, not a second contact. Another organization's user with the same
// key and body is another principal, and gets its own contact.
func TestIdempotentRetryAfterTokenRefreshReplays(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.SignUp(apitest.UniqueEmail("retry"))
		org := e.CreateOrg(u, "Retry")
		body := map[string]any{"orgId": org, "name": "Ada Lovelace", "email": "ada@engines.io"}
		headers := func(token string) map[string]string {
			return map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": "create-ada"}
		}
		var first, again struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: headers(u.Token), Body: body}).Expect(201).JSON(&first)

		var pair struct {
			AccessToken string `json:"access_token"`
		}
		e.Do(apitest.Request{Method: "POST", Path: "/identity/v1/token/refresh", Body: map[string]string{"refresh_token": u.Refresh}}).
			Expect(200).JSON(&pair)
		if pair.AccessToken == u.Token {
			t.Fatal("the refreshed token is the same text")
		}
		r := e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: headers(pair.AccessToken), Body: body}).Expect(201)
		r.JSON(&again)
		if again.ID != first.ID || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after refresh: %s (first %s)", r.Body, first.ID)
		}
		// A crm_ key is its own principal.
		key := e.CreateKey(u, org, "crm")
		var viaKey struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: map[string]string{"Authorization": "Bearer " + key, "Idempotency-Key": "create-ada"},
			Body: map[string]any{"name": "Ada Lovelace", "email": "ada@engines.io"}}).Expect(201).JSON(&viaKey)
		if viaKey.ID == first.ID {
			t.Fatal("the key's request replayed the user's")
		}

		// Another tenant, same key and (its own) body: its own contact.
		other := e.SignUp(apitest.UniqueEmail("other"))
		otherOrg := e.CreateOrg(other, "Other")
		var theirs struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: "/crm/contacts", Headers: headers(other.Token),
			Body: map[string]any{"orgId": otherOrg, "name": "Ada Lovelace", "email": "ada@engines.io"}}).Expect(201).JSON(&theirs)
		if theirs.ID == first.ID {
			t.Fatal("two tenants' keys collided")
		}
	})
}
