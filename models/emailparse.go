package models

import (
	"bytes"
	"cmp"
	"fmt"
	"net/mail"
	"slices"
	"strings"

	"github.com/jhillyerd/enmime/v2"
	"github.com/jhillyerd/enmime/v2/dsn"
)

// Attachment limits of an inbound message: what is kept of it. A file over
// MaxAttachmentBytes, or past MaxAttachmentsBytes in all, is left out and
// named in the comment's text instead.
const (
	MaxAttachmentBytes  = 10 << 20
	MaxAttachmentsBytes = 20 << 20
	maxAttachments      = 20
)

// ParseEmail reads a received message with a MIME parser (enmime): its
// author, subject, text (the text part, else the HTML part turned into
// text: nothing of its markup is kept), the messages it answers, whether a
// machine sent it (RFC 3834's Auto-Submitted, Precedence, the auto-reply
// and list headers, a delivery report) and its attachments. Charsets and
// transfer encodings are decoded by the parser; a part it cannot decode
// is kept as it came. envelopeFrom is the SMTP envelope's sender ("" for a
// bounce; the Return-Path header's for a message POSTed by a provider).
// A message it cannot read at all, or that names no sender, is Rejected
// with the reason.
func ParseEmail(raw []byte, envelopeFrom string) (p ParsedEmail) {
	defer func() {
		// A message the parser chokes on is refused, never retried forever.
		if r := recover(); r != nil {
			p = ParsedEmail{Rejected: "unreadable"}
		}
	}()
	env, err := enmime.ReadEnvelope(bytes.NewReader(raw))
	if err != nil || env.Root == nil || len(bytes.TrimSpace(raw)) == 0 {
		return ParsedEmail{Rejected: "malformed"}
	}
	p.MessageID = env.GetHeader("Message-Id")
	p.Header = env.Root.Header
	if rp, ok := env.Root.Header["Return-Path"]; ok && len(rp) > 0 {
		p.ReturnPath = &rp[0]
	}
	badSender := false
	if from, err := env.AddressList("From"); err == nil && len(from) > 0 {
		p.From, p.Name = NormalizeEmail(from[0].Address), cleanLine(from[0].Name)
		if !PlainAddress(p.From) {
			// An address decoded into control bytes, spaces or invalid
			// UTF-8 (an encoded word in the address itself) is no one to
			// answer, and no value for a column.
			p.From, badSender = "", true
		}
	}
	p.Subject = cleanLine(env.GetHeader("Subject"))
	p.Text = cleanBody(env.Text)
	p.References = append(MessageIDs(env.GetHeader("In-Reply-To")), reversed(MessageIDs(env.GetHeader("References")))...)
	p.Automatic = automatic(env, envelopeFrom, p.From)
	// Outlook and Exchange ask for no auto-replies with this header, on
	// people's messages too: they open tickets, without a receipt.
	p.NoAutoReply = env.GetHeader("X-Auto-Response-Suppress") != ""
	if report, err := dsn.ParseReport(env.Root); err == nil && report != nil {
		if failedDelivery(report) {
			p.Bounce = bounceOf(report, env.Root)
		} else if p.Automatic == "" {
			// A read receipt, an abuse or a delay report: a machine's
			// message, and no bounce.
			p.Automatic = "report"
		}
	} else if p.Automatic == "mailer_daemon" || p.Automatic == "no_return_path" {
		// A bounce that is no standard report: it may still name the
		// message it answers.
		p.Bounce = &Bounce{Diagnostic: firstLine(p.Text)}
		if len(p.References) > 0 {
			p.Bounce.MessageID = p.References[0]
		}
	}
	if p.From == "" && p.Bounce == nil && p.Automatic == "" {
		p.Rejected = "no_sender"
		if badSender {
			p.Rejected = "bad_sender"
		}
	}
	p.Attachments, p.Text = attachments(env, p.Text)
	return p
}

// The one reading of a message's header. The SMTP listener and the
// inbound route read a message with ParseEmail before they store it, as
// the ingest activity does after: all three agree on its Message-ID, its
// sender and whether it can ever become a ticket (Rejected: a message
// that cannot be read, or names no sender to answer, is refused before it
// is accepted, never accepted and then silently rejected), and a header
// that net/mail refuses as a whole (one malformed line among many) is
// read as tolerantly as the MIME parser reads it.

// ParsePosted reads a message POSTed by a mail provider, whose SMTP
// envelope's sender is lost on the way, and returns it with its sender:
// its Return-Path ("" for a bounce's <>), else its From, else "unknown".
func ParsePosted(raw []byte) (ParsedEmail, string) {
	p := ParseEmail(raw, "unknown")
	sender := cmp.Or(p.From, "unknown")
	if p.ReturnPath != nil {
		v := strings.TrimSpace(*p.ReturnPath)
		if a, err := mail.ParseAddress(v); err == nil && PlainAddress(NormalizeEmail(a.Address)) {
			sender = NormalizeEmail(a.Address)
		} else if v == "<>" {
			return ParseEmail(raw, ""), ""
		}
	}
	return p, sender
}

// automatic says why a message was sent by a machine, or "".
func automatic(env *enmime.Envelope, envelopeFrom, from string) string {
	local, _, _ := strings.Cut(from, "@")
	switch {
	case envelopeFrom == "":
		return "no_return_path"
	case local == "mailer-daemon" || local == "postmaster":
		return "mailer_daemon"
	}
	if v := strings.ToLower(strings.TrimSpace(env.GetHeader("Auto-Submitted"))); v != "" && v != "no" {
		return "auto_submitted"
	}
	switch strings.ToLower(strings.TrimSpace(env.GetHeader("Precedence"))) {
	case "bulk", "list", "junk", "auto_reply":
		return "precedence"
	}
	for _, h := range []string{"X-Autoreply", "X-Autorespond"} {
		if env.GetHeader(h) != "" {
			return "autoreply"
		}
	}
	if env.GetHeader("List-Id") != "" || env.GetHeader("List-Unsubscribe") != "" {
		return "list"
	}
	return ""
}

// failedDelivery tells whether a report says a delivery failed (RFC 3464
// Action: failed) — a bounce, not a delay, a read receipt or another
// report.
func failedDelivery(r *dsn.Report) bool {
	for _, rcpt := range r.DeliveryStatus.RecipientDSNs {
		if dsn.IsFailed(rcpt) {
			return true
		}
	}
	return false
}

// bounceOf is what a delivery report, root, says of the message it
// reports.
func bounceOf(r *dsn.Report, root *enmime.Part) *Bounce {
	b := &Bounce{Diagnostic: firstLine(r.Explanation.Text)}
	for _, rcpt := range r.DeliveryStatus.RecipientDSNs {
		if d := rcpt.Get("Diagnostic-Code"); d != "" {
			b.Diagnostic = cleanLine(d)
			break
		}
		if s := rcpt.Get("Status"); s != "" {
			b.Diagnostic = "status " + cleanLine(s)
		}
	}
	original := r.OriginalMessage
	if len(original) == 0 {
		// Many servers return only the headers (text/rfc822-headers, RFC 3462).
		if p := root.BreadthMatchFirst(func(p *enmime.Part) bool { return p.ContentType == "text/rfc822-headers" }); p != nil {
			original = append(p.Content, "\r\n"...)
		}
	}
	if len(original) > 0 {
		if m, err := mail.ReadMessage(bytes.NewReader(original)); err == nil {
			if ids := MessageIDs(m.Header.Get("Message-Id")); len(ids) > 0 {
				b.MessageID = ids[0]
			}
		}
	}
	return b
}

// attachments keeps the message's files within the limits; text gains a
// line for each one left out.
func attachments(env *enmime.Envelope, text string) ([]ParsedAttachment, string) {
	var kept []ParsedAttachment
	var total int
	var left []string
	// Files are parts with a disposition, and — without one — parts that
	// name themselves (a PDF sent as application/pdf; name="…", an image
	// of a multipart/related) or are a forwarded message.
	parts := slices.Concat(env.Attachments, env.Inlines, env.OtherParts)
	for _, part := range parts {
		name := cleanLine(part.FileName)
		if name == "" {
			switch {
			case part.Disposition == "attachment":
				name = "attachment"
			case part.Disposition == "" && part.ContentType == "message/rfc822":
				name = "message.eml"
			default:
				continue // an inline part or a report's part without a name: the body's, not a file
			}
		}
		size := len(part.Content)
		switch {
		case part.Content == nil:
			// A part whose encoding could not be read (corrupt base64).
			left = append(left, fmt.Sprintf("%s (unreadable)", name))
		case len(kept) >= maxAttachments:
			left = append(left, fmt.Sprintf("%s (more than %d files)", name, maxAttachments))
		case size > MaxAttachmentBytes || total+size > MaxAttachmentsBytes:
			left = append(left, fmt.Sprintf("%s (%d bytes: too large)", name, size))
		default:
			total += size
			ct := part.ContentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			kept = append(kept, ParsedAttachment{Filename: name, ContentType: ct, Content: part.Content})
		}
	}
	if len(left) > 0 {
		text += "\n\n[Attachments not kept: " + strings.Join(left, ", ") + "]"
	}
	return kept, text
}

func reversed(s []string) []string {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// cleanBody is text as stored: valid UTF-8, without NUL or other control
// characters but tabs and line breaks (PostgreSQL cannot store a NUL).
func cleanBody(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, strings.ReplaceAll(s, "\r\n", "\n"))
}

// cleanLine is a header value as stored: one line of printable text.
func cleanLine(s string) string {
	return strings.TrimSpace(Truncate(CleanText(s), 500))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return cleanLine(line)
}
