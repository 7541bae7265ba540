package helpdesk_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/api/mailin"
	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// message is an RFC 5322 message; headers are extra "Name: value" lines.
func message(from, to, subject, body string, headers ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s@sender.example>\r\nDate: %s\r\n",
		from, to, subject, models.NewID(), time.Now().Format(time.RFC1123Z))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
	return []byte(b.String())
}

// messageIDOf is a message's Message-ID, without brackets.
func messageIDOf(raw []byte) string {
	_, rest, _ := strings.Cut(string(raw), "Message-ID: <")
	id, _, _ := strings.Cut(rest, ">")
	return id
}

// deliver sends raw over SMTP to the Env's listener; the error carries the
// SMTP reply (a *textproto.Error) when the listener refused it.
func deliver(e *apitest.Env, from string, to []string, raw []byte) error {
	return smtp.SendMail(e.SMTPAddr, nil, from, to, raw)
}

// sentTo counts the messages the suite has sent to rcpt.
func sentTo(e *apitest.Env, rcpt string) int {
	n := 0
	for _, m := range e.Mail.Messages() {
		if strings.EqualFold(m.To[0], rcpt) {
			n++
		}
	}
	return n
}

func smtpCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// mailDesk is a desk with its inbound address.
type mailDesk struct {
	*desk
	address string
}

func newMailDesk(t *testing.T, e *apitest.Env) *mailDesk {
	d := newDesk(t, e)
	var ch struct{ Address, Domain string }
	e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/channels/email", Headers: d.headers}).Expect(200).JSON(&ch)
	if ch.Address != models.WorkspaceAddress(d.id, apitest.MailDomain) || ch.Domain != apitest.MailDomain {
		t.Fatalf("channel %+v", ch)
	}
	return &mailDesk{desk: d, address: ch.Address}
}

// inbound waits until the workspace's message with messageID has been read,
// and returns it.
func (d *mailDesk) inbound(e *apitest.Env, messageID string) models.InboundEmail {
	var m models.InboundEmail
	e.Eventually(func() bool {
		return e.DB.Take(&m, "org_id = ? AND message_id = ? AND status <> ?", d.id, messageID, models.InboundReceived).Error == nil
	}, "message %s to be read", messageID)
	return m
}

func (d *mailDesk) ticket(e *apitest.Env, id string) ticket {
	var t ticket
	e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + id, Headers: d.headers}).Expect(200).JSON(&t)
	return t
}

type mailComment struct {
	ID, Body, AuthorType string
	AuthorCustomerID     *string
	Public               bool
	Delivery             *struct{ Status, Error string }
	Attachments          []struct {
		ID, Filename, ContentType string
		Size                      int
	}
}

func (d *mailDesk) comments(e *apitest.Env, ticketID string) []mailComment {
	var page struct{ Data []mailComment }
	e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + ticketID + "/comments", Headers: d.headers}).Expect(200).JSON(&page)
	return page.Data
}

// A customer writes in by e-mail, an agent answers by e-mail, the customer
// answers that by e-mail, and it all stays one ticket: the whole loop
// through the real SMTP listener, the EmailIngest and EmailSend workflows
// and the mail sink.
func TestEmailThreadRoundTrip(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		customer := apitest.UniqueEmail("maria")
		first := message("Maria Lopez <"+customer+">", d.address, "Printer on fire", "It smells of smoke.\nPlease help.")
		if err := deliver(e, customer, []string{d.address}, first); err != nil {
			t.Fatal(err)
		}
		in := d.inbound(e, messageIDOf(first))
		if in.Status != models.InboundProcessed || in.TicketID == nil || in.Via != "smtp" {
			t.Fatalf("the first message: %+v", in)
		}
		tk := d.ticket(e, *in.TicketID)
		if tk.Channel != "email" || tk.Email != customer || tk.Status != models.TicketNew || tk.CustomerID == nil {
			t.Fatalf("the ticket %+v", tk)
		}
		var full struct{ Subject, Description string }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tk.ID, Headers: d.headers}).Expect(200).JSON(&full)
		if full.Subject != "Printer on fire" || !strings.Contains(full.Description, "smells of smoke") {
			t.Fatalf("subject and description %+v", full)
		}

		// The agent answers; the reply is e-mailed from the workspace's
		// address, threaded under the customer's message.
		var reply mailComment
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent,
			Body: map[string]any{"body": "Unplug it, a technician is on the way."}}).Expect(201).JSON(&reply)
		if reply.Delivery == nil || reply.Delivery.Status != models.EmailQueued {
			t.Fatalf("the reply's delivery %+v", reply.Delivery)
		}
		sent, err := e.Mail.Wait(customer, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		h := sent.Header()
		if !strings.Contains(h.Get("From"), d.address) || !strings.Contains(h.Get("Reply-To"), d.address) ||
			!strings.Contains(h.Get("Subject"), fmt.Sprintf("[#%d]", tk.Number)) || !strings.Contains(h.Get("In-Reply-To"), messageIDOf(first)) ||
			h.Get("Message-Id") != "<c-"+reply.ID+"@"+apitest.MailDomain+">" || !bytes.Contains(sent.Data, []byte("technician")) ||
			h.Get("Auto-Submitted") != "" { // a person wrote it: auto-responders may answer
			t.Fatalf("the reply sent: %v\n%s", h, sent.Data)
		}
		e.Eventually(func() bool {
			cs := d.comments(e, tk.ID)
			return len(cs) == 1 && cs[0].Delivery != nil && cs[0].Delivery.Status == models.EmailSent
		}, "the reply's delivery to be sent")
		// An internal note never goes out.
		var note mailComment
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent,
			Body: map[string]any{"body": "Fuser recall applies.", "public": false}}).Expect(201).JSON(&note)
		if note.Delivery != nil {
			t.Fatalf("an internal note is e-mailed: %+v", note.Delivery)
		}

		// The customer answers the agent's e-mail: a comment on the ticket.
		answer := message(customer, d.address, "Re: "+h.Get("Subject"), "Unplugged, thanks.",
			"In-Reply-To: "+h.Get("Message-Id"), "References: <"+messageIDOf(first)+"> "+h.Get("Message-Id"))
		if err := deliver(e, customer, []string{d.address}, answer); err != nil {
			t.Fatal(err)
		}
		got := d.inbound(e, messageIDOf(answer))
		if got.TicketID == nil || *got.TicketID != tk.ID || got.CommentID == nil {
			t.Fatalf("the answer: %+v", got)
		}
		cs := d.comments(e, tk.ID)
		if len(cs) != 3 || cs[0].Body != "Unplugged, thanks." || cs[0].AuthorType != models.AuthorCustomer || !cs[0].Public {
			t.Fatalf("comments %+v", cs)
		}
		// Its [#number] tag alone finds the ticket too, from the requester.
		tagged := message(customer, d.address, fmt.Sprintf("Still smoking [#%d]", tk.Number), "A little.")
		if err := deliver(e, customer, []string{d.address}, tagged); err != nil {
			t.Fatal(err)
		}
		if m := d.inbound(e, messageIDOf(tagged)); m.TicketID == nil || *m.TicketID != tk.ID {
			t.Fatalf("the tagged message: %+v", m)
		}
		// Another sender copying the subject opens a ticket of their own.
		stranger := apitest.UniqueEmail("stranger")
		copied := message(stranger, d.address, fmt.Sprintf("Re: Printer [#%d]", tk.Number), "Me too.")
		if err := deliver(e, stranger, []string{d.address}, copied); err != nil {
			t.Fatal(err)
		}
		if m := d.inbound(e, messageIDOf(copied)); m.TicketID == nil || *m.TicketID == tk.ID {
			t.Fatalf("a stranger's copy of the subject joined the ticket: %+v", m)
		}
		// The agent's own reply come back (redirected, or bounced by a
		// forwarding) is the workspace's own mail: it opens nothing.
		if err := deliver(e, customer, []string{d.address}, sent.Data); err != nil {
			t.Fatal(err)
		}
		if m := d.inbound(e, "c-"+reply.ID+"@"+apitest.MailDomain); m.Status != models.InboundIgnored || m.Reason != "own_message" {
			t.Fatalf("the reply come back: %s %q", m.Status, m.Reason)
		}
	})
}

// The same message delivered twice — a sender retrying after a lost 250 —
// is one ticket; over SMTP and over the HTTP route alike.
func TestInboundMessageIsReadOnce(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		customer := apitest.UniqueEmail("twice")
		raw := message(customer, d.address, "Twice", "Hello.")
		for range 2 {
			if err := deliver(e, customer, []string{d.address}, raw); err != nil {
				t.Fatal(err)
			}
		}
		var first struct {
			ID        string
			Duplicate bool
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: raw,
			Headers: map[string]string{"X-Api-Key": d.key, "X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}}).Expect(202).JSON(&first)
		if !first.Duplicate {
			t.Fatalf("the third delivery is not told a duplicate: %+v", first)
		}
		d.inbound(e, messageIDOf(raw))
		var n int64
		e.DB.Model(&models.Ticket{}).Where("org_id = ? AND requester_email = ?", d.id, customer).Count(&n)
		if n != 1 {
			t.Fatalf("%d tickets from one message", n)
		}
		// Over HTTP, a new message; then what became of it.
		other := message(customer, d.address, "By HTTP", "Hello again.")
		var got struct{ ID, Status, Location string }
		r := e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: other,
			Headers: map[string]string{"X-Api-Key": d.key, "X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}}).Expect(202)
		r.JSON(&got)
		d.inbound(e, messageIDOf(other))
		var status struct{ Status, Reason, TicketID string }
		e.Do(apitest.Request{Method: "GET", Path: r.Header.Get("Location"), Headers: d.headers}).Expect(200).JSON(&status)
		if status.Status != models.InboundProcessed || status.TicketID == "" {
			t.Fatalf("the message's status %+v", status)
		}
	})
}

// A header with one line that net/mail refuses as a whole (no colon) is
// read as the MIME parser reads it, by the listener, the inbound route and
// the ingest alike: the message keeps its own Message-ID (an agent's reply
// threads in the customer's mail client), and the same message resent
// through another relay (one more Received: line) is the same message.
// Over HTTP, what can never become a ticket is a 422.
func TestAFlawedHeaderKeepsItsMessageID(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		customer := apitest.UniqueEmail("flawed")
		raw := message(customer, d.address, "Flawed", "Hello.", "X-Broken header line without a colon")
		if err := deliver(e, customer, []string{d.address}, raw); err != nil {
			t.Fatal(err)
		}
		m := d.inbound(e, messageIDOf(raw))
		if m.Status != models.InboundProcessed || m.TicketID == nil {
			t.Fatalf("the message: %s %q", m.Status, m.Reason)
		}
		resent := append([]byte("Received: from relay2.example by mx.example; "+time.Now().Format(time.RFC1123Z)+"\r\n"), raw...)
		headers := map[string]string{"X-Api-Key": d.key, "X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}
		var again struct {
			ID, MessageID string
			Duplicate     bool
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: resent, Headers: headers}).Expect(202).JSON(&again)
		if !again.Duplicate || again.ID != m.ID || again.MessageID != messageIDOf(raw) {
			t.Fatalf("the message resent through another relay: %+v", again)
		}
		if n := apitest.Count(t, e.DB, &models.Ticket{}, "org_id = ? AND requester_email = ?", d.id, customer); n != 1 {
			t.Fatalf("%d tickets from one message", n)
		}
		noFrom := []byte("To: " + d.address + "\r\nMessage-ID: <" + models.NewID() + "@x>\r\nSubject: Who?\r\n\r\nAnonymous.\r\n")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: noFrom, Headers: headers}).
			ExpectProblem(422, "unreadable_message")
		if n := apitest.Count(t, e.DB, &models.InboundEmail{}, "org_id = ?", d.id); n != 1 {
			t.Fatalf("%d messages stored, want 1", n)
		}
	})
}

// A message accepted and then refused by a rule of the workspace (here,
// one sender's messages an hour) is listed as rejected, with its sender,
// subject and reason, and told to the webhooks as email.rejected.
func TestMailRejectedAfterAcceptingIsListedAndTold(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		rc := apitest.Subscribe(t, e, d.owner, d.id, "email.*")
		sender := apitest.UniqueEmail("storm")
		headers := map[string]string{"X-Api-Key": d.key, "X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}
		var last []byte
		for i := range models.SenderTicketsPerHour + 2 {
			last = message(sender, d.address, fmt.Sprintf("Storm %d", i), "Again.")
			e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: last, Headers: headers}).Expect(202)
		}
		d.inbound(e, messageIDOf(last))
		var rejected struct {
			Data []struct {
				ID, From, Subject, Reason, Status string
				TicketID                          *string
			}
		}
		e.Eventually(func() bool {
			return apitest.Count(t, e.DB, &models.InboundEmail{}, "org_id = ? AND status = ?", d.id, models.InboundReceived) == 0
		}, "every message read")
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/inbound/email?status=rejected", Headers: d.headers}).Expect(200).JSON(&rejected)
		if len(rejected.Data) == 0 {
			t.Fatal("no message listed rejected")
		}
		for _, m := range rejected.Data {
			if m.Status != models.InboundRejected || m.Reason != "rate_limited" || m.From != sender || !strings.HasPrefix(m.Subject, "Storm ") || m.TicketID != nil {
				t.Fatalf("a rejected message: %+v", m)
			}
		}
		for _, m := range rejected.Data {
			e.Eventually(func() bool { return slices.Equal(rc.Types(m.ID), []string{"email.rejected"}) }, "the rejection's event")
		}
		// The person who sent them is told once (a notice an hour), with a
		// delivery status notification from the null sender.
		notice, err := e.Mail.Wait(sender, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if notice.From != "" || !strings.Contains(string(notice.Data), "multipart/report; report-type=delivery-status") ||
			!strings.Contains(string(notice.Data), "Auto-Submitted: auto-replied") || !strings.Contains(string(notice.Data), "Storm ") {
			t.Fatalf("the notice, from %q:\n%s", notice.From, notice.Data)
		}
		// Once every rejected message's EmailIngest has ended, that notice
		// is the only one.
		for _, m := range rejected.Data {
			e.Eventually(func() bool {
				desc, err := e.Temporal.DescribeWorkflowExecution(t.Context(), names.EmailIngestID(d.id, m.ID), "")
				return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
			}, "the rejected message's ingest")
		}
		if sent := sentTo(e, sender); sent != 1 {
			t.Fatalf("%d notices to the sender, want 1", sent)
		}
		// An hour later (the sender's count starts over), a rejected
		// message is read again: a ticket. One read already is refused.
		e.DB.Exec("DELETE FROM rate_counters WHERE bucket LIKE ?", "mail-sender|"+d.id+"|%")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email/" + rejected.Data[0].ID + "/retry", Headers: d.asAgent}).
			ExpectProblem(403, "admin_required")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email/" + rejected.Data[0].ID + "/retry", Headers: d.headers}).Expect(202)
		var retried models.InboundEmail
		e.Eventually(func() bool {
			return e.DB.Take(&retried, "id = ? AND status <> ?", rejected.Data[0].ID, models.InboundReceived).Error == nil
		}, "the retried message")
		if retried.Status != models.InboundProcessed || retried.TicketID == nil {
			t.Fatalf("the retried message: %s %q", retried.Status, retried.Reason)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email/" + retried.ID + "/retry", Headers: d.headers}).
			ExpectProblem(409, "not_retryable")
		rejected.Data = rejected.Data[1:]
		var dashboard struct{ RejectedEmails int }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/analytics/dashboard", Headers: d.headers}).Expect(200).JSON(&dashboard)
		if dashboard.RejectedEmails != len(rejected.Data) {
			t.Fatalf("the dashboard counts %d rejected messages, the list %d", dashboard.RejectedEmails, len(rejected.Data))
		}
		var processed struct{ Data []struct{ Status string } }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/inbound/email?status=processed&limit=5", Headers: d.headers}).Expect(200).JSON(&processed)
		if len(processed.Data) != 5 || processed.Data[0].Status != models.InboundProcessed {
			t.Fatalf("the processed messages: %+v", processed)
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/inbound/email?status=lost", Headers: d.headers}).ExpectProblem(422, "validation_failed")
	}, apitest.WithWebhookReceivers())
}

// Machines are never answered and never open tickets; a bounce marks the
// reply it bounces.
func TestAutomaticMailOpensNoTicket(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		person := apitest.UniqueEmail("person")
		tk := d.create(e, map[string]any{"subject": "Printer", "email": person})
		var reply mailComment
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets/" + tk.ID + "/comments", Headers: d.asAgent,
			Body: map[string]any{"body": "On it."}}).Expect(201).JSON(&reply)
		if _, err := e.Mail.Wait(person, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		sentID := "c-" + reply.ID + "@" + apitest.MailDomain
		cases := []struct {
			name, from, envelope, reason string
			raw                          []byte
		}{
			{"auto-submitted", person, person, "auto_submitted", message(person, d.address, "Out of office", "Away.", "Auto-Submitted: auto-replied")},
			{"precedence bulk", person, person, "precedence", message(person, d.address, "News", "Buy.", "Precedence: bulk")},
			{"an auto-reply", person, person, "autoreply", message(person, d.address, "Away", "Away.", "X-Autoreply: yes")},
			{"a list", person, person, "list", message(person, d.address, "Digest", "Posts.", "List-Id: <l.example>")},
			{"a bounce", "MAILER-DAEMON@mx.example", "", "bounce", bounce(person, d.address, sentID)},
		}
		for _, tc := range cases {
			if err := deliver(e, tc.envelope, []string{d.address}, tc.raw); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			m := d.inbound(e, messageIDOf(tc.raw))
			if m.Status != models.InboundIgnored || m.Reason != tc.reason || m.TicketID != nil {
				t.Fatalf("%s: %+v", tc.name, m)
			}
		}
		var n int64
		e.DB.Model(&models.Ticket{}).Where("org_id = ?", d.id).Count(&n)
		if n != 1 {
			t.Fatalf("%d tickets; machines opened some", n)
		}
		e.Eventually(func() bool {
			cs := d.comments(e, tk.ID)
			return cs[0].Delivery != nil && cs[0].Delivery.Status == models.EmailBounced && strings.Contains(cs[0].Delivery.Error, "550")
		}, "the bounced reply's delivery")
		if sent := sentTo(e, person); sent != 1 {
			t.Fatalf("%d messages sent to %s; an automatic message was answered", sent, person)
		}
	})
}

// bounce is a delivery report (RFC 3464) of the message originalID.
func bounce(rcpt, to, originalID string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Mail Delivery System <MAILER-DAEMON@mx.example>\r\nTo: %s\r\nSubject: Undelivered Mail\r\n", to)
	fmt.Fprintf(&b, "Message-ID: <%s@mx.example>\r\nMIME-Version: 1.0\r\n", models.NewID())
	b.WriteString("Content-Type: multipart/report; report-type=delivery-status; boundary=\"B\"\r\n\r\n")
	b.WriteString("--B\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n")
	fmt.Fprintf(&b, "--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example\r\n\r\nFinal-Recipient: rfc822; %s\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 No such user\r\n", rcpt)
	fmt.Fprintf(&b, "--B\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <%s>\r\nSubject: Re: Printer\r\n\r\n--B--\r\n", originalID)
	return []byte(b.String())
}

// The listener refuses what it must not take, with the SMTP code that
// says why, and takes the odd message that is still mail: it is stored,
// and read or rejected with a reason, never lost or crashing.
func TestSMTPListenerRefusesAndStores(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		sender := apitest.UniqueEmail("odd")
		c, err := smtp.Dial(e.SMTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Mail(sender); err != nil {
			t.Fatal(err)
		}
		if code := smtpCode(c.Rcpt("nobody@" + apitest.MailDomain)); code != 550 {
			t.Fatalf("an unknown recipient: %d", code)
		}
		if code := smtpCode(c.Rcpt("ws-00000000000000000000000000000000@" + apitest.MailDomain)); code != 550 {
			t.Fatalf("no workspace's address: %d", code)
		}
		// 10,000 recipients: the first ones are taken, the rest are 452.
		codes := map[int]int{}
		for i := range 10000 {
			err := c.Rcpt(d.address)
			if i == 0 && err != nil {
				t.Fatal(err)
			}
			codes[smtpCode(err)]++
		}
		if codes[452] < 9000 {
			t.Fatalf("recipient answers %v", codes)
		}
		if err := c.Reset(); err != nil {
			t.Fatal(err)
		}
		// Too large: 552, nothing stored.
		big := message(sender, d.address, "Huge", strings.Repeat("x", 100)+"\r\n"+strings.Repeat(strings.Repeat("y", 998)+"\r\n", 30*1024))
		if code := smtpCode(deliver(e, sender, []string{d.address}, big)); code != 552 {
			t.Fatalf("a 30 MB message: %d", code)
		}
		// A header line of 100 KB: refused by the line limit (with a 5xx, or
		// the connection is closed on the client still writing).
		long := message(sender, d.address, "Long", "Body.", "X-Long: "+strings.Repeat("z", 100<<10))
		if err := deliver(e, sender, []string{d.address}, long); err == nil || (smtpCode(err) != 0 && smtpCode(err) < 500) {
			t.Fatalf("a 100 KB header line: %v", err)
		}
		var stored int64
		e.DB.Model(&models.InboundEmail{}).Where("org_id = ?", d.id).Count(&stored)
		if stored != 0 {
			t.Fatalf("%d refused messages stored", stored)
		}

		// What can never become a ticket is refused at DATA (550 5.6.0:
		// the sending server tells its sender), and nothing is stored.
		malformed := []byte("From: " + sender + "\r\nMessage-ID: <" + models.NewID() + "@x>\r\nContent-Type: multipart/mixed; boundary=\"nope\"\r\n\r\n--nope\r\nno end")
		noFrom := []byte("To: " + d.address + "\r\nMessage-ID: <" + models.NewID() + "@x>\r\nSubject: Who?\r\n\r\nAnonymous.\r\n")
		folded := []byte(" folded first line\r\nFrom: " + sender + "\r\nMessage-ID: <" + models.NewID() + "@x>\r\nSubject: Folded\r\n\r\nBody.\r\n")
		for name, raw := range map[string][]byte{"malformed MIME": malformed, "no From": noFrom, "a header that starts folded": folded, "an empty message": nil} {
			err := deliver(e, sender, []string{d.address}, raw)
			var te *textproto.Error
			if !errors.As(err, &te) || te.Code != 550 || !strings.HasPrefix(te.Msg, "5.6.0 ") {
				t.Fatalf("%s: %v, want 550 5.6.0", name, err)
			}
		}
		if n := apitest.Count(t, e.DB, &models.InboundEmail{}, "org_id = ?", d.id); n != 0 {
			t.Fatalf("%d refused messages stored", n)
		}

		// Odd but mail: each stored, read, and a ticket.
		nulBody := message(sender, d.address, "NUL", "before\x00after")
		unknownCharset := []byte(strings.Replace(string(message(sender, d.address, "Charset", "caf\xe9")),
			"charset=utf-8", "charset=x-unknown-42", 1))
		html := []byte("From: " + sender + "\r\nMessage-ID: <" + models.NewID() + "@x>\r\nSubject: HTML\r\nContent-Type: text/html\r\n\r\n" +
			"<p>Hello <b>there</b></p><script>alert(1)</script>\r\n")
		for name, raw := range map[string][]byte{"a NUL": nulBody, "an unknown charset": unknownCharset, "HTML only": html} {
			if err := deliver(e, sender, []string{d.address}, raw); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			m := d.inbound(e, messageIDOf(raw))
			if m.Status != models.InboundProcessed {
				t.Fatalf("%s: %s %q, want processed", name, m.Status, m.Reason)
			}
			if name == "HTML only" {
				var tk struct{ Description string }
				e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + *m.TicketID, Headers: d.headers}).Expect(200).JSON(&tk)
				if !strings.Contains(tk.Description, "Hello") || strings.Contains(tk.Description, "<") || strings.Contains(tk.Description, "alert") {
					t.Fatalf("the HTML message's text: %q", tk.Description)
				}
			}
		}
	})
}

// A listener slows a sending address beyond its per-minute limit, and a
// client address beyond its own, with 451 (a real sender retries later);
// every message a client hands over counts against both, and a message
// refused is not stored.
func TestSMTPListenerSlowsFastSenders(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := mailin.Serve(ln, e.DB, e.Starter, mailin.Options{Domain: apitest.MailDomain, SenderRate: 3, ClientRate: 5})
		defer srv.Close()
		send := func(from string) int {
			return smtpCode(smtp.SendMail(srv.Addr(), nil, from, []string{d.address}, message(from, d.address, "Hello", "Hi.")))
		}
		fast, other, third := apitest.UniqueEmail("fast"), apitest.UniqueEmail("other"), apitest.UniqueEmail("third")
		for i := range 3 {
			if code := send(fast); code != 0 {
				t.Fatalf("message %d of the sender: %d", i+1, code)
			}
		}
		if code := send(fast); code != 451 {
			t.Fatalf("the sender's 4th message in a minute: %d, want 451", code)
		}
		// The client has handed over 4: one more from another sender is
		// its 5th, the next its 6th.
		if code := send(other); code != 0 {
			t.Fatalf("another sender's message: %d", code)
		}
		if code := send(third); code != 451 {
			t.Fatalf("the client's 6th message in a minute: %d, want 451", code)
		}
		var stored int64
		e.DB.Model(&models.InboundEmail{}).Where("org_id = ?", d.id).Count(&stored)
		if stored != 4 {
			t.Fatalf("%d messages stored, want 4", stored)
		}
	})
}

// Attachments are kept with the comment, listed on it and downloadable;
// another workspace reaches none of them.
func TestInboundAttachments(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		customer := apitest.UniqueEmail("files")
		pdf := []byte("%PDF-1.4 invoice")
		raw := []byte("From: " + customer + "\r\nTo: " + d.address + "\r\nSubject: Invoice\r\nMessage-ID: <" + models.NewID() + "@x>\r\n" +
			"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"M\"\r\n\r\n" +
			"--M\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nFacture jointe, caf=E9.\r\n" +
			"--M\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"invoice.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
			base64.StdEncoding.EncodeToString(pdf) + "\r\n--M--\r\n")
		if err := deliver(e, customer, []string{d.address}, raw); err != nil {
			t.Fatal(err)
		}
		m := d.inbound(e, messageIDOf(raw))
		var full struct{ Description string }
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + *m.TicketID, Headers: d.headers}).Expect(200).JSON(&full)
		if !strings.Contains(full.Description, "café") {
			t.Fatalf("the quoted-printable Latin-1 text: %q", full.Description)
		}
		// A reply with a file: listed on its comment.
		reply := []byte(strings.Replace(string(raw), "Subject: Invoice", "Subject: Re: Invoice [#"+fmt.Sprint(d.ticket(e, *m.TicketID).Number)+"]", 1))
		reply = []byte(strings.Replace(string(reply), messageIDOf(raw), models.NewID(), 1))
		if err := deliver(e, customer, []string{d.address}, reply); err != nil {
			t.Fatal(err)
		}
		d.inbound(e, messageIDOf(reply))
		cs := d.comments(e, *m.TicketID)
		if len(cs) != 1 || len(cs[0].Attachments) != 1 || cs[0].Attachments[0].Filename != "invoice.pdf" || cs[0].Attachments[0].Size != len(pdf) {
			t.Fatalf("comments %+v", cs)
		}
		// The ticket's files: the first message's (its description's) and
		// the reply's.
		var files struct {
			Data []struct {
				ID, Filename string
				CommentID    *string
			}
		}
		e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + *m.TicketID + "/attachments", Headers: d.headers}).Expect(200).JSON(&files)
		if len(files.Data) != 2 || files.Data[0].CommentID != nil || files.Data[1].CommentID == nil || *files.Data[1].CommentID != cs[0].ID {
			t.Fatalf("the ticket's files %+v", files)
		}
		path := "/helpdesk/tickets/" + *m.TicketID + "/attachments/" + cs[0].Attachments[0].ID
		r := e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.headers}).Expect(200)
		if !bytes.Equal(r.Body, pdf) || !strings.Contains(r.Header.Get("Content-Disposition"), "invoice.pdf") {
			t.Fatalf("download: %q %v", r.Body, r.Header)
		}
		e.Do(apitest.Request{Method: "GET", Path: path, Headers: d.outsider}).ExpectProblem(404, "not_found")
	})
}

// The channel's settings: the workspace's address, its own support
// addresses (which the listener then takes), the receipt switch; ADMINs
// The channel maps a header of a message that opens a ticket to a custom
// field of tickets: a valid value is set (as an import reads a cell), a
// bad one is left out and the ticket opens all the same.
func TestEmailHeadersSetTicketFields(t *testing.T) {
	apitest.EachDialect(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		for _, f := range []map[string]any{
			{"object": "ticket", "key": "tier", "label": "Tier", "type": "select", "options": []string{"gold", "silver"}},
			{"object": "ticket", "key": "seats", "label": "Seats", "type": "number"},
			{"object": "ticket", "key": "owner", "label": "Owner", "type": "member"},
		} {
			e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + d.id + "/fields", Headers: d.owner.Auth(), Body: f}).Expect(201)
		}
		p := e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/channels/email", Headers: d.headers,
			Body: map[string]any{"headerFields": map[string]string{"X-Tier": "tier", "Bad:Name": "seats", "X-Owner": "owner", "X-Plan": "plan"}}}).
			ExpectProblem(422, "validation_failed")
		for _, want := range []string{"headerFields.Bad:Name:header_name", "headerFields.X-Owner:unknown_field", "headerFields.X-Plan:unknown_field"} {
			if !slices.Contains(apitest.ProblemCodes(p), want) {
				t.Fatalf("problems %v, want %s", apitest.ProblemCodes(p), want)
			}
		}
		var ch struct {
			Acknowledge  bool
			HeaderFields map[string]string
		}
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/channels/email", Headers: d.headers,
			Body: map[string]any{"headerFields": map[string]string{"x-customer-tier": "tier", "X-Seats": "seats"}}}).Expect(200).JSON(&ch)
		if fmt.Sprint(ch.HeaderFields) != "map[X-Customer-Tier:tier X-Seats:seats]" || ch.Acknowledge {
			t.Fatalf("the channel: %+v", ch)
		}
		sender := apitest.UniqueEmail("tiered")
		good := message(sender, d.address, "Gold", "Hello.", "X-Customer-Tier: =?utf-8?q?gold?=", "X-Seats: 12")
		bad := message(sender, d.address, "Platinum", "Hello.", "X-Customer-Tier: platinum", "X-Seats: many")
		for raw, want := range map[string]string{string(good): "map[seats:12 tier:gold]", string(bad): "map[]"} {
			if err := deliver(e, sender, []string{d.address}, []byte(raw)); err != nil {
				t.Fatal(err)
			}
			m := d.inbound(e, messageIDOf([]byte(raw)))
			if m.TicketID == nil {
				t.Fatalf("no ticket: %s %q", m.Status, m.Reason)
			}
			var tk struct{ Fields map[string]any }
			e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + *m.TicketID, Headers: d.headers}).Expect(200).JSON(&tk)
			if fmt.Sprint(tk.Fields) != want {
				t.Fatalf("the ticket's fields %v, want %s", tk.Fields, want)
			}
		}
	})
}

// change them.
func TestEmailChannelSettings(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		d := newMailDesk(t, e)
		support := apitest.UniqueEmail("support")
		var added struct{ ID, Address, Status string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: d.headers,
			Body: map[string]any{"address": strings.ToUpper(support)}}).Expect(201).JSON(&added)
		if added.Address != support || added.Status != "pending" {
			t.Fatalf("added %+v", added)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: d.headers,
			Body: map[string]any{"address": support}}).ExpectProblem(409, "address_taken")
		// Another workspace naming the address takes nothing: its claim
		// stays pending, as only the workspace the address's mail reaches
		// can verify it.
		outsiderID := d.outsider["X-Workspace-Id"]
		var claim struct{ ID, Status string }
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: d.outsider,
			Body: map[string]any{"address": support}}).Expect(201).JSON(&claim)
		p := e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: d.headers,
			Body: map[string]any{"address": "mine@" + apitest.MailDomain}}).ExpectProblem(422, "validation_failed")
		if !strings.Contains(fmt.Sprint(p["errors"]), "server_domain") {
			t.Fatalf("problem %v", p)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: d.asAgent,
			Body: map[string]any{"address": apitest.UniqueEmail("agent")}}).ExpectProblem(403, "admin_required")

		// Pending, the address takes no mail.
		customer := apitest.UniqueEmail("receipt")
		if code := smtpCode(deliver(e, customer, []string{support}, message(customer, support, "Early", "?"))); code != 550 {
			t.Fatalf("mail to a pending address: %d", code)
		}
		// Each claim's verification message went to the address, from the
		// claiming workspace's own address.
		verification := func(from string) []byte {
			var raw []byte
			e.Eventually(func() bool {
				for _, m := range e.Mail.Messages() {
					if strings.EqualFold(m.From, from) && slices.ContainsFunc(m.To, func(to string) bool { return strings.EqualFold(to, support) }) {
						raw = m.Data
						return true
					}
				}
				return false
			}, "the verification message from %s", from)
			return raw
		}
		mine, theirs := verification(d.address), verification(models.WorkspaceAddress(outsiderID, apitest.MailDomain))
		// A workspace's token delivered to another workspace verifies
		// nothing there.
		if err := deliver(e, support, []string{models.WorkspaceAddress(outsiderID, apitest.MailDomain)}, mine); err != nil {
			t.Fatal(err)
		}
		// Forwarded to the workspace's own address, as the address's mail
		// will be, its own message verifies it.
		if err := deliver(e, support, []string{d.address}, mine); err != nil {
			t.Fatal(err)
		}
		addressStatus := func(headers map[string]string) string {
			var ch struct {
				Addresses []struct{ Address, Status string }
			}
			e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/channels/email", Headers: headers}).Expect(200).JSON(&ch)
			for _, a := range ch.Addresses {
				if a.Address == support {
					return a.Status
				}
			}
			return "absent"
		}
		e.Eventually(func() bool { return addressStatus(d.headers) == "verified" }, "the address to be verified")
		// The other claim, even with its own message forwarded to its own
		// workspace, stays pending: the address is verified elsewhere.
		theirMessage := messageIDOf(theirs)
		if err := deliver(e, support, []string{models.WorkspaceAddress(outsiderID, apitest.MailDomain)}, theirs); err != nil {
			t.Fatal(err)
		}
		var ignored models.InboundEmail
		e.Eventually(func() bool {
			return e.DB.Take(&ignored, "org_id = ? AND message_id = ? AND status <> ?", outsiderID, theirMessage, models.InboundReceived).Error == nil
		}, "the other workspace's verification message to be read")
		if status := addressStatus(d.outsider); status != "pending" || ignored.Reason == "address_verified" {
			t.Fatalf("another workspace's claim: %s, its message %s %q", status, ignored.Status, ignored.Reason)
		}

		// Mail to the support address reaches the workspace; with receipts
		// on, the sender gets one.
		e.Do(apitest.Request{Method: "PUT", Path: "/helpdesk/channels/email", Headers: d.headers,
			Body: map[string]any{"acknowledge": true}}).Expect(200)
		raw := message(customer, support, "Hello", "Anyone there?")
		if err := deliver(e, customer, []string{support}, raw); err != nil {
			t.Fatal(err)
		}
		m := d.inbound(e, messageIDOf(raw))
		ack, err := e.Mail.Wait(customer, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tk := d.ticket(e, *m.TicketID); !strings.Contains(ack.Header().Get("Subject"), fmt.Sprintf("[#%d]", tk.Number)) ||
			ack.Header().Get("Auto-Submitted") == "" || !strings.Contains(ack.Header().Get("In-Reply-To"), messageIDOf(raw)) {
			t.Fatalf("the receipt: %v", ack.Header())
		}
		// A sender that asks for no automatic answers gets a ticket and no
		// receipt: the EmailIngest workflow completes without sending one.
		quiet := apitest.UniqueEmail("quiet")
		suppressed := message(quiet, support, "Hello", "No receipts, please.", "X-Auto-Response-Suppress: All")
		if err := deliver(e, quiet, []string{support}, suppressed); err != nil {
			t.Fatal(err)
		}
		qm := d.inbound(e, messageIDOf(suppressed))
		var res activities.IngestResult
		if err := e.Temporal.GetWorkflow(t.Context(), names.EmailIngestID(d.id, qm.ID), "").Get(t.Context(), &res); err != nil {
			t.Fatal(err)
		}
		var acks int64
		e.DB.Model(&models.EmailMessage{}).Where("org_id = ? AND message_id = ?", d.id, "ack-"+res.TicketID+"@"+apitest.MailDomain).Count(&acks)
		if res.Status != models.InboundProcessed || res.TicketID == "" || res.Acknowledge || acks != 0 {
			t.Fatalf("a message asking for no auto-replies: %+v, %d receipts", res, acks)
		}
		// Removed: the listener refuses it.
		e.Do(apitest.Request{Method: "DELETE", Path: "/helpdesk/channels/email/addresses/" + added.ID, Headers: d.headers}).Expect(204)
		if code := smtpCode(deliver(e, customer, []string{support}, message(customer, support, "Again", "?"))); code != 550 {
			t.Fatalf("mail to a removed address: %d", code)
		}
		// The HTTP route takes keys only, and the raw message only.
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Headers: map[string]string{"Authorization": "Bearer " + d.owner.Token,
			"X-Workspace-Id": d.id, "Content-Type": "message/rfc822"}, Body: raw}).ExpectProblem(403, "key_required")
		e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Headers: d.headers,
			Body: map[string]any{"raw": "x"}}).ExpectProblem(415, "unsupported_media_type")
	})
}
