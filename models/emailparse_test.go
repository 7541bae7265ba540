package models_test

import (
	"strings"
	"testing"

	"github.com/business-suite/suite/models"
)

// mime is a message from its lines (CRLF-joined).
func mime(lines ...string) []byte { return []byte(strings.Join(lines, "\r\n") + "\r\n") }

// ParseEmail on what mail clients and servers really send: every message
// either reads into text a ticket can hold, or says why it cannot.
func TestParseEmail(t *testing.T) {
	t.Run("a corrupt attachment is named, not kept as nothing", func(t *testing.T) {
		p := models.ParseEmail(mime(
			"From: ann@example.com", "Subject: Files", "MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="B"`, "",
			"--B", "Content-Type: text/plain", "", "See attached.",
			"--B", `Content-Type: application/pdf; name="cut.pdf"`, "Content-Disposition: attachment; filename=\"cut.pdf\"",
			"Content-Transfer-Encoding: base64", "", "QUJDR",
			"--B--"), "ann@example.com")
		for _, a := range p.Attachments {
			if a.Content == nil {
				t.Fatalf("an attachment kept without content: %+v", a.Filename)
			}
		}
		if len(p.Attachments) == 0 && !strings.Contains(p.Text, "cut.pdf") {
			t.Fatalf("the unreadable file is neither kept nor named: %q", p.Text)
		}
	})
	t.Run("files without a disposition are kept", func(t *testing.T) {
		p := models.ParseEmail(mime(
			"From: ann@example.com", "Subject: Invoice", "MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="B"`, "",
			"--B", "Content-Type: text/plain", "", "The invoice.",
			"--B", `Content-Type: application/pdf; name="invoice.pdf"`, "Content-Transfer-Encoding: base64", "", "JVBERi0xLjQ=",
			"--B--"), "ann@example.com")
		if len(p.Attachments) != 1 || p.Attachments[0].Filename != "invoice.pdf" || string(p.Attachments[0].Content) != "%PDF-1.4" {
			t.Fatalf("attachments %+v", p.Attachments)
		}
	})
	t.Run("an address decoded into control bytes is no sender", func(t *testing.T) {
		p := models.ParseEmail(mime("From: =?utf-8?q?a=00b?=@evil.example", "Subject: Hi", "", "Hello."), "x@evil.example")
		if p.From != "" || p.Rejected != "bad_sender" {
			t.Fatalf("from %q, rejected %q", p.From, p.Rejected)
		}
	})
	t.Run("a reference with control bytes names nothing", func(t *testing.T) {
		p := models.ParseEmail(mime("From: ann@example.com", "Subject: Re: Hi", "In-Reply-To: <a\x01b@x> <good@x>", "", "Yes."),
			"ann@example.com")
		if len(p.References) != 1 || p.References[0] != "good@x" {
			t.Fatalf("references %q", p.References)
		}
	})
	t.Run("a read receipt is a machine's message, not a bounce", func(t *testing.T) {
		p := models.ParseEmail(mime(
			"From: ann@example.com", "Subject: Read: Hi", "MIME-Version: 1.0",
			`Content-Type: multipart/report; report-type=disposition-notification; boundary="R"`, "",
			"--R", "Content-Type: text/plain", "", "Your message was read.",
			"--R", "Content-Type: message/disposition-notification", "", "Final-Recipient: rfc822;ann@example.com",
			"Disposition: manual-action/MDN-sent-manually; displayed",
			"--R", "Content-Type: text/rfc822-headers", "", "Message-ID: <c-1@mail.test>",
			"--R--"), "ann@example.com")
		if p.Bounce != nil || p.Automatic != "report" {
			t.Fatalf("bounce %+v, automatic %q", p.Bounce, p.Automatic)
		}
	})
	t.Run("a failed delivery report bounces the message it names", func(t *testing.T) {
		p := models.ParseEmail(mime(
			"From: MAILER-DAEMON@mx.example.com", "Subject: Undelivered", "MIME-Version: 1.0",
			`Content-Type: multipart/report; report-type=delivery-status; boundary="R"`, "",
			"--R", "Content-Type: text/plain", "", "Delivery failed.",
			"--R", "Content-Type: message/delivery-status", "", "Reporting-MTA: dns; mx.example.com", "",
			"Final-Recipient: rfc822; ann@example.com", "Action: failed", "Status: 5.1.1",
			"Diagnostic-Code: smtp; 550 5.1.1 no such user",
			"--R", "Content-Type: text/rfc822-headers", "", "Message-ID: <c-1@mail.test>",
			"--R--"), "")
		if p.Bounce == nil || p.Bounce.MessageID != "c-1@mail.test" || !strings.Contains(p.Bounce.Diagnostic, "no such user") {
			t.Fatalf("bounce %+v", p.Bounce)
		}
	})
	t.Run("a person asking for no auto-replies is still a person", func(t *testing.T) {
		p := models.ParseEmail(mime("From: ann@example.com", "Subject: Hi", "X-Auto-Response-Suppress: All", "", "Hello."),
			"ann@example.com")
		if p.Automatic != "" || !p.NoAutoReply || p.Rejected != "" {
			t.Fatalf("automatic %q, no auto-reply %v, rejected %q", p.Automatic, p.NoAutoReply, p.Rejected)
		}
	})
	t.Run("a Message-ID with a comment after it is the id", func(t *testing.T) {
		if id := models.InboundMessageID("<a@b.example> (sent by a client)", nil); id != "a@b.example" {
			t.Fatalf("id %q", id)
		}
		if id := models.InboundMessageID("bare@b.example", nil); id != "bare@b.example" {
			t.Fatalf("a bare id %q", id)
		}
		if id := models.InboundMessageID("", []byte("x")); !strings.HasPrefix(id, "sha256-") {
			t.Fatalf("no id %q", id)
		}
	})
}
