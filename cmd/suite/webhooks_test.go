package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestWebhooksDeliveredThroughAKill is outbound webhooks' promise as an
// operator lives it: `suite dev` is killed (SIGKILL) while it is delivering
// a batch of events to a slow receiver; started again, it delivers every
// event — the ones it had sent included, under the same webhook-id — and
// loses none.
func TestWebhooksDeliveredThroughAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts suite processes")
	}
	var (
		mu       sync.Mutex
		secret   string
		received = map[string]string{} // webhook-id → the deal it announced
		refused  int
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		time.Sleep(20 * time.Millisecond) // slow enough to be killed mid-batch
		mu.Lock()
		defer mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			refused++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct {
			Data struct{ Object struct{ ID string } }
		}
		_ = json.Unmarshal(body, &ev)
		received[r.Header.Get("webhook-id")] = ev.Data.Object.ID
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(received)
	}

	env := []string{"SUITE_DATA_DIR=" + t.TempDir(), "SUITE_HTTP_ADDR=" + freeAddr(t), "TEMPORAL_ADDRESS=" + freeAddr(t),
		"SUITE_TEMPORAL_UI_ADDR=", "SUITE_DEMO=false", "SUITE_DEV_SMTP_ADDR=" + freeAddr(t)}
	p := startDevProcess(t, env)
	waitStatus(t, p.base+"/readyz", 200, 60*time.Second)
	token, orgID := signUpWithOrg(t, p.base, "hook-kill@example.com", "Hook Co")
	var ep struct{ ID, Secret string }
	if code := call(t, "POST", p.base+"/crm/organization/"+orgID+"/webhooks", token,
		map[string]any{"url": receiver.URL + "/hooks", "events": []string{"deal.created"}}, &ep); code != 201 {
		t.Fatalf("endpoint: %d", code)
	}
	mu.Lock()
	secret = ep.Secret
	mu.Unlock()

	const n = 150
	deals := map[string]bool{}
	for i := range n {
		var d struct{ ID string }
		if code := call(t, "POST", p.base+"/crm/deals", token, map[string]any{"orgId": orgID, "title": fmt.Sprint("Deal ", i)}, &d); code != 201 {
			t.Fatalf("deal %d: %d", i, code)
		}
		deals[d.ID] = true
	}
	// Killed mid-delivery: some events are out, most are not.
	deadline := time.Now().Add(30 * time.Second)
	for count() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("%d events delivered before the kill\n%s", count(), p.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	before := count()
	if before >= n {
		t.Fatalf("all %d delivered before the kill: the test killed nothing in flight", before)
	}

	p = startDevProcess(t, env)
	waitStatus(t, p.base+"/readyz", 200, 60*time.Second)
	deadline = time.Now().Add(90 * time.Second)
	for count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events after the restart (%d before the kill)\n%s", count(), n, before, p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, deal := range received {
		if !deals[deal] {
			t.Fatalf("event %s announced %q, no deal of the test", id, deal)
		}
		delete(deals, deal)
	}
	if len(received) != n || len(deals) != 0 || refused > 0 {
		t.Fatalf("%d events, %d deals never announced, %d unverified", len(received), len(deals), refused)
	}
	t.Logf("%d delivered before the kill, all %d after the restart", before, n)
}
