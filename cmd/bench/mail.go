package main

import (
	"errors"
	"fmt"
	"net/smtp"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mailLoad is the inbound mail load's name (-only matches it).
const mailLoad = "SMTP inbound message, 1 KB (250)"

// mailBody is the text of each benchmark message: about 1 KB with its
// headers, a customer's plain-text request.
var mailBody = strings.Repeat("The invoice for March shows the wrong address and the wrong VAT number. ", 10)

// mailMessage is message n of the inbound mail load, from customer-n.
func mailMessage(n int, to string) (from string, raw []byte) {
	from = fmt.Sprintf("customer-%d@example.com", n)
	raw = fmt.Appendf(nil, "From: Customer %d <%s>\r\nTo: %s\r\nSubject: Invoice %d is wrong\r\nMessage-ID: <bench-%d@example.com>\r\n"+
		"Date: %s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", n, from, to, n, n, time.Now().Format(time.RFC1123Z), mailBody)
	return from, raw
}

// inboundMail is the SMTP listener taking mail: r.conns senders, each on
// one SMTP connection that it keeps for every message (as a relaying mail
// server does), each message from a new customer to the organization's
// address. Its database baseline is the one INSERT of the raw message.
var inboundMail = workload{
	drive:  func(b *bencher, r *row) error { return b.sendMail(r) },
	queues: true,
	pgScript: func(b *bencher) string {
		_, raw := mailMessage(0, b.mailbox)
		return fmt.Sprintf(`\set n random(1, 1000000000)
INSERT INTO inbound_emails (id, org_id, message_id, mail_from, rcpt, via, raw, size, status, received_at) VALUES (gen_random_uuid(), '%s', 'bench-' || gen_random_uuid() || '@example.com', 'customer-' || :n || '@example.com', '%s', 'smtp', convert_to(repeat('x', %d), 'UTF8'), %d, 'bench', now());
`, b.org, b.mailbox, len(raw), len(raw))
	},
}

// sendMail runs the inbound mail load for the row's API run and fills r: messages
// a second, latency of each message (MAIL FROM to the 250 after its data),
// and messages refused.
func (b *bencher) sendMail(r *row) error {
	var (
		next     atomic.Int64
		refused  atomic.Int64
		mu       sync.Mutex
		took     []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	next.Store(int64(b.rounds) * 10_000_000) // no Message-ID repeats across rounds
	start := time.Now()
	deadline := start.Add(r.apiRun)
	for range r.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, err := b.mailSender(deadline, &next, &refused)
			mu.Lock()
			defer mu.Unlock()
			took = append(took, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	elapsed := time.Since(start)
	r.requests = len(took) + int(refused.Load())
	r.errors = int(refused.Load())
	r.apiRPS = float64(len(took)) / elapsed.Seconds()
	r.apiP50, r.apiP99 = p50p99(took)
	return nil
}

// mailSender is one sender of the load: it sends until deadline on one
// connection and returns how long each accepted message took. A refusal
// (an SMTP reply other than 250) is counted in refused; anything else —
// the connection failing — ends the run.
func (b *bencher) mailSender(deadline time.Time, next, refused *atomic.Int64) ([]time.Duration, error) {
	c, err := smtp.Dial(b.smtp)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Hello("bench.example.com"); err != nil {
		return nil, err
	}
	var took []time.Duration
	for time.Now().Before(deadline) {
		from, raw := mailMessage(int(next.Add(1)), b.mailbox)
		t0 := time.Now()
		err := sendOn(c, from, b.mailbox, raw)
		var reply *textproto.Error
		switch {
		case err == nil:
			took = append(took, time.Since(t0))
		case errors.As(err, &reply):
			refused.Add(1)
			if err := c.Reset(); err != nil {
				return took, err
			}
		default:
			return took, err
		}
	}
	return took, c.Quit()
}

// sendOn sends one message on an open SMTP session.
func sendOn(c *smtp.Client, from, to string, raw []byte) error {
	if err := c.Mail(from); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	return w.Close()
}
