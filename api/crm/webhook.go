package crm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows"
)

// Webhook returns the handler chain of POST /crm/leads/webhook, the public
// intake for external forms. It takes no Authorization header: the caller
// sends x-api-key (a crm_ key) or names the organization with orgId in the
// body, and can then only create leads, within rate limits.
func Webhook(d Deps) []fiber.Handler {
	h := &handlers{d}
	return []fiber.Handler{
		web.RateLimit("webhook-ip", 120, time.Minute, nil),
		web.RateLimit("webhook-org-ip", 30, time.Minute, func(c *fiber.Ctx) string { return webhookScope(c) + "|" + c.IP() }),
		h.webhookAuth, // before idempotency: a refused request stores nothing
		web.Idempotency(d.DB, web.IdempotencyOptions{Scope: webhookScope}),
		h.webhook,
	}
}

// intakeDedupeWindow is how long an identical submission counts as a resend
// of the first one rather than a new submission.
const intakeDedupeWindow = 24 * time.Hour

// webhookScope scopes rate limits and idempotency keys to the organization
// (by orgId) or to the key.
func webhookScope(c *fiber.Ctx) string {
	if key := c.Get("X-Api-Key"); key != "" {
		return "key:" + models.HashKey(key)
	}
	var body struct {
		OrgID string `json:"orgId"`
	}
	_ = json.Unmarshal(c.Body(), &body)
	return "org:" + body.OrgID
}

type webhookRequest struct {
	OrgID string `json:"orgId" validate:"omitempty,uuid"`
	leadFields
}

type webhookResponse struct {
	IntakeID  string `json:"intakeId"`
	LeadID    string `json:"leadId"`
	Duplicate bool   `json:"duplicate"`
	Status    string `json:"status"`
}

// webhook accepts a submission with one durable write — the intake record
// and its LeadIntake workflow start, in one transaction — and answers 202
// at once; it never waits for the workflow. If Temporal is unreachable the
// outbox relay starts the workflow later: nothing is lost. leadId is the
// existing lead when the e-mail is known (duplicate: true), else the id the
// new lead will have.
func (h *handlers) webhook(c *fiber.Ctx) error {
	req := c.Locals("webhookRequest").(*webhookRequest)
	orgID := c.Locals("webhookOrg").(string)
	ctx := c.UserContext()
	pl := req.payload("webhook")
	key := c.Get(web.HeaderIdempotencyKey)
	if key != "" {
		// Scoped like the idempotency middleware: two senders' keys never collide.
		key = "key:" + models.HashKey(webhookScope(c))[:16] + ":" + key
	} else {
		sum := sha256.Sum256([]byte(orgID + "\x00" + mustJSON(pl)))
		key = "body:" + hex.EncodeToString(sum[:16])
	}
	// Outside the window an identical submission is a new one.
	var prior models.LeadIntake
	if h.DB.WithContext(ctx).Select("created_at").Take(&prior, "org_id = ? AND dedupe_key = ?", orgID, key).Error == nil &&
		prior.CreatedAt.Before(models.Now().Add(-intakeDedupeWindow)) {
		key += ":" + strconv.FormatInt(models.Now().Unix(), 10)
	}
	resp := webhookResponse{Status: "accepted"}
	if pl.Email != "" {
		var existing models.Lead
		if h.DB.WithContext(ctx).Select("id").Take(&existing, "org_id = ? AND email = ?", orgID, pl.Email).Error == nil {
			resp.LeadID, resp.Duplicate = existing.ID, true
		}
	}
	if resp.LeadID == "" {
		resp.LeadID = models.NewID()
	}
	intake := &models.LeadIntake{ID: models.NewID(), OrgID: orgID, DedupeKey: key, LeadID: resp.LeadID,
		Payload: mustJSON(pl), Status: models.IntakeReceived, Duplicate: resp.Duplicate, CreatedAt: models.Now()}
	err := h.Starter.Transact(ctx, func(tx *outbox.Tx) error {
		res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "org_id"}, {Name: "dedupe_key"}}, DoNothing: true}).Create(intake)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 { // the same submission again: answer as the first time
			var first models.LeadIntake
			if err := tx.Take(&first, "org_id = ? AND dedupe_key = ?", orgID, key).Error; err != nil {
				return err
			}
			intake = &first
			return nil
		}
		return tx.Start(outbox.Start{WorkflowID: workflows.LeadIntakeID(orgID, key), Workflow: workflows.LeadIntakeWorkflow,
			Input: workflows.LeadIntakeInput{IntakeID: intake.ID, OrgID: orgID}, OrgID: orgID, Kind: workflows.KindLeadIntake})
	})
	if err != nil {
		return err
	}
	resp.IntakeID, resp.LeadID, resp.Duplicate = intake.ID, intake.LeadID, intake.Duplicate
	return c.Status(fiber.StatusAccepted).JSON(resp)
}

// webhookAuth decodes the submission and resolves its organization: from
// x-api-key, or from orgId in the body (then only an active organization).
func (h *handlers) webhookAuth(c *fiber.Ctx) error {
	var req webhookRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	orgID := req.OrgID
	if secret := c.Get("X-Api-Key"); secret != "" {
		k, err := h.Auth.APIKey(c, secret, "crm")
		if err != nil {
			return err
		}
		if orgID != "" && orgID != k.OrgID {
			return web.NotFound("The organization")
		}
		orgID = k.OrgID
	} else if orgID == "" {
		return web.Unauthorized("Send x-api-key: <crm_ key>, or the organization's orgId in the body.")
	}
	if err := req.reachable(); err != nil {
		return err
	}
	org, err := models.FindOrg(c.UserContext(), h.DB, orgID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return err // a database failure is not "no such organization"
	}
	if err != nil || org.Status != models.OrgActive {
		return web.NotFound("The organization")
	}
	c.Locals("webhookRequest", &req)
	c.Locals("webhookOrg", orgID)
	return c.Next()
}
