package transfers

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// A person's erasure (GDPR article 17, models/erasures.go): POST
// …/privacy/erase {"email"} counts what would be erased and answers a
// pending erasure with a confirmation token (201); the same call with the
// token within 15 minutes confirms it (202): the address is refused by
// intake from then on, and the Erasure workflow erases the person. GET
// …/privacy/erasures lists them, the record of who asked and when —
// without the address. For the organization's OWNER only.

// erasureRequest names the person to erase, and confirms with Token.
type erasureRequest struct {
	Email string `json:"email" validate:"required,email,max=254"`
	Token string `json:"token" validate:"max=100"`
}

// erasureView is an erasure as the API shows it.
type erasureView struct {
	ID    string           `json:"id"`
	State string           `json:"state"`
	Found map[string]int64 `json:"found"`
	// Erased is what the erasure deleted or anonymized, once done.
	Erased      map[string]int64 `json:"erased"`
	RequestedBy string           `json:"requestedBy"`
	ConfirmedBy *string          `json:"confirmedBy"`
	CreatedAt   time.Time        `json:"createdAt"`
	// ConfirmBy is when a pending erasure's token stops confirming it.
	ConfirmBy    time.Time  `json:"confirmBy"`
	ConfirmedAt  *time.Time `json:"confirmedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	BlockedUntil *time.Time `json:"blockedUntil"`
	WorkflowID   *string    `json:"workflowId"`
	// Token confirms the erasure: in the answer to the request only.
	Token string `json:"token,omitempty"`
}

func toErasure(e *models.Erasure) erasureView {
	v := erasureView{ID: e.ID, State: e.State, Found: models.Counts(e.Found), Erased: models.Counts(e.Erased), RequestedBy: e.RequestedBy,
		CreatedAt: e.CreatedAt, ConfirmBy: e.ConfirmBy, ConfirmedAt: e.ConfirmedAt, FinishedAt: e.FinishedAt, BlockedUntil: e.BlockedUntil}
	if e.ConfirmedAt != nil {
		id := names.ErasureID(e.OrgID, e.ID)
		v.ConfirmedBy, v.WorkflowID = &e.ConfirmedBy, &id
	}
	return v
}

// owner resolves the organization of the path (:id) for its OWNER: a
// person's data is theirs alone to export or erase.
func (h *handlers) owner(c *fiber.Ctx) (*auth.Principal, error) {
	p, err := h.Org(c, string([]byte(c.Params("id"))))
	if err != nil {
		return nil, err
	}
	if err := auth.RequireUser(p); err != nil {
		return nil, err
	}
	if !isOwner(p) {
		return nil, models.Err(models.ErrForbidden, "owner_required", "Only the organization's OWNER may export or erase a person's data.")
	}
	return p, nil
}

// erase asks for an erasure (no token) or confirms one (the token).
func (h *handlers) erase(c *fiber.Ctx) error {
	var req erasureRequest
	if err := web.Decode(c, &req); err != nil {
		return err
	}
	p, err := h.owner(c)
	if err != nil {
		return err
	}
	tx := web.Tx(c)
	location := "/crm/organization/" + p.OrgID + "/privacy/erasures/"
	if req.Token == "" {
		e, token, err := models.RequestErasure(tx, p.OrgID, req.Email, p.Actor())
		if err != nil {
			return err
		}
		v := toErasure(e)
		v.Token = token
		c.Set(fiber.HeaderCacheControl, "no-store") // the token: never stored by the idempotency layer
		c.Location(location + e.ID)
		return c.Status(fiber.StatusCreated).JSON(v)
	}
	e, err := models.ConfirmErasure(tx, p.OrgID, models.NormalizeEmail(req.Email), req.Token, p.Actor())
	if err != nil {
		return err
	}
	err = h.Starter.In(c, tx).Start(record.Start{WorkflowID: names.ErasureID(e.OrgID, e.ID), Workflow: names.ErasureWorkflow,
		Input: models.ErasureInput{OrgID: e.OrgID, ErasureID: e.ID}, OrgID: e.OrgID, Kind: names.KindErasure})
	if err != nil {
		return err
	}
	c.Location(location + e.ID)
	return c.Status(fiber.StatusAccepted).JSON(toErasure(e))
}

// erasures is the organization's erasures, for its OWNER.
func (h *handlers) erasures(c *fiber.Ctx) (*gorm.DB, error) {
	p, err := h.owner(c)
	if err != nil {
		return nil, err
	}
	return h.DB.WithContext(c.UserContext()).Where("org_id = ?", p.OrgID), nil
}

func (h *handlers) listErasures(c *fiber.Ctx) error {
	q, err := h.erasures(c)
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(q, page, func(e *models.Erasure) web.Cursor { return web.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} })
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toErasure)
}

func (h *handlers) getErasure(c *fiber.Ctx) error {
	q, err := h.erasures(c)
	if err != nil {
		return err
	}
	id := c.Params("erasureId")
	if !models.ValidID(id) {
		return models.NotFound("The erasure")
	}
	var e models.Erasure
	err = q.Where("id = ?", id).Take(&e).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.NotFound("The erasure")
	}
	if err != nil {
		return err
	}
	return c.JSON(toErasure(&e))
}
