package models

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The Helpdesk's e-mail channel. Every workspace has an inbound address,
// ws-<its id without dashes>@<SUITE_MAIL_DOMAIN>, derived from its id so
// that no address can be taken, lost or guessed into another workspace;
// a workspace may add its own support addresses (support@acme.example) that
// forward to it. A message is stored raw (InboundEmail) before the SMTP
// listener answers 250 or the HTTP route 202, with the start of its
// EmailIngest workflow in the same transaction; the workflow reads it
// (IngestEmail) into a ticket or a comment. Every message of a ticket's
// thread, both ways, is an EmailMessage keyed by its Message-ID: how a reply
// finds its ticket, and how an outbound reply's delivery is told.

// Inbound message statuses.
const (
	InboundReceived  = "received"
	InboundProcessed = "processed"
	InboundIgnored   = "ignored"
	InboundRejected  = "rejected"
)

// Email message directions and statuses.
const (
	EmailIn       = "in"
	EmailOut      = "out"
	EmailReceived = "received"
	EmailQueued   = "queued"
	EmailSent     = "sent"
	EmailFailed   = "failed"
	EmailBounced  = "bounced"
)

// ChannelEmail is a ticket's channel when it came by e-mail.
const ChannelEmail = "email"

// EmailChannel is a workspace's e-mail settings (a workspace without a row
// has the defaults).
type EmailChannel struct {
	OrgID string `gorm:"primaryKey"`
	// Acknowledge sends the requester a short receipt when a ticket is
	// opened by e-mail.
	Acknowledge bool
	// HeaderFields maps a header of a message that opens a ticket to a
	// custom field of tickets: a JSON object of canonical header names to
	// field keys (HeaderFieldMap).
	HeaderFields string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// HeaderFieldMap is ch's header-to-field map.
func (ch *EmailChannel) HeaderFieldMap() map[string]string {
	out := map[string]string{}
	if ch.HeaderFields != "" {
		_ = json.Unmarshal([]byte(ch.HeaderFields), &out)
	}
	return out
}

// EmailAddress is one of a workspace's own support addresses, which
// forward to it. It is the workspace's once verified (VerifiedAt): the
// suite mails Token to the address, and the message comes back through
// the forwarding (VerifyAddress). Until then mail to it is refused, so no
// workspace takes another's address by naming it first.
type EmailAddress struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	Address    string
	Token      string
	VerifiedAt *time.Time
	CreatedAt  time.Time
}

// NewAddressToken is a support address's verification token: what the
// verification message carries, and nothing else does.
func NewAddressToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "verify-" + hex.EncodeToString(b)
}

// addressToken finds a verification token in a message's text.
var addressToken = regexp.MustCompile(`verify-[0-9a-f]{32}`)

// VerifyAddress verifies the workspace's support address whose token the
// text carries, unless another workspace holds the address verified; it
// reports whether it verified one. Another workspace's token verifies
// nothing here.
func VerifyAddress(tx *gorm.DB, orgID, text string, now time.Time) (bool, error) {
	tokens := addressToken.FindAllString(text, 5)
	if len(tokens) == 0 {
		return false, nil
	}
	res := tx.Model(&EmailAddress{}).
		Where("org_id = ? AND token IN ? AND verified_at IS NULL", orgID, tokens).
		Where("NOT EXISTS (SELECT 1 FROM email_addresses v WHERE v.address = email_addresses.address AND v.verified_at IS NOT NULL)").
		Update("verified_at", now)
	return res.RowsAffected > 0, res.Error
}

// RetryableRejection tells whether a message rejected for reason may be
// read again: one a rule of the workspace refused (a limit), not one
// refused for its form or a value the database refused — it would be
// refused again — nor an erased sender's, which the suite no longer
// holds.
func RetryableRejection(reason string) bool {
	switch reason {
	case "erased_address", "malformed", "unreadable", "no_sender", "bad_sender", "unprocessable":
		return false
	}
	return true
}

// InboundEmail is one received message, stored as it came.
type InboundEmail struct {
	ID string `gorm:"primaryKey"`
	// OrgID is the workspace it was addressed to.
	OrgID string
	// MessageID is the Message-ID header, or one derived from the content
	// when it has none (the same message delivered twice is one message).
	MessageID string
	// MailFrom is the envelope sender ("" for a bounce), Rcpt the
	// workspace address it came to.
	MailFrom, Rcpt string
	// Via is how it came: smtp or http.
	Via string
	// Subject is its Subject header, read when it was stored.
	Subject     string
	Raw         []byte
	Size        int
	Status      string
	Reason      string
	TicketID    *string
	CommentID   *string
	ReceivedAt  time.Time
	ProcessedAt *time.Time
}

// EmailMessage is one message of a ticket's thread, either way.
type EmailMessage struct {
	OrgID     string `gorm:"primaryKey"`
	MessageID string `gorm:"primaryKey"`
	TicketID  string
	// CommentID is the comment the message is (nil: the ticket's first
	// message, its description).
	CommentID *string
	Direction string
	Status    string
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TicketAttachment is a file that came with an inbound message, kept in
// the database with the comment it belongs to.
type TicketAttachment struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	TicketID    string
	CommentID   *string
	Filename    string
	ContentType string
	Size        int
	Content     []byte
	CreatedAt   time.Time
}

// EmailsSentForComments are the outbound messages that e-mailed comments
// commentIDs to their tickets' requesters: each one's delivery status.
// No comments, no query.
func EmailsSentForComments(db *gorm.DB, commentIDs []string) ([]EmailMessage, error) {
	if len(commentIDs) == 0 {
		return nil, nil
	}
	var sent []EmailMessage
	err := db.Where("comment_id IN ? AND direction = ?", commentIDs, EmailOut).Find(&sent).Error
	return sent, err
}

// AttachmentsOfComments are the files that came with comments commentIDs,
// oldest first, without their Content: a list names them, and a file's
// bytes are read one at a time when asked for. No comments, no query.
func AttachmentsOfComments(db *gorm.DB, commentIDs []string) ([]TicketAttachment, error) {
	if len(commentIDs) == 0 {
		return nil, nil
	}
	var files []TicketAttachment
	err := db.Select("id, comment_id, filename, content_type, size").Where("comment_id IN ?", commentIDs).
		Order("created_at, id").Find(&files).Error
	return files, err
}

// wsAddress matches a workspace's own inbound local part.
var wsAddress = regexp.MustCompile(`^ws-([0-9a-f]{32})$`)

// WorkspaceAddress is a workspace's inbound address at domain.
func WorkspaceAddress(orgID, domain string) string {
	return "ws-" + strings.ReplaceAll(orgID, "-", "") + "@" + domain
}

// PlainAddress tells whether a is an e-mail address as the suite stores
// and answers one: printable UTF-8 without spaces, that net/mail reads
// back as itself, of at most 254 bytes. An address decoded into control
// bytes or invalid UTF-8 (an encoded word in the address itself) is no
// one to answer, and no value for a column.
func PlainAddress(a string) bool {
	if a == "" || len(a) > 254 || CleanText(a) != a || strings.ContainsAny(a, " \t") {
		return false
	}
	parsed, err := mail.ParseAddress(a)
	return err == nil && strings.EqualFold(parsed.Address, a)
}

// ErrNoSuchMailbox answers a recipient that is no workspace's address.
var ErrNoSuchMailbox = errors.New("no workspace has this address")

// ResolveMailbox is the active workspace that address reaches: its own
// inbound address at domain, or one of its verified support addresses; any
// other address is ErrNoSuchMailbox.
func ResolveMailbox(db *gorm.DB, address, domain string) (string, error) {
	address = NormalizeEmail(address)
	local, host, ok := strings.Cut(address, "@")
	if !ok {
		return "", ErrNoSuchMailbox
	}
	var orgID string
	if m := wsAddress.FindStringSubmatch(local); m != nil && domain != "" && host == strings.ToLower(domain) {
		h := m[1]
		orgID = h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	} else {
		var a EmailAddress
		err := db.Take(&a, "address = ? AND verified_at IS NOT NULL", address).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return "", ErrNoSuchMailbox
		}
		if err != nil {
			return "", err
		}
		orgID = a.OrgID
	}
	var n int64
	if err := db.Model(&Organization{}).Where("id = ? AND status = ?", orgID, OrgActive).Count(&n).Error; err != nil {
		return "", err
	}
	if n == 0 {
		return "", ErrNoSuchMailbox
	}
	return orgID, nil
}

// InboundMessageID is the identity of a received message: the Message-ID
// its header names, without the angle brackets, or — for a message without
// a usable one — a hash of its content, so that a message delivered twice
// is still one.
func InboundMessageID(header string, raw []byte) string {
	if ids := MessageIDs(header); len(ids) > 0 {
		return ids[0]
	}
	if id := strings.TrimSpace(header); id != "" && len(id) <= 500 && CleanText(id) == id && !strings.ContainsAny(id, " <>") {
		return id // a bare id, without its brackets
	}
	sum := sha256.Sum256(raw)
	return "sha256-" + hex.EncodeToString(sum[:16]) + "@suite.invalid"
}

// msgID finds the Message-IDs in a header: <local@domain> tokens.
var msgID = regexp.MustCompile(`<([^<>\s]{1,500})>`)

// MessageIDs are the Message-IDs a header (Message-ID, In-Reply-To,
// References) names, without brackets, at most 50; one with control bytes
// or invalid UTF-8 names no message the suite knows, and is left out.
func MessageIDs(h string) []string {
	var ids []string
	for _, m := range msgID.FindAllStringSubmatch(h, 50) {
		if CleanText(m[1]) == m[1] {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// InsertInboundEmail is the statement that stores m (its id, status, size
// and time set here) unless the workspace already has a message with its
// Message-ID (then it writes nothing), returning its id; for
// RecordWithStart, which records its EmailIngest start with it.
func InsertInboundEmail(m *InboundEmail) (string, []any) {
	if m.ID == "" {
		m.ID = NewID()
	}
	m.Status, m.Size = InboundReceived, len(m.Raw)
	if m.ReceivedAt.IsZero() {
		m.ReceivedAt = Now()
	}
	return "INSERT INTO inbound_emails (id, org_id, message_id, mail_from, rcpt, via, subject, raw, size, status, reason, received_at)\n" +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?)\n" +
			"ON CONFLICT (org_id, message_id) DO NOTHING RETURNING id",
		[]any{m.ID, m.OrgID, m.MessageID, m.MailFrom, m.Rcpt, m.Via, m.Subject, m.Raw, m.Size, m.Status, m.ReceivedAt}
}

// ticketTag finds "[#1001]" in a subject.
var ticketTag = regexp.MustCompile(`\[#(\d{1,9})\]`)

// replyPrefixes are the subject prefixes of replies and forwards.
var replyPrefixes = regexp.MustCompile(`(?i)^\s*((re|fw|fwd|aw|wg|sv|vs|antw)\s*:\s*)+`)

// TicketSubject is a message's subject as a ticket's: without reply
// prefixes and the ticket tag, never empty.
func TicketSubject(subject string) string {
	s := ticketTag.ReplaceAllString(subject, "")
	s = strings.Join(strings.Fields(replyPrefixes.ReplaceAllString(s, "")), " ")
	if s == "" {
		return "(no subject)"
	}
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "")
	}
	return s
}

// ReplySubject is the subject of the suite's reply on ticket t: its
// subject with its tag, so that a client that drops the thread's headers
// still finds the ticket.
func ReplySubject(t *Ticket) string {
	return "Re: " + t.Subject + " [#" + strconv.Itoa(t.Number) + "]"
}

// EmailSendInput names the public comment an EmailSend workflow sends
// (workflows.EmailSend; recorded by record.Tx.EmailReply).
type EmailSendInput struct {
	CommentID string `json:"commentId"`
	OrgID     string `json:"orgId"`
}
