package helpdesk

import (
	"cmp"
	"encoding/json"
	"errors"
	"maps"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/mailin"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// The e-mail channel's routes: the workspace's address and settings, its
// own support addresses, and the inbound route for mail providers that
// POST a received message instead of relaying it over SMTP.

// errMailOff answers the channel's routes when the server has no mail
// domain (SUITE_MAIL_DOMAIN).
var errMailOff = models.Err(models.ErrUnavailable, "email_not_configured",
	"The e-mail channel is not configured on this server (SUITE_MAIL_DOMAIN).")

type emailChannelResponse struct {
	// Address is the workspace's own inbound address.
	Address     string `json:"address"`
	Domain      string `json:"domain"`
	Acknowledge bool   `json:"acknowledge"`
	// HeaderFields maps a header of a message that opens a ticket to a
	// custom field of tickets.
	HeaderFields map[string]string      `json:"headerFields"`
	Addresses    []supportAddressOutput `json:"addresses"`
}

type supportAddressOutput struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Status is pending until the verification message came back through
	// the address's forwarding, then verified; mail to a pending address
	// is refused.
	Status     string     `json:"status"`
	VerifiedAt *time.Time `json:"verifiedAt"`
	CreatedAt  time.Time  `json:"createdAt"`
}

func toSupportAddress(a *models.EmailAddress) supportAddressOutput {
	status := "pending"
	if a.VerifiedAt != nil {
		status = "verified"
	}
	return supportAddressOutput{ID: a.ID, Address: a.Address, Status: status, VerifiedAt: a.VerifiedAt, CreatedAt: a.CreatedAt}
}

func (h *handlers) emailChannel(c *fiber.Ctx) error {
	if h.MailDomain == "" {
		return errMailOff
	}
	return h.sendChannel(c, h.DB.WithContext(c.UserContext()))
}

// sendChannel answers with the workspace's channel as db reads it.
func (h *handlers) sendChannel(c *fiber.Ctx, db *gorm.DB) error {
	orgID := auth.From(c).OrgID
	var ch models.EmailChannel
	if err := db.Take(&ch, "org_id = ?", orgID).Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return err
	}
	var addrs []models.EmailAddress
	if err := db.Where("org_id = ?", orgID).Order("created_at, id").Find(&addrs).Error; err != nil {
		return err
	}
	out := emailChannelResponse{Address: models.WorkspaceAddress(orgID, h.MailDomain), Domain: h.MailDomain,
		Acknowledge: ch.Acknowledge, HeaderFields: ch.HeaderFieldMap(), Addresses: make([]supportAddressOutput, len(addrs))}
	for i := range addrs {
		out.Addresses[i] = toSupportAddress(&addrs[i])
	}
	return c.JSON(out)
}

type updateEmailChannelRequest struct {
	Acknowledge *bool `json:"acknowledge"`
	// HeaderFields replaces the header-to-field map ({} clears it).
	HeaderFields *map[string]string `json:"headerFields" validate:"omitnil,max=20"`
}

// headerName is a header's name as RFC 5322 writes it: printable ASCII
// but the colon.
var headerName = regexp.MustCompile(`^[!-9;-~]{1,76}$`)

// checkHeaderFields checks a header-to-field map: header names, and keys
// of the workspace's active custom fields of tickets (not members: a
// sender does not name the workspace's members). It returns the map with
// canonical header names.
func checkHeaderFields(db *gorm.DB, orgID string, m map[string]string) (map[string]string, error) {
	defs, err := models.FieldDefinitions(db, orgID, models.AutomationTicket)
	if err != nil {
		return nil, err
	}
	var bad []models.FieldError
	out := map[string]string{}
	taken := map[string]bool{}
	for _, header := range slices.Sorted(maps.Keys(m)) {
		key := m[header]
		at := slices.IndexFunc(defs, func(f models.CustomField) bool { return f.Key == key })
		switch {
		case taken[key]:
			bad = append(bad, models.FieldError{Field: "headerFields." + header, Code: "duplicate_field",
				Message: "Another header sets this field already: one header a field."})
		case !headerName.MatchString(header):
			bad = append(bad, models.FieldError{Field: "headerFields." + header, Code: "header_name",
				Message: "A header's name: printable ASCII without a colon, at most 76 characters."})
		case at < 0 || defs[at].Status != models.FieldActive || defs[at].Type == models.FieldMember:
			bad = append(bad, models.FieldError{Field: "headerFields." + header, Code: "unknown_field",
				Message: "Not the key of a custom field of tickets (a member field is not set from a header)."})
		default:
			out[textproto.CanonicalMIMEHeaderKey(header)] = key
		}
		taken[key] = true
	}
	if len(bad) > 0 {
		return nil, models.Invalid(bad...)
	}
	return out, nil
}

// updateEmailChannel changes the workspace's channel settings (ADMIN).
func (h *handlers) updateEmailChannel(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	if h.MailDomain == "" {
		return errMailOff
	}
	var req updateEmailChannelRequest
	tx := web.Tx(c)
	var headerFields map[string]string
	if err := web.Decode(c, &req, func() (err error) {
		if req.HeaderFields != nil {
			headerFields, err = checkHeaderFields(tx, p.OrgID, *req.HeaderFields)
		}
		return err
	}); err != nil {
		return err
	}
	now := models.Now()
	// The row is made if it is not there yet, then changed locked: two
	// first changes at once both land.
	err := tx.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&models.EmailChannel{OrgID: p.OrgID, HeaderFields: "{}", CreatedAt: now, UpdatedAt: now}).Error
	if err != nil {
		return err
	}
	var ch models.EmailChannel
	if err := models.LockForUpdate(tx).Take(&ch, "org_id = ?", p.OrgID).Error; err != nil {
		return err
	}
	if req.Acknowledge != nil {
		ch.Acknowledge = *req.Acknowledge
	}
	if req.HeaderFields != nil {
		raw, _ := json.Marshal(headerFields)
		ch.HeaderFields = string(raw)
	}
	ch.UpdatedAt = now
	if err := tx.Save(&ch).Error; err != nil {
		return err
	}
	return h.sendChannel(c, tx)
}

type addSupportAddressRequest struct {
	Address string `json:"address" validate:"required,email,max=254"`
}

var errAddressTaken = models.Err(models.ErrConflict, "address_taken", "The workspace has this address already.")

// maxSupportAddresses bounds a workspace's support addresses, verified or
// not: each one added mails its verification to an address of the
// caller's choosing.
const maxSupportAddresses = 20

// addSupportAddress adds one of the workspace's own addresses, which
// forward to it (ADMIN): pending until the verification message the suite
// mails it comes back through the forwarding. An address at the server's
// mail domain is the server's to give: refused. Another workspace naming
// the address first takes nothing: only the workspace its mail reaches can
// verify it.
func (h *handlers) addSupportAddress(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	if h.MailDomain == "" {
		return errMailOff
	}
	if !h.MailOutbound {
		return models.Err(models.ErrUnavailable, "email_outbound_not_configured",
			"Support addresses are verified by e-mail, and this server sends none (SMTP_URL).")
	}
	var req addSupportAddressRequest
	if err := web.Decode(c, &req, func() error {
		if strings.HasSuffix(models.NormalizeEmail(req.Address), "@"+strings.ToLower(h.MailDomain)) {
			return models.Invalid(models.FieldError{Field: "address", Code: "server_domain",
				Message: "Addresses at " + h.MailDomain + " are the server's; add an address of your own domain."})
		}
		return nil
	}); err != nil {
		return err
	}
	tx := web.Tx(c)
	if err := models.WithinOrgLimit(tx, &models.EmailAddress{}, p.OrgID, maxSupportAddresses, "too_many_addresses",
		"A workspace has at most %d support addresses; remove one first."); err != nil {
		return err
	}
	a := &models.EmailAddress{ID: models.NewID(), OrgID: p.OrgID, Address: models.NormalizeEmail(req.Address), Token: models.NewAddressToken(),
		CreatedAt: models.Now()}
	if err := tx.Create(a).Error; err != nil {
		if database.IsUniqueViolation(err) {
			return errAddressTaken
		}
		return err
	}
	err := h.Starter.In(c, tx).Start(record.Start{WorkflowID: names.EmailVerifyID(p.OrgID, a.ID), Workflow: names.EmailVerifyWorkflow,
		Input: workflows.EmailVerifyInput{AddressID: a.ID, OrgID: p.OrgID}, OrgID: p.OrgID, Kind: names.KindEmailVerify})
	if err != nil {
		return err
	}
	c.Location("/helpdesk/channels/email/addresses/" + a.ID)
	return c.Status(fiber.StatusCreated).JSON(toSupportAddress(a))
}

// removeSupportAddress removes one of the workspace's support addresses
// (ADMIN): mail to it is refused from then on.
func (h *handlers) removeSupportAddress(c *fiber.Ctx) error {
	if err := auth.RequireAdmin(auth.From(c)); err != nil {
		return err
	}
	return web.Delete[models.EmailAddress](c, inWorkspace, "The address")
}

type inboundEmailResponse struct {
	ID        string `json:"id"`
	MessageID string `json:"messageId"`
	Status    string `json:"status"`
	// Duplicate: a message with this Message-ID was received before; it is
	// that one.
	Duplicate  bool      `json:"duplicate"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// receiveEmail takes a raw RFC 5322 message POSTed by a mail provider, with
// the workspace's hd_ key: stored with its EmailIngest workflow's start
// before the 202, as the SMTP listener stores it before its 250. The same
// Message-ID again is answered as the message first received.
func (h *handlers) receiveEmail(c *fiber.Ctx) error {
	p := auth.From(c)
	if !p.IsKey() {
		return models.Err(models.ErrForbidden, "key_required", "Mail providers post inbound mail with the workspace's hd_ key (x-api-key).")
	}
	if h.MailDomain == "" {
		return errMailOff
	}
	if ct := strings.ToLower(strings.TrimSpace(strings.SplitN(c.Get(fiber.HeaderContentType), ";", 2)[0])); ct != "message/rfc822" {
		return web.NewProblem(fiber.StatusUnsupportedMediaType, "unsupported_media_type", "Send the raw message as message/rfc822.")
	}
	raw := append([]byte(nil), c.Body()...)
	if len(raw) == 0 {
		return models.Invalid(models.FieldError{Field: "body", Code: "required", Message: "Send the message."})
	}
	// The envelope's sender is lost on the way; the message's Return-Path
	// (a provider adds it) stands for it, and then its From. A message
	// that can never become a ticket is refused, as the listener refuses
	// it at DATA.
	msg, sender := models.ParsePosted(raw)
	if msg.Rejected != "" {
		return models.Err(models.ErrInvalid, "unreadable_message",
			"The message cannot become a ticket (%s): it cannot be read, or names no sender to answer.", msg.Rejected)
	}
	m := &models.InboundEmail{OrgID: p.OrgID, MailFrom: sender, Rcpt: models.WorkspaceAddress(p.OrgID, h.MailDomain),
		Via: "http", Raw: raw}
	tx := h.Starter.In(c, web.Tx(c))
	stored, err := mailin.Store(tx, m, &msg)
	if err != nil {
		return err
	}
	if !stored {
		first := new(models.InboundEmail)
		if err := tx.Take(first, "org_id = ? AND message_id = ?", p.OrgID, m.MessageID).Error; err != nil {
			return err
		}
		m = first
	}
	c.Location("/helpdesk/inbound/email/" + m.ID)
	return c.Status(fiber.StatusAccepted).JSON(inboundEmailResponse{ID: m.ID, MessageID: m.MessageID, Status: m.Status,
		Duplicate: !stored, ReceivedAt: m.ReceivedAt})
}

// inboundStatusResponse is a received message as GET shows it, one or a
// list: what became of it (duplicate is the POST's, false here).
type inboundStatusResponse struct {
	views.InboundEmail
	Duplicate bool `json:"duplicate"`
}

func toInboundStatus(m *models.InboundEmail) inboundStatusResponse {
	return inboundStatusResponse{InboundEmail: views.ToInboundEmail(m)}
}

// inboundColumns are what a message's views read: never its raw bytes.
const inboundColumns = "id, org_id, message_id, mail_from, via, subject, size, status, reason, ticket_id, comment_id, received_at, processed_at"

// inboundEmail shows what became of a received message (the Location of
// the inbound route's 202).
func (h *handlers) inboundEmail(c *fiber.Ctx) error {
	return web.Get(c, h.DB.Select(inboundColumns), inWorkspace, "The message", toInboundStatus)
}

// retryInbound reads a message rejected by a rule of the workspace again
// (the rule has changed: an hour has passed, a limit was raised), as a new
// EmailIngest run; an ADMIN's, OWNER's or key's act.
func (h *handlers) retryInbound(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	m, err := web.Find[models.InboundEmail](models.LockForUpdate(tx.DB).Select(inboundColumns), workspace(c), c.Params("id"), "The message")
	if err != nil {
		return err
	}
	if m.Status != models.InboundRejected || !models.RetryableRejection(m.Reason) {
		return models.Err(models.ErrConflict, "not_retryable",
			"Only a message rejected by a rule of the workspace (a limit) is read again; this one is %s (%s).", m.Status, cmp.Or(m.Reason, "no reason"))
	}
	m.Status, m.Reason, m.ProcessedAt = models.InboundReceived, "", nil
	if err := tx.Model(&models.InboundEmail{}).Where("id = ?", m.ID).
		Updates(map[string]any{"status": m.Status, "reason": "", "processed_at": nil}).Error; err != nil {
		return err
	}
	err = tx.Start(record.Start{WorkflowID: names.EmailIngestRetryID(m.OrgID, m.ID, models.NewID()), Workflow: names.EmailIngestWorkflow,
		Input: workflows.EmailIngestInput{InboundID: m.ID, OrgID: m.OrgID}, OrgID: m.OrgID, Kind: names.KindEmailIngest})
	if err != nil {
		return err
	}
	c.Location("/helpdesk/inbound/email/" + m.ID)
	return c.Status(fiber.StatusAccepted).JSON(toInboundStatus(m))
}

// inboundEmails lists the workspace's received messages, newest first,
// of one status when asked (rejected: what was accepted and then refused).
func (h *handlers) inboundEmails(c *fiber.Ctx) error {
	var f struct {
		Status string `json:"status" validate:"omitempty,oneof=received processed ignored rejected"`
	}
	if err := web.DecodeQuery(c, &f); err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	q := models.Equal(workspace(c).Narrow(h.DB.WithContext(c.UserContext()).Model(&models.InboundEmail{}).Select(inboundColumns)),
		"status", f.Status)
	rows, err := web.PaginateBy(q, page, "received_at", func(m *models.InboundEmail) web.Cursor {
		return web.Cursor{CreatedAt: m.ReceivedAt, ID: m.ID}
	})
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toInboundStatus)
}
