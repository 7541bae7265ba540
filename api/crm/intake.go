package crm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// Webhook returns the handler chain of POST /crm/leads/webhook, the public
// intake for external forms; requests is the request-transaction middleware
// (web.Transactional). It takes no Authorization header: the caller
// sends x-api-key (a crm_ key) or names the organization with orgId in the
// body. An orgId-only sender can only create leads, within rate limits: a
// submission whose e-mail is already a lead is recorded on that lead's
// timeline and changes nothing.
//
// Anonymous forms are limited per IP and per organization and IP. A sender
// with the organization's crm_ key — an integration posting from one
// server — is limited per key instead (WebhookKeyRate a minute), once the
// key is known to be real; wrong keys count against the sending IP (120 a
// minute), and an IP past that is refused before its key is looked up,
// unless the key is one this process has verified lately. The per-key
// counter is taken in blocks (web.Limit.Lease): counted one request at a
// time, every intake of a busy integration updated the same row in turn,
// and that row lock capped the accept rate.
func Webhook(d Deps, requests fiber.Handler) []fiber.Handler {
	h := &handlers{Deps: d, activeOrgs: new(models.ActiveOrgs)}
	keyRate := d.WebhookKeyRate
	if keyRate <= 0 {
		keyRate = DefaultWebhookKeyRate
	}
	anonymous := func(c *fiber.Ctx) bool { return c.Get("X-Api-Key") == "" }
	keyed := func(c *fiber.Ctx) bool { return !anonymous(c) }
	// A key this process has verified lately is no guess: its requests skip
	// the guessing limit (and its round trip), and its refusals do not count.
	unknownKey := func(c *fiber.Ctx) bool {
		secret := c.Get("X-Api-Key")
		return secret != "" && !d.Auth.KnownKey(c, secret, "crm")
	}
	return []fiber.Handler{
		web.Limit{Name: "webhook-ip", Max: 120, Window: time.Minute, Only: anonymous}.Handler(d.DB),
		web.Limit{Name: "webhook-org-ip", Max: 30, Window: time.Minute, Only: anonymous,
			Key: func(c *fiber.Ctx) string { return webhookScope(c) + "|" + web.ClientIP(c) }}.Handler(d.DB),
		web.Limit{Name: "webhook-key-failures-ip", Max: 120, Window: time.Minute, Only: unknownKey, FailuresOnly: true}.Handler(d.DB),
		web.ErrorsAsResponses,
		h.webhookAuth, // before idempotency: a refused request stores nothing
		web.Limit{Name: "webhook-key", Max: keyRate, Window: time.Minute, Only: keyed, Lease: keyRate / keyRateBlocks,
			Key: func(c *fiber.Ctx) string { return c.Locals("webhookSender").(webhookSender).key.ID }}.Handler(d.DB),
		requests, // web.Transactional: after the credential, so a refused request stores nothing
		h.webhook,
	}
}

// DefaultWebhookKeyRate is the intake submissions a minute one crm_ key may
// send, counted across every API process (SUITE_WEBHOOK_KEY_RATE).
const DefaultWebhookKeyRate = 6000

// keyRateBlocks is how many blocks a key's budget is counted in: each API
// process may refuse up to one block (1 %) of a window early.
const keyRateBlocks = 100

// intakeDedupeWindow is how long an identical submission counts as a resend
// of the first one rather than a new submission.
const intakeDedupeWindow = 24 * time.Hour

// webhookScope scopes the anonymous forms' rate limit to the organization
// named in the body; it runs before the body is validated.
func webhookScope(c *fiber.Ctx) string {
	var body struct {
		OrgID string `json:"orgId"`
	}
	_ = json.Unmarshal(c.Body(), &body)
	return "org:" + strings.ToLower(body.OrgID)
}

type webhookRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	leadFields
}

// webhookResponse is the 202 of the intake. An anonymous (orgId-only)
// sender learns nothing about the organization's data: an intake id, its
// status, the workflow id and a Location. LeadID and Duplicate are told
// only to senders holding the organization's crm_ key.
type webhookResponse struct {
	IntakeID   string  `json:"intakeId"`
	Status     string  `json:"status"`
	WorkflowID string  `json:"workflowId"`
	LeadID     *string `json:"leadId,omitempty"`
	Duplicate  *bool   `json:"duplicate,omitempty"`
}

// webhookSender is who sent a submission: the crm_ key (by id) or an
// anonymous form naming the organization.
type webhookSender struct {
	orgID string
	key   *models.APIKey
}

// name is the sender's segment of intake and workflow ids: "key-<keyId>"
// or "form". Both are known to the sender, so a workflow id can be derived
// from the Idempotency-Key it sent.
func (s webhookSender) name() string {
	if s.key != nil {
		return "key-" + s.key.ID
	}
	return "form"
}

// webhook accepts a submission with one durable write — the intake record
// and its LeadIntake workflow start, in one transaction — and answers 202
// at once; it never waits for the workflow. If Temporal is unreachable the
// outbox relay starts the workflow later: nothing is lost.
//
// The intake id scheme (and so the workflow id, lead-intake/<org>/<id>) is
// <sender>/<Idempotency-Key> (intakeKeyPart), or <sender>/body-<hash of
// the submission> when no key is sent; a key reused after the 24-hour
// window gets "@<unix seconds>" appended: the start of the 24-hour period,
// counted from the first submission, that the reuse falls in.
func (h *handlers) webhook(c *fiber.Ctx) error {
	req := c.Locals("webhookRequest").(*webhookRequest)
	sender := c.Locals("webhookSender").(webhookSender)
	orgID := sender.orgID
	pl := req.payload("webhook")
	payload := mustJSON(pl)
	key := sender.name() + "/"
	if k := c.Get(web.HeaderIdempotencyKey); k != "" {
		key += intakeKeyPart(k)
	} else {
		sum := sha256.Sum256([]byte(orgID + "\x00" + payload))
		key += "body-" + hex.EncodeToString(sum[:16])
	}
	intake := &models.LeadIntake{ID: models.NewID(), OrgID: orgID, DedupeKey: key, LeadID: models.NewID(),
		Payload: payload, Status: models.IntakeReceived, Authenticated: sender.key != nil, CreatedAt: models.Now()}
	// The organization's own key may learn (and change) the lead the
	// e-mail already belongs to.
	matchEmail := ""
	if sender.key != nil {
		matchEmail = pl.Email
	}
	// A new submission — the common case — is one statement: the intake,
	// its lead looked up by e-mail, and its workflow start.
	insert, args := models.InsertLeadIntake(intake, matchEmail)
	written, err := h.Starter.In(c, web.OneStatementTx(c)).InsertWith(insert, args, leadIntakeStart(intake), &intake.LeadID, &intake.Duplicate)
	if err == nil && !written {
		// The statement found its dedupe key taken and wrote nothing: the
		// request goes on in its transaction.
		err = h.resubmitted(h.Starter.In(c, web.Tx(c)), intake, matchEmail)
	}
	if err != nil {
		return err
	}
	resp := webhookResponse{IntakeID: intake.ID, Status: "accepted", WorkflowID: names.LeadIntakeID(orgID, intake.DedupeKey)}
	if sender.key != nil {
		leadID, dup := intake.LeadID, intake.Duplicate
		resp.LeadID, resp.Duplicate = &leadID, &dup
	}
	c.Location("/crm/leads/intakes/" + intake.ID)
	return c.Status(fiber.StatusAccepted).JSON(resp)
}

// intakeKeyPart is an Idempotency-Key as it goes into a dedupe key: as
// sent, but with "%" and "@" percent-encoded, and the "b" of a leading
// "body-" too. No key a client sends can then be taken for the suite's own
// forms, a submission without a key (body-<hash>) or a reuse past the window
// (<key>@<period>): all anonymous forms of an organization share a sender,
// and one that knew another's key could otherwise record that reuse first,
// and the honest one would be answered as it.
func intakeKeyPart(k string) string {
	body := strings.HasPrefix(k, "body-")
	if !body && !strings.ContainsAny(k, "%@") {
		return k
	}
	var b strings.Builder
	for i := range len(k) {
		if c := k[i]; c == '%' || c == '@' || (i == 0 && body) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// resubmitted handles a submission whose dedupe key an intake of the
// organization already holds: within the dedupe window it is answered as
// that intake (in becomes it); past the window it is a new submission,
// recorded under the key with the start of its 24-hour period appended, so
// that resends within that period are answered as it in turn.
func (h *handlers) resubmitted(tx *record.Tx, in *models.LeadIntake, matchEmail string) error {
	first, err := intakeByKey(tx.DB, in.OrgID, in.DedupeKey)
	if err != nil {
		return err
	}
	periods := models.Now().Sub(first.CreatedAt) / intakeDedupeWindow
	if periods < 1 {
		*in = first
		return nil
	}
	in.DedupeKey += "@" + strconv.FormatInt(first.CreatedAt.Add(periods*intakeDedupeWindow).Unix(), 10)
	insert, args := models.InsertLeadIntake(in, matchEmail)
	written, err := tx.InsertWith(insert, args, leadIntakeStart(in), &in.LeadID, &in.Duplicate)
	if err != nil || written {
		return err
	}
	// Resent again within the period: answer as the one recorded.
	*in, err = intakeByKey(tx.DB, in.OrgID, in.DedupeKey)
	return err
}

// intakeByKey is the organization's intake with a dedupe key.
func intakeByKey(db *gorm.DB, orgID, key string) (models.LeadIntake, error) {
	var in models.LeadIntake
	err := db.Take(&in, "org_id = ? AND dedupe_key = ?", orgID, key).Error
	return in, err
}

// leadIntakeStart is the LeadIntake workflow start of in.
func leadIntakeStart(in *models.LeadIntake) record.Start {
	return record.Start{WorkflowID: names.LeadIntakeID(in.OrgID, in.DedupeKey), Workflow: names.LeadIntakeWorkflow,
		Input: workflows.LeadIntakeInput{IntakeID: in.ID, OrgID: in.OrgID}, OrgID: in.OrgID, Kind: names.KindLeadIntake}
}

// webhookAuth decodes the submission and resolves its organization: from
// x-api-key, or from orgId in the body (then only an active organization).
func (h *handlers) webhookAuth(c *fiber.Ctx) error {
	var req webhookRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	// Ids are stored in lower case; a UUID in capitals names the same
	// organization and must share its limits, idempotency scope and dedupe
	// keys.
	orgID := strings.ToLower(req.OrgID)
	var key *models.APIKey
	if secret := c.Get("X-Api-Key"); secret != "" {
		k, err := h.Auth.APIKey(c, secret, "crm")
		if err != nil {
			return err
		}
		if orgID != "" && orgID != k.OrgID {
			return models.NotFound("The organization")
		}
		orgID, key = k.OrgID, k
	} else if orgID == "" {
		return models.Unauthorized("Send x-api-key: <crm_ key>, or the organization's orgId in the body.")
	}
	if err := req.reachable(); err != nil {
		return err
	}
	active, err := h.activeOrgs.Active(c.UserContext(), h.DB, orgID)
	if err != nil {
		return err // a database failure is not "no such organization"
	}
	if !active {
		return models.NotFound("The organization")
	}
	c.Locals("webhookRequest", &req)
	c.Locals("webhookSender", webhookSender{orgID: orgID, key: key})
	// Idempotency-Keys belong to the sender: the key, or the anonymous
	// forms of the organization.
	if key != nil {
		web.SetIdempotencyScope(c, "key:"+key.ID)
	} else {
		web.SetIdempotencyScope(c, "form:"+orgID)
	}
	return c.Next()
}

type intakeResponse struct {
	ID         string `json:"id"`
	OrgID      string `json:"orgId"`
	Status     string `json:"status"`
	WorkflowID string `json:"workflowId"`
	// Authenticated tells whether the sender held the organization's crm_
	// key (only those intakes may change an existing lead).
	Authenticated bool `json:"authenticated"`
	// LeadID is the lead the intake created or was recorded on, once
	// processed; Duplicate tells it was an existing lead.
	LeadID      *string    `json:"leadId"`
	Duplicate   bool       `json:"duplicate"`
	CreatedAt   time.Time  `json:"createdAt"`
	ProcessedAt *time.Time `json:"processedAt"`
}

// getIntake shows what became of a web-form submission: the Location of
// the intake's 202. It is a CRM route: only the organization's ADMINs and
// OWNERs (and its crm_ keys) see it — an anonymous sender learns nothing.
func (h *handlers) getIntake(c *fiber.Ctx) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	in, err := web.Find[models.LeadIntake](h.DB.WithContext(c.UserContext()), rowScope(p, ""), c.Params("id"), "The intake")
	if err != nil {
		return err
	}
	out := intakeResponse{ID: in.ID, OrgID: in.OrgID, Status: in.Status, WorkflowID: names.LeadIntakeID(in.OrgID, in.DedupeKey),
		Authenticated: in.Authenticated, Duplicate: in.Duplicate, CreatedAt: in.CreatedAt, ProcessedAt: in.ProcessedAt}
	if in.Status == models.IntakeProcessed {
		out.LeadID = &in.LeadID
	}
	return c.JSON(out)
}
