package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// webhookLoad is the outbound webhook delivery's name (-only matches it).
const webhookLoad = "webhook delivery"

// webhookBurst is how many deal events the delivery load sends.
const webhookBurst = 2000

// deliveryResult is what the webhook delivery load measured.
type deliveryResult struct {
	created, received int
	createTime        time.Duration
	// p50 and p99 run from the change (the event's timestamp) to its
	// receipt; rate is the deliveries a second from the first to the last.
	p50, p99 time.Duration
	rate     float64
}

func (r deliveryResult) String() string {
	return fmt.Sprintf("%-42s created %d deals in %.1f s, received %d, missing %d; change → receipt p50 %.0f ms, p99 %.0f ms; delivered at %.0f events/s",
		fmt.Sprintf("%s of a burst of %d deal events", webhookLoad, webhookBurst), r.created, r.createTime.Seconds(), r.received,
		r.created-r.received, ms(r.p50), ms(r.p99), r.rate)
}

// webhookReceiver is a webhook endpoint in this process: it keeps, for
// each delivery, the time from the change (the event's timestamp) to its
// receipt.
type webhookReceiver struct {
	srv         *http.Server
	mu          sync.Mutex
	lat         []time.Duration
	first, last time.Time
}

// newWebhookReceiver starts a receiver and points an endpoint of the
// organization at it, for deal.created: no load but the delivery one
// creates deals. It is done at the start, with the owner's token fresh.
func (b *bencher) newWebhookReceiver() (*webhookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &webhookReceiver{}
	rc.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var ev struct{ Timestamp time.Time }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ev)
		rc.mu.Lock()
		if rc.first.IsZero() {
			rc.first = now
		}
		rc.last = now
		rc.lat = append(rc.lat, now.Sub(ev.Timestamp))
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = rc.srv.Serve(ln) }()
	token, err := signIn(b.base, b.email)
	if err != nil {
		_ = rc.srv.Close()
		return nil, fmt.Errorf("sign in again: %w", err)
	}
	err = call(b.base+"/crm/organization/"+b.org+"/webhooks", token,
		map[string]any{"url": "http://" + ln.Addr().String() + "/bench", "events": []string{"deal.created"}}, nil)
	if err != nil {
		_ = rc.srv.Close()
		return nil, fmt.Errorf("create the endpoint: %w", err)
	}
	return rc, nil
}

func (rc *webhookReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.lat)
}

// webhookDelivery creates webhookBurst deals as fast as 16 connections
// allow (each a deal.created event, recorded with the deal) and measures
// how fast the endpoint's workflow delivers them to rc — one endpoint
// being one ordered queue.
func (b *bencher) webhookDelivery(rc *webhookReceiver) (deliveryResult, error) {
	var res deliveryResult
	client := &http.Client{Timeout: 10 * time.Second}
	res.created, res.createTime = burst(webhookBurst, 16, func(n int) bool {
		status, err := sendJSON(client, "POST", b.base+"/crm/deals", fmt.Sprintf(`{"title":"Webhook bench %d","amount":%d}`, n, n),
			"Authorization", "Bearer "+b.key)
		return err == nil && status == http.StatusCreated
	})

	// Wait for every event, or until none has come for 30 s.
	seen, still := 0, time.Now()
	for n := rc.count(); n < res.created && time.Since(still) < 30*time.Second; n = rc.count() {
		if n > seen {
			seen, still = n, time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res.received = len(rc.lat)
	res.p50, res.p99 = p50p99(rc.lat)
	if span := rc.last.Sub(rc.first); span > 0 {
		res.rate = float64(res.received-1) / span.Seconds()
	}
	return res, nil
}
