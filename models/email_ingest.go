package models

import (
	"errors"
	"mime"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ParsedEmail is what ingestion needs of a received message, read by a
// MIME parser (ParseEmail).
type ParsedEmail struct {
	// From is the author's address (the From header), normalized; Name
	// their display name.
	From, Name string
	Subject    string
	// Text is the body as plain text: the text part, or the HTML part made
	// safe and turned into text.
	Text string
	// References are the Message-IDs the message answers (In-Reply-To,
	// then References, newest first), without angle brackets.
	References []string
	// Automatic says why the message was sent by a machine (an
	// auto-reply, a list, a bounce), "" for a person's.
	Automatic string
	// Bounce, for a delivery report, names the message that bounced.
	Bounce *Bounce
	// Rejected says why the message cannot become a ticket (no sender),
	// "" when it can.
	Rejected string
	// NoAutoReply: a person's message whose sender asks for no automatic
	// answers (X-Auto-Response-Suppress); it gets no receipt.
	NoAutoReply bool
	Attachments []ParsedAttachment
	// MessageID is the Message-ID header as written ("" when none), and
	// ReturnPath the Return-Path header's (nil when none): what the
	// suite keys the message by, and who sent it when no SMTP envelope
	// says (a message a provider POSTs).
	MessageID  string
	ReturnPath *string
	// Header is the message's header, by canonical name (the channel's
	// HeaderFields read it).
	Header map[string][]string
}

// Bounce is what a delivery report says of the message it reports.
type Bounce struct {
	// MessageID is the reported message's Message-ID, when the report
	// names it.
	MessageID string
	// Diagnostic is the report's reason, for the record.
	Diagnostic string
}

// ParsedAttachment is one file of a message.
type ParsedAttachment struct {
	Filename, ContentType string
	Content               []byte
}

// IngestOutcome is what became of a received message.
type IngestOutcome struct {
	Status, Reason string
	// TicketID is the ticket the message opened or was added to;
	// CommentID the comment it became (nil for a new ticket's first
	// message, which is its description).
	TicketID  string
	CommentID *string
	// NewTicket tells the message opened the ticket; NewCustomer is the
	// customer it created for its sender (nil: one already).
	NewTicket   bool
	NewCustomer *Customer
	// Change is what the caller acts on: a reopened solved ticket's timer
	// to cancel, the assignee to tell of the customer's reply.
	Change TicketChange
}

// SenderTicketsPerHour is how many messages from one address a workspace
// takes in an hour: a mail storm from one sender (a loop the loop rules
// missed, a script) cannot open thousands of tickets.
const SenderTicketsPerHour = 30

// IngestEmail turns the stored message m, parsed as p, into a ticket or a
// comment, in tx, and records the outcome on m. It is idempotent: a
// message already ingested returns the outcome recorded.
//
//   - A delivery report marks the outbound message it reports bounced; an
//     auto-reply, a list or a machine's message is ignored (never
//     answered, never a ticket).
//   - A reply — its In-Reply-To or References name a message of a ticket,
//     or its subject carries the ticket's tag [#<number>] — from the
//     ticket's requester becomes the requester's comment: it reopens a
//     pending, on-hold or solved ticket; a closed ticket gets a new ticket
//     that follows it. Another sender's reply opens a ticket of their own,
//     so that no stranger writes into a conversation by copying its
//     subject.
//   - A message from an address erased on request (AddressErased) is
//     refused, and its record keeps neither it nor the sender.
//   - Anything else opens a ticket (channel email) for the sender, within
//     the plan's ticket limit and SenderTicketsPerHour.
func IngestEmail(tx *gorm.DB, m *InboundEmail, p ParsedEmail, now time.Time) (IngestOutcome, error) {
	if m.Status != InboundReceived {
		return recordedOutcome(m), nil
	}
	// From an erased address — the author's or the envelope's — whatever
	// it is (a person's, an auto-reply, a bounce): forgotten.
	for _, sender := range []string{p.From, m.MailFrom} {
		if sender = NormalizeEmail(sender); sender == "" {
			continue
		}
		if until, err := AddressErased(tx, m.OrgID, sender); err != nil || until != nil {
			if err != nil {
				return IngestOutcome{}, err
			}
			return forgetErased(tx, m, now)
		}
	}
	// A support address's verification message, come back through its
	// forwarding (it is automatic: the check comes first).
	if verified, err := VerifyAddress(tx, m.OrgID, p.Subject+"\n"+p.Text, now); err != nil || verified {
		if err != nil {
			return IngestOutcome{}, err
		}
		return finishInbound(tx, m, IngestOutcome{Status: InboundIgnored, Reason: "address_verified"}, now)
	}
	own, err := ownMessage(tx, m, p)
	if err != nil {
		return IngestOutcome{}, err
	}
	switch {
	case own:
		return finishInbound(tx, m, IngestOutcome{Status: InboundIgnored, Reason: "own_message"}, now)
	case p.Bounce != nil:
		if err := recordBounce(tx, m.OrgID, p.Bounce, now); err != nil {
			return IngestOutcome{}, err
		}
		return finishInbound(tx, m, IngestOutcome{Status: InboundIgnored, Reason: "bounce"}, now)
	case p.Automatic != "":
		return finishInbound(tx, m, IngestOutcome{Status: InboundIgnored, Reason: p.Automatic}, now)
	case p.Rejected != "":
		return finishInbound(tx, m, IngestOutcome{Status: InboundRejected, Reason: p.Rejected}, now)
	}
	rate, err := HitRate(tx.Statement.Context, tx, "mail-sender|"+m.OrgID+"|"+p.From, time.Hour, now, 1)
	if err != nil {
		return IngestOutcome{}, err
	}
	if rate.Estimate() > SenderTicketsPerHour {
		return finishInbound(tx, m, IngestOutcome{Status: InboundRejected, Reason: "rate_limited"}, now)
	}
	t, err := threadOf(tx, m.OrgID, p)
	if err != nil {
		return IngestOutcome{}, err
	}
	var out IngestOutcome
	switch {
	case t != nil && t.Status != TicketClosed:
		out, err = ingestReply(tx, m, p, t, now)
	default:
		out, err = ingestTicket(tx, m, p, t, now)
	}
	if err != nil {
		var de *DomainError
		if errors.As(err, &de) && errors.Is(err, ErrLimit) {
			// The plan's limit: the message stays stored, refused.
			return finishInbound(tx, m, IngestOutcome{Status: InboundRejected, Reason: de.Code}, now)
		}
		return IngestOutcome{}, err
	}
	if err := storeAttachments(tx, m.OrgID, out.TicketID, out.CommentID, p.Attachments, now); err != nil {
		return IngestOutcome{}, err
	}
	msg := EmailMessage{OrgID: m.OrgID, MessageID: m.MessageID, TicketID: out.TicketID, CommentID: out.CommentID,
		Direction: EmailIn, Status: EmailReceived, CreatedAt: now, UpdatedAt: now}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&msg).Error; err != nil {
		return IngestOutcome{}, err
	}
	out.Status = InboundProcessed
	return finishInbound(tx, m, out, now)
}

// ownMessage tells whether m is the workspace's own mail come back — one
// of its replies redirected or bounced back by a forwarding, or a message
// from the very address it came to — which must neither open a ticket nor
// be answered.
func ownMessage(tx *gorm.DB, m *InboundEmail, p ParsedEmail) (bool, error) {
	if p.From != "" && p.From == NormalizeEmail(m.Rcpt) {
		return true, nil
	}
	var n int64
	err := tx.Model(&EmailMessage{}).Where("org_id = ? AND message_id = ? AND direction = ?", m.OrgID, m.MessageID, EmailOut).Count(&n).Error
	return n > 0, err
}

// threadOf is the ticket a message answers, or nil: the newest ticket one
// of its references names, else the ticket its subject's tag names —
// either only when the sender is that ticket's requester.
func threadOf(tx *gorm.DB, orgID string, p ParsedEmail) (*Ticket, error) {
	var ticketID string
	if len(p.References) > 0 {
		var msg EmailMessage
		err := tx.Where("org_id = ? AND message_id IN ?", orgID, p.References).Order("created_at DESC").Take(&msg).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, err
		}
		ticketID = msg.TicketID
	}
	q := LockForUpdate(tx).Where("org_id = ? AND requester_email = ?", orgID, p.From)
	var t Ticket
	var err error
	switch tag := ticketTag.FindStringSubmatch(p.Subject); {
	case ticketID != "":
		err = q.Take(&t, "id = ?", ticketID).Error
	case tag != nil:
		n, _ := strconv.Atoi(tag[1])
		err = q.Take(&t, "number = ?", n).Error
	default:
		return nil, nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ingestReply adds the message to ticket t as its requester's comment.
func ingestReply(tx *gorm.DB, m *InboundEmail, p ParsedEmail, t *Ticket, now time.Time) (IngestOutcome, error) {
	cm := &TicketComment{ID: DerivedID(m.ID, "comment"), OrgID: m.OrgID, AuthorType: AuthorCustomer,
		Body: commentText(p), Public: true, CreatedAt: now}
	t, change, err := AddTicketComment(tx, m.OrgID, t.ID, cm, ActorEmail, now)
	if err != nil {
		return IngestOutcome{}, err
	}
	return IngestOutcome{TicketID: t.ID, CommentID: &cm.ID, Change: change}, nil
}

// ingestTicket opens a ticket for the message's sender; follows, when
// set, is the closed ticket the message answered.
func ingestTicket(tx *gorm.DB, m *InboundEmail, p ParsedEmail, follows *Ticket, now time.Time) (IngestOutcome, error) {
	var org Organization
	if err := tx.Take(&org, "id = ?", m.OrgID).Error; err != nil {
		return IngestOutcome{}, err
	}
	t := &Ticket{ID: DerivedID(m.ID, "ticket"), OrgID: m.OrgID, Subject: TicketSubject(p.Subject), Description: commentText(p),
		Status: TicketNew, Priority: "normal", Channel: ChannelEmail, RequesterEmail: p.From, Tags: "[]", CreatedAt: now, UpdatedAt: now}
	fields, err := headerFields(tx, m.OrgID, p)
	if err != nil {
		return IngestOutcome{}, err
	}
	t.Fields = fields
	if follows != nil {
		t.FollowsTicketID = &follows.ID
	}
	cust, err := OpenTicket(tx, &org, t, p.Name, ActorEmail, nil)
	if err != nil {
		return IngestOutcome{}, err
	}
	return IngestOutcome{TicketID: t.ID, NewTicket: true, NewCustomer: cust, Change: TicketChange{SLAMoved: t.HasSLATimer()}}, nil
}

// commentText is a message's text as a comment's body: never empty, never
// more than a comment holds.
func commentText(p ParsedEmail) string {
	text := strings.TrimSpace(p.Text)
	if text == "" {
		text = "(no text)"
	}
	const most = 20000
	if len(text) > most {
		text = Truncate(text, most) + "\n[…]"
	}
	return text
}

func storeAttachments(tx *gorm.DB, orgID, ticketID string, commentID *string, files []ParsedAttachment, now time.Time) error {
	for _, f := range files {
		a := TicketAttachment{ID: NewID(), OrgID: orgID, TicketID: ticketID, CommentID: commentID, Filename: f.Filename,
			ContentType: f.ContentType, Size: len(f.Content), Content: f.Content, CreatedAt: now}
		if err := tx.Create(&a).Error; err != nil {
			return err
		}
	}
	return nil
}

// recordBounce marks the workspace's outbound message b reports bounced.
func recordBounce(tx *gorm.DB, orgID string, b *Bounce, now time.Time) error {
	if b.MessageID == "" {
		return nil
	}
	return tx.Model(&EmailMessage{}).Where("org_id = ? AND message_id = ? AND direction = ?", orgID, b.MessageID, EmailOut).
		Updates(map[string]any{"status": EmailBounced, "error": Truncate(b.Diagnostic, 500), "updated_at": now}).Error
}

// finishInbound records out on m.
func finishInbound(tx *gorm.DB, m *InboundEmail, out IngestOutcome, now time.Time) (IngestOutcome, error) {
	m.Status, m.Reason, m.ProcessedAt, m.CommentID = out.Status, out.Reason, &now, out.CommentID
	if out.TicketID != "" {
		m.TicketID = &out.TicketID
	}
	err := tx.Model(&InboundEmail{}).Where("id = ?", m.ID).Updates(map[string]any{"status": m.Status, "reason": m.Reason,
		"processed_at": m.ProcessedAt, "ticket_id": m.TicketID, "comment_id": m.CommentID}).Error
	return out, err
}

// forgetErased refuses m, from an address erased on request: its record
// keeps neither the message, its subject nor the sender.
func forgetErased(tx *gorm.DB, m *InboundEmail, now time.Time) (IngestOutcome, error) {
	if err := tx.Model(&InboundEmail{}).Where("id = ?", m.ID).Updates(map[string]any{"raw": []byte{}, "mail_from": "", "subject": ""}).Error; err != nil {
		return IngestOutcome{}, err
	}
	m.MailFrom, m.Subject = "", ""
	return finishInbound(tx, m, IngestOutcome{Status: InboundRejected, Reason: "erased_address"}, now)
}

// recordedOutcome is the outcome an ingested message records.
func recordedOutcome(m *InboundEmail) IngestOutcome {
	out := IngestOutcome{Status: m.Status, Reason: m.Reason, CommentID: m.CommentID}
	if m.TicketID != nil {
		out.TicketID = *m.TicketID
	}
	return out
}

// headerFields are the custom field values of a ticket that message p
// opens in orgID: the defaults, and the values of the headers its
// e-mail channel maps to fields (HeaderFields), each read as a cell of
// an import is (ImportCell) and kept only when valid for its field — a
// header is the sender's to write, so a bad value is left out, never a
// reason to refuse the message. A member field is never set from a
// header.
func headerFields(tx *gorm.DB, orgID string, p ParsedEmail) (FieldValues, error) {
	fields, err := FieldDefaults(tx, orgID, AutomationTicket)
	if err != nil {
		return nil, err
	}
	var ch EmailChannel
	if err := tx.Select("header_fields").Where("org_id = ?", orgID).Limit(1).Find(&ch).Error; err != nil {
		return nil, err
	}
	mapping := ch.HeaderFieldMap()
	if len(mapping) == 0 {
		return fields, nil
	}
	defs, err := FieldDefinitions(tx, orgID, AutomationTicket)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*CustomField{}
	for i := range defs {
		byKey[defs[i].Key] = &defs[i]
	}
	decoder := new(mime.WordDecoder)
	for header, key := range mapping {
		f := byKey[key]
		values := p.Header[header]
		if f == nil || f.Status != FieldActive || f.Type == FieldMember || len(values) == 0 {
			continue
		}
		value, err := decoder.DecodeHeader(values[0])
		if err != nil {
			value = values[0]
		}
		if value = CleanText(strings.TrimSpace(value)); value == "" {
			continue
		}
		if v, why := f.check(ImportCell(f, value)); why == "" {
			fields[key] = v
		}
	}
	return fields, nil
}
