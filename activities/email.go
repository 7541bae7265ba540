package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// Email is the Helpdesk's e-mail channel: reading a received message into
// a ticket or a comment, and sending a ticket's public replies (and, when
// the workspace asks for it, a receipt) from the workspace's address.
type Email struct {
	DB *gorm.DB
	// Mail is the outbound server (SMTP_URL); its From is not used: a
	// ticket's mail comes from its workspace's address.
	Mail SMTP
	// Domain is SUITE_MAIL_DOMAIN, the domain of the workspaces' addresses.
	Domain string
}

// IngestResult is what became of a received message, for the EmailIngest
// workflow's next steps.
type IngestResult struct {
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	TicketID  string `json:"ticketId,omitempty"`
	CommentID string `json:"commentId,omitempty"`
	// Acknowledge: the message opened a ticket of a workspace that sends
	// receipts.
	Acknowledge bool `json:"acknowledge,omitempty"`
	// NotificationID was the assignee's notification of a customer's
	// reply, for the workflow to push. It is no longer set: the push is
	// started with the notification (record.Tx.Notify). It stays for the
	// executions that recorded it before, which replay their push with it
	// (docs/decisions.md, "Notifications").
	NotificationID string `json:"notificationId,omitempty"`
	// CancelAutoClose is the solve generation of the auto-close timer a
	// reopened ticket no longer needs (0: none).
	CancelAutoClose int `json:"cancelAutoClose,omitempty"`
	// Notice: the message was rejected after it was accepted, and its
	// sender is a person to tell (NotifyRejection).
	Notice bool `json:"notice,omitempty"`
}

// IngestEmail reads the stored message inboundID (ParseEmail) and turns it
// into a ticket or a comment in one transaction (models.IngestEmail): its
// notification of the assignee included. It is idempotent: a message
// already read returns what it became. A message the database refuses a
// value of — an error every retry would meet again — is recorded rejected
// ("unprocessable") rather than retried for days.
func (a *Email) IngestEmail(ctx context.Context, inboundID string) (IngestResult, error) {
	res, err := a.ingest(ctx, inboundID)
	if err == nil || !database.IsDataError(err) {
		return res, err
	}
	if activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Error("an inbound message could not be stored as a ticket; recorded rejected", "inboundId", inboundID, "error", err)
	}
	now := models.Now()
	err = a.DB.WithContext(ctx).Model(&models.InboundEmail{}).Where("id = ? AND status = ?", inboundID, models.InboundReceived).
		Updates(map[string]any{"status": models.InboundRejected, "reason": "unprocessable", "processed_at": now}).Error
	return IngestResult{Status: models.InboundRejected, Reason: "unprocessable"}, err
}

// ingest is IngestEmail's transaction. The steps after it (a receipt, a
// push, a timer to cancel) are read from what the message became, so that
// a re-run — the worker died after the commit, before the workflow had the
// result — still returns them; the auto-close timer checks its ticket
// itself, so only a fresh run asks for its cancellation.
func (a *Email) ingest(ctx context.Context, inboundID string) (IngestResult, error) {
	var res IngestResult
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		var m models.InboundEmail
		if err := models.LockForUpdate(tx.DB).Take(&m, "id = ?", inboundID).Error; err != nil {
			return missing("inbound message "+inboundID, err)
		}
		fresh := m.Status == models.InboundReceived
		p := models.ParseEmail(m.Raw, m.MailFrom)
		now := models.Now()
		out, err := models.IngestEmail(tx.DB, &m, p, now)
		if err != nil {
			return err
		}
		res = IngestResult{Status: out.Status, Reason: out.Reason, TicketID: out.TicketID}
		if out.CommentID != nil {
			res.CommentID = *out.CommentID
		}
		if out.Status == models.InboundRejected && fresh {
			// Accepted, then refused by the workspace's rules: told to the
			// webhooks, and to a person who sent it (once an hour).
			if res.Notice, err = noticeDue(tx.DB, &m, &p, now); err != nil {
				return err
			}
			return tx.Emit(models.Event{OrgID: m.OrgID, Type: models.EventEmailRejected, Object: views.ToInboundEmail(&m)})
		}
		if out.Status != models.InboundProcessed {
			return nil
		}
		var t models.Ticket
		if err := tx.Take(&t, "id = ?", out.TicketID).Error; err != nil {
			return err
		}
		if fresh && out.Change.Unsolved {
			res.CancelAutoClose = t.SolveCount
		}
		if out.Change.SLAMoved {
			if err := tx.WakeTicketSLA(&t); err != nil {
				return err
			}
		}
		if fresh {
			if err := emitIngested(tx, &t, out, views.ToReceivedEmail(&m, &p)); err != nil {
				return err
			}
		}
		if t.ID == models.DerivedID(m.ID, "ticket") { // the message opened its ticket
			var ch models.EmailChannel
			err := tx.Take(&ch, "org_id = ?", m.OrgID).Error
			if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
				return err
			}
			res.Acknowledge = ch.Acknowledge && !p.NoAutoReply
		}
		notify := out.Change.Notify
		if !fresh && out.CommentID != nil {
			notify = t.AgentID
		}
		if notify != nil {
			n := models.CustomerRepliedNotice(&t, *notify, now)
			n.ID = models.DerivedID(m.ID, "notify", *notify)
			_, err = tx.Notify(n)
		}
		return err
	})
	return res, err
}

// emitIngested records the webhook events of what a message became: a
// ticket opened (with the customer it created), or a comment and the
// change it made to its ticket t; then the message's own
// ticket.email_received.
func emitIngested(tx *record.Tx, t *models.Ticket, out models.IngestOutcome, msg views.ReceivedEmail) error {
	received := models.Event{OrgID: t.OrgID, Type: models.EventTicketEmailReceived, Object: msg, Subject: views.ToTicket(t)}
	if out.NewTicket {
		return tx.Emit(append(views.TicketOpenedEvents(t, out.NewCustomer), received)...)
	}
	if out.CommentID == nil {
		return nil
	}
	var cm models.TicketComment
	if err := tx.Take(&cm, "id = ?", *out.CommentID).Error; err != nil {
		return err
	}
	sent, err := models.EmailsSentForComments(tx.DB, []string{cm.ID})
	if err != nil {
		return err
	}
	files, err := models.AttachmentsOfComments(tx.DB, []string{cm.ID})
	if err != nil {
		return err
	}
	view := views.Comments(sent, files)
	changed, err := views.TicketChangeEvents(&out.Change.Before, t)
	if err != nil {
		return err
	}
	events := append([]models.Event{{OrgID: t.OrgID, Type: models.EventTicketCommentCreated, Object: view(&cm), Subject: views.ToTicket(t)}}, changed...)
	return tx.Emit(append(events, received)...)
}

// SendReply sends the public agent comment commentID to its ticket's
// requester, from the workspace's address, threaded under the ticket's
// earlier messages, and records it sent. SMTP 5xx answers are
// non-retryable; 4xx and connection failures are retried by the workflow.
func (a *Email) SendReply(ctx context.Context, commentID string) error {
	db := a.DB.WithContext(ctx)
	var out models.EmailMessage
	if err := db.Take(&out, "comment_id = ? AND direction = ?", commentID, models.EmailOut).Error; err != nil {
		return missing("the reply of comment "+commentID, err)
	}
	if out.Status == models.EmailSent || out.Status == models.EmailBounced {
		return nil // sent by an earlier attempt whose bookkeeping was lost
	}
	var cm models.TicketComment
	if err := db.Take(&cm, "id = ?", commentID).Error; err != nil {
		return missing("comment "+commentID, err)
	}
	t, org, err := a.ticketAndOrg(db, out.TicketID)
	if err != nil {
		return err
	}
	msg, err := a.threaded(db, t, org, out.MessageID, out.CreatedAt)
	if err != nil {
		return err
	}
	msg.Body = cm.Body
	if err := a.Mail.sendFrom(ctx, models.WorkspaceAddress(t.OrgID, a.Domain), t.RequesterEmail, msg.bytes(time.Now())); err != nil {
		_ = a.setStatus(ctx, out.OrgID, out.MessageID, models.EmailQueued, err.Error()) // the last failure, for agents
		return err
	}
	return a.setStatus(ctx, out.OrgID, out.MessageID, models.EmailSent, "")
}

// Acknowledge sends the requester of a ticket opened by e-mail a receipt
// naming the ticket's number, threaded under their message (so that their
// next reply finds the ticket), and records it.
func (a *Email) Acknowledge(ctx context.Context, ticketID string) error {
	db := a.DB.WithContext(ctx)
	t, org, err := a.ticketAndOrg(db, ticketID)
	if err != nil {
		return err
	}
	id := "ack-" + t.ID + "@" + a.Domain
	var sent models.EmailMessage
	if err := db.Take(&sent, "org_id = ? AND message_id = ?", t.OrgID, id).Error; err == nil && sent.Status == models.EmailSent {
		return nil
	}
	now := models.Now()
	row := models.EmailMessage{OrgID: t.OrgID, MessageID: id, TicketID: t.ID, Direction: models.EmailOut, Status: models.EmailQueued,
		CreatedAt: now, UpdatedAt: now}
	if err := db.Where("org_id = ? AND message_id = ?", t.OrgID, id).FirstOrCreate(&row).Error; err != nil {
		return err
	}
	msg, err := a.threaded(db, t, org, id, row.CreatedAt)
	if err != nil {
		return err
	}
	msg.Body = fmt.Sprintf("We have received your request and opened ticket #%d: %s.\n\nReply to this message to add to it.\n", t.Number, t.Subject)
	// A receipt is automatic: auto-responders must not answer it.
	msg.AutoSubmitted = "auto-replied"
	if err := a.Mail.sendFrom(ctx, models.WorkspaceAddress(t.OrgID, a.Domain), t.RequesterEmail, msg.bytes(time.Now())); err != nil {
		return err
	}
	return a.setStatus(ctx, t.OrgID, id, models.EmailSent, "")
}

// SendVerification mails support address addressID its verification
// token, from the workspace's own address: forwarded back to that address
// — as all of the support address's mail will be — it verifies the
// address. A person who reads it there may forward it by hand. An address
// verified or removed meanwhile gets nothing.
func (a *Email) SendVerification(ctx context.Context, addressID string) error {
	db := a.DB.WithContext(ctx)
	var addr models.EmailAddress
	if err := db.Take(&addr, "id = ?", addressID).Error; errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && addr.VerifiedAt != nil) {
		return nil
	} else if err != nil {
		return err
	}
	var org models.Organization
	if err := db.Take(&org, "id = ?", addr.OrgID).Error; err != nil {
		return missing("organization "+addr.OrgID, err)
	}
	own := models.WorkspaceAddress(org.ID, a.Domain)
	msg := mailMessage{From: (&mail.Address{Name: org.Name, Address: own}).String(), To: addr.Address,
		Subject: fmt.Sprintf("Verify %s for %s (%s)", addr.Address, org.Name, addr.Token),
		Body: fmt.Sprintf("%s asked to receive the support mail of %s.\n\n"+
			"Forward this address's mail to %s: this message then comes back through the forwarding and verifies it.\n"+
			"Or forward this message there by hand once forwarding is set up.\n\nVerification code: %s\n",
			org.Name, addr.Address, own, addr.Token),
		MessageID: "verify-" + addr.ID + "@" + a.Domain, AutoSubmitted: "auto-generated"}
	return a.Mail.sendFrom(ctx, own, addr.Address, msg.bytes(time.Now()))
}

// MarkReplyFailed records that the reply of commentID could not be sent:
// the workflow gave up (an SMTP refusal, or every retry failed).
func (a *Email) MarkReplyFailed(ctx context.Context, commentID, reason string) error {
	err := a.DB.WithContext(ctx).Model(&models.EmailMessage{}).Where("comment_id = ? AND direction = ?", commentID, models.EmailOut).
		Updates(map[string]any{"status": models.EmailFailed, "error": models.Truncate(reason, 500), "updated_at": models.Now()}).Error
	return err
}

func (a *Email) ticketAndOrg(db *gorm.DB, ticketID string) (*models.Ticket, *models.Organization, error) {
	var t models.Ticket
	if err := db.Take(&t, "id = ?", ticketID).Error; err != nil {
		return nil, nil, missing("ticket "+ticketID, err)
	}
	var org models.Organization
	if err := db.Take(&org, "id = ?", t.OrgID).Error; err != nil {
		return nil, nil, missing("organization "+t.OrgID, err)
	}
	return &t, &org, nil
}

// threaded is message messageID of ticket t's thread, from and replying to
// the workspace's address, threaded under the thread's messages recorded
// before since (In-Reply-To the latest, References up to 50 of the latest),
// so mail clients keep the conversation together.
func (a *Email) threaded(db *gorm.DB, t *models.Ticket, org *models.Organization, messageID string, since time.Time) (mailMessage, error) {
	var earlier []models.EmailMessage
	err := db.Where("ticket_id = ? AND message_id <> ? AND created_at <= ?", t.ID, messageID, since).
		Order("created_at DESC").Limit(50).Find(&earlier).Error
	refs := make([]string, len(earlier))
	for i, m := range earlier {
		refs[len(earlier)-1-i] = m.MessageID
	}
	from := (&mail.Address{Name: org.Name, Address: models.WorkspaceAddress(t.OrgID, a.Domain)}).String()
	return mailMessage{From: from, ReplyTo: from, To: t.RequesterEmail, Subject: models.ReplySubject(t), MessageID: messageID,
		References: refs}, err
}

// setStatus records an outbound message's delivery; a bounce recorded
// meanwhile (a fast one, read before this attempt's bookkeeping) stays.
func (a *Email) setStatus(ctx context.Context, orgID, messageID, status, reason string) error {
	return a.DB.WithContext(ctx).Model(&models.EmailMessage{}).
		Where("org_id = ? AND message_id = ? AND status <> ?", orgID, messageID, models.EmailBounced).
		Updates(map[string]any{"status": status, "error": models.Truncate(reason, 500), "updated_at": models.Now()}).Error
}

// NoticesPerHour is how many rejection notices one sender gets from a
// workspace an hour: a storm of messages refused for its rate gets one.
const NoticesPerHour = 1

// noticeDue tells whether the sender of m, rejected after it was
// accepted, is told: a person's message (not a machine's, a bounce or a
// list's — never a notice to a notice), with a sender to answer, within
// NoticesPerHour.
func noticeDue(tx *gorm.DB, m *models.InboundEmail, p *models.ParsedEmail, now time.Time) (bool, error) {
	local, _, _ := strings.Cut(m.MailFrom, "@")
	if m.MailFrom == "" || strings.EqualFold(local, "mailer-daemon") || p.Automatic != "" || p.Bounce != nil {
		return false, nil
	}
	rate, err := models.HitRate(tx.Statement.Context, tx, "mail-notice|"+m.OrgID+"|"+m.MailFrom, time.Hour, now, 1)
	return err == nil && rate.Estimate() <= NoticesPerHour, err
}

// NotifyRejection tells the sender of the inbound message inboundID,
// accepted and then rejected, with a delivery status notification (RFC
// 3464: multipart/report, the reason, the message's header), sent with
// an empty envelope sender so that nothing answers it. Without an SMTP
// server configured, nothing is sent.
func (a *Email) NotifyRejection(ctx context.Context, inboundID string) error {
	if !a.Mail.Configured() {
		return nil
	}
	var m models.InboundEmail
	if err := a.DB.WithContext(ctx).Take(&m, "id = ?", inboundID).Error; err != nil {
		return missing("inbound message "+inboundID, err)
	}
	if m.MailFrom == "" || m.Status != models.InboundRejected {
		return nil
	}
	return a.Mail.sendFrom(ctx, "", m.MailFrom, rejectionNotice(&m, a.Domain, time.Now()))
}

// rejectionReasons say, to a sender, why their message made no request.
var rejectionReasons = map[string]string{
	"rate_limited": "the support address took too many messages from you within an hour; write again later",
}

// rejectionNotice is the delivery status notification of m's rejection.
func rejectionNotice(m *models.InboundEmail, domain string, now time.Time) []byte {
	boundary := "dsn-" + m.ID
	why := rejectionReasons[m.Reason]
	if why == "" {
		why = "it could not be taken in (" + m.Reason + ")"
	}
	header, _, found := bytes.Cut(m.Raw, []byte("\r\n\r\n"))
	if !found { // LF line ends
		header, _, _ = bytes.Cut(m.Raw, []byte("\n\n"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: Mail Delivery System <mailer-daemon@%s>\r\nTo: <%s>\r\nSubject: Undelivered Mail Returned to Sender\r\n", domain, m.MailFrom)
	fmt.Fprintf(&b, "Message-ID: <notice-%s@%s>\r\nDate: %s\r\nAuto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n", m.ID, domain, now.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Content-Type: multipart/report; report-type=delivery-status; boundary=\"%s\"\r\n\r\n", boundary)
	fmt.Fprintf(&b, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", boundary)
	fmt.Fprintf(&b, "Your message to %s was received but no support request was made of it: %s.\r\n\r\n", m.Rcpt, why)
	fmt.Fprintf(&b, "--%s\r\nContent-Type: message/delivery-status\r\n\r\n", boundary)
	fmt.Fprintf(&b, "Reporting-MTA: dns; %s\r\nArrival-Date: %s\r\n\r\n", domain, m.ReceivedAt.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Final-Recipient: rfc822; %s\r\nAction: failed\r\nStatus: 5.7.1\r\nDiagnostic-Code: smtp; 550 5.7.1 %s\r\n\r\n", m.Rcpt, m.Reason)
	fmt.Fprintf(&b, "--%s\r\nContent-Type: text/rfc822-headers\r\n\r\n%s\r\n--%s--\r\n", boundary, header, boundary)
	return []byte(b.String())
}
