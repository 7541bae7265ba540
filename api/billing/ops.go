package billing

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows/names"
)

// The operator API for billing staff (/ops/v1/billing/…): they work across
// organizations, find failed changes and re-run them. The group's
// middleware (auth.Staff) admits staff user tokens only.

// OpsRoutes mounts the billing-staff routes on r (the /ops/v1 group).
func OpsRoutes(r fiber.Router, s *Service) {
	h := &ops{s}
	r.Get("/billing/changes", h.list)
	r.Get("/billing/changes/:id", h.get)
	r.Post("/billing/changes/:id/retry", h.retry)
}

type ops struct{ s *Service }

// opsChange is a change as billing staff see it: which organization, and
// every retry with who asked, when and how it ended. The payment's client
// secret is the customer's and is not shown.
type opsChange struct {
	ID    string `json:"id"`
	OrgID string `json:"orgId"`
	views.SubscriptionChangeFields
	Retries []retryResponse `json:"retries"`
}

type retryResponse struct {
	ID          string     `json:"id"`
	Number      int        `json:"number"`
	RequestedBy string     `json:"requestedBy"`
	FromStep    string     `json:"fromStep"`
	ErrorCode   string     `json:"errorCode"`
	Outcome     string     `json:"outcome"`
	OutcomeCode string     `json:"outcomeCode"`
	OutcomeAt   *time.Time `json:"outcomeAt"`
	CreatedAt   time.Time  `json:"createdAt"`
}

func toRetry(r *models.SubscriptionChangeRetry) retryResponse {
	return retryResponse{ID: r.ID, Number: r.Number, RequestedBy: r.RequestedBy, FromStep: r.FromStep, ErrorCode: r.ErrorCode,
		Outcome: r.Outcome, OutcomeCode: r.OutcomeCode, OutcomeAt: r.OutcomeAt, CreatedAt: r.CreatedAt}
}

func toOpsChange(c *models.SubscriptionChange, retries []models.SubscriptionChangeRetry) opsChange {
	out := opsChange{ID: c.ID, OrgID: c.OrgID, SubscriptionChangeFields: views.ToSubscriptionChangeFields(c), Retries: make([]retryResponse, 0, len(retries))}
	for i := range retries {
		out.Retries = append(out.Retries, toRetry(&retries[i]))
	}
	return out
}

func (h *ops) configured() error {
	if !h.s.Configured() {
		return ErrNotConfigured
	}
	return nil
}

func (h *ops) list(c *fiber.Ctx) error {
	if err := h.configured(); err != nil {
		return err
	}
	rows, err := pageOfChanges(c, h.s, strings.Clone(c.Query("orgId")))
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(rows.Data))
	for i := range rows.Data {
		ids = append(ids, rows.Data[i].ID)
	}
	retries, err := models.RetriesOfChanges(c.UserContext(), h.s.DB, ids)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, func(ch *models.SubscriptionChange) opsChange { return toOpsChange(ch, retries[ch.ID]) })
}

// withRetries is change as billing staff see it, with its retries read on
// db (the request's transaction after a retry).
func withRetries(c *fiber.Ctx, db *gorm.DB, change *models.SubscriptionChange) (opsChange, error) {
	retries, err := models.SubscriptionChangeRetries(c.UserContext(), db, change.ID)
	if err != nil {
		return opsChange{}, err
	}
	return toOpsChange(change, retries), nil
}

func (h *ops) get(c *fiber.Ctx) error {
	if err := h.configured(); err != nil {
		return err
	}
	change, err := findChange(c, h.s, "")
	if err != nil {
		return err
	}
	out, err := withRetries(c, h.s.DB, change)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// retry re-runs a failed change from the step that failed (202; the
// change's new run is subscription/<org>/<change>/retry-<n>). Applied is a
// 409 change_applied; an open, expired or canceled change a 409 too.
func (h *ops) retry(c *fiber.Ctx) error {
	if err := h.configured(); err != nil {
		return err
	}
	// Retry reads the change under a row lock, and a malformed or unknown
	// id is not found there either.
	tx := h.s.Starter.In(c, web.Tx(c))
	p := auth.From(c)
	change, _, err := h.s.RetryAudited(tx, strings.Clone(c.Params("id")), models.StaffAuditEntry{
		ActorID: p.UserID, Actor: requester(p), Channel: models.StaffViaAPI, ClientIP: web.ClientIP(c)})
	if IsRefusal(err) {
		web.KeepOnRefusal(c) // the audit entry of the refusal stays
	}
	if errors.Is(err, models.ErrNotFound) {
		return models.NotFound("The subscription change")
	}
	if err != nil {
		return downgradeProblem(err)
	}
	out, err := withRetries(c, tx.DB, change)
	if err != nil {
		return err
	}
	c.Location("/ops/v1/billing/changes/" + change.ID)
	return c.Status(fiber.StatusAccepted).JSON(out)
}

// RetryAudited is Retry for a staff member, written to the staff audit log
// whatever its outcome (who fills in the actor, channel and address). The
// retry runs in a savepoint of tx: a refusal (IsRefusal) undoes the retry's
// writes and leaves the audit entry in tx, which the caller commits; any
// other error leaves tx to be rolled back.
func (s *Service) RetryAudited(tx *record.Tx, changeID string, who models.StaffAuditEntry) (*models.SubscriptionChange, *models.SubscriptionChangeRetry, error) {
	var change *models.SubscriptionChange
	var retry *models.SubscriptionChangeRetry
	err := tx.Savepoint(func(sp *record.Tx) (err error) {
		change, retry, err = s.Retry(sp, changeID, who.Actor)
		return err
	})
	who.Action, who.Target = models.StaffRetryChange, changeID
	switch {
	case err == nil:
		who.OrgID, who.Outcome = change.OrgID, models.StaffOutcomeDone
		who.Detail = fmt.Sprintf("retry %d from step %s: workflow %s", retry.Number, retry.FromStep, names.SubscriptionChangeID(change.OrgID, change.ID, change.Retry()))
	case IsRefusal(err):
		who.Outcome, who.Detail = models.StaffOutcomeRefused, web.ToProblem(err).Code
		if models.ValidID(changeID) {
			if err := tx.Model(&models.SubscriptionChange{}).Where("id = ?", changeID).Pluck("org_id", &who.OrgID).Error; err != nil {
				return nil, nil, err
			}
		}
	default:
		return nil, nil, err
	}
	if err := models.RecordStaffAction(tx.DB, &who); err != nil {
		return nil, nil, err
	}
	return change, retry, err
}

// IsRefusal tells whether err refuses the action (its answer is a 4xx:
// not found, conflict, invalid), rather than failing to carry it out or
// finding billing off.
func IsRefusal(err error) bool {
	if err == nil {
		return false
	}
	status := web.ToProblem(err).Status
	return status >= 400 && status < 500
}
