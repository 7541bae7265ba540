package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The API process killed mid-request: a retry with the same
// Idempotency-Key on the other API makes exactly one object.

// faultAPIKill: kill -9 an API process a moment after a request with an
// Idempotency-Key has been written to it (at once, and 2 to 20 milliseconds
// later, so that the request dies at different points of its handling); the
// client retries with the same key on the other API until it succeeds (a
// 409 while the dead request's claim on the key lasts), and exactly one
// object exists. The killed API is restarted after each round.
func (t *e2e) faultAPIKill(ctx context.Context) error {
	victim, other := t.apis[1], 0
	var figures, failures []string
	worst := time.Duration(0)
	for _, delay := range []time.Duration{0, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		email := fmt.Sprintf("grace-%d@navy.mil", time.Now().UnixNano())
		body := map[string]string{"name": "Grace Hopper", "email": email, "type": "person"}
		hdr := []string{"Authorization", "Bearer " + t.crmKey, "Idempotency-Key", "e2e-kill-" + email}

		var killedAt time.Time
		var once sync.Once
		killed := make(chan struct{})
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
			once.Do(func() {
				go func() {
					time.Sleep(delay)
					killedAt = time.Now()
					_ = victim.cmd.Process.Kill() // kill -9
					close(killed)
				}()
			})
		}}
		// A connection of its own: the shared transport would resend a
		// request with an Idempotency-Key on a fresh connection by itself.
		client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		r, err := request(httptrace.WithClientTrace(ctx, trace), client, "POST", t.base(1)+"/crm/contacts", body, hdr...)
		first := "no answer"
		if err == nil {
			first = strconv.Itoa(r.status)
		}
		select {
		case <-killed:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("the request to %s was never written", victim.name)
		}
		if !victim.wait(10 * time.Second) {
			return fmt.Errorf("%s still runs after kill -9", victim.name)
		}

		attempts := 0
		var statuses []string
		for {
			attempts++
			r, err := request(ctx, t.http, "POST", t.base(other)+"/crm/contacts", body, hdr...)
			if err != nil {
				return fmt.Errorf("retry on api%d: %w", other+1, err)
			}
			statuses = append(statuses, strconv.Itoa(r.status))
			if r.status == http.StatusCreated {
				break
			}
			if r.status != http.StatusConflict || time.Since(killedAt) > 30*time.Second {
				return fmt.Errorf("retry %d on api%d answered %d: %s", attempts, other+1, r.status, r.body)
			}
			wait := time.Second
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
		recovered := time.Since(killedAt)
		worst = max(worst, recovered)
		count, err := t.countContacts(ctx, email)
		if err != nil {
			return err
		}
		t.step("kill -9 %s %s after the request was written (the client got: %s); retries on api%d answered %s, %s after the kill; %d contact(s) with its e-mail",
			victim.name, delay, first, other+1, runs(statuses), recovered.Round(100*time.Millisecond), count)
		figures = append(figures, fmt.Sprintf("+%s: first %s, retries %s, %d object", delay, first, runs(statuses), count))
		if count != 1 {
			// Go on with the other rounds: the figures tell more than the
			// first failure.
			failures = append(failures, fmt.Sprintf("killed %s after the request was written: %d contacts after the retry with the same Idempotency-Key, want exactly 1 "+
				"(the dead request's write committed but its outcome was not stored with the key, so the retry ran again once the claim expired)", delay, count))
		}
		if err := victim.start(); err != nil {
			return err
		}
		if _, err := victim.awaitReady(ctx, t.http, time.Minute); err != nil {
			return err
		}
	}
	t.figure("API kill -9 mid-request, %d rounds (kill delay after the request was written: first answer, retries on the other API, objects): %s; "+
		"rounds with more than one object %d; slowest retry success %s after the kill",
		len(figures), strings.Join(figures, "; "), len(failures), worst.Round(100*time.Millisecond))
	if len(failures) > 0 {
		return fmt.Errorf("%s", strings.Join(failures, "; "))
	}
	return nil
}

// runs writes repeated answers once with a count: "409×10, 201".
func runs(statuses []string) string {
	var out []string
	for i := 0; i < len(statuses); {
		j := i
		for j < len(statuses) && statuses[j] == statuses[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s×%d", statuses[i], j-i))
		} else {
			out = append(out, statuses[i])
		}
		i = j
	}
	return strings.Join(out, ", ")
}
