package crm

import (
	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// emit records an event of the organization for its webhook endpoints in
// the request's transaction: object is the JSON the API returns for the
// object.
func (h *handlers) emit(c *fiber.Ctx, tx *gorm.DB, orgID, typ string, object any) error {
	return h.Starter.In(c, tx).Emit(models.Event{OrgID: orgID, Type: typ, Object: object})
}

// emitUpdate records the events types of a change of an object in the
// request's transaction (outbox.Tx.EmitChange): each with the fields whose
// values differ between before and after (their JSON views) at their
// earlier values; a change that changed nothing emits nothing.
func (h *handlers) emitUpdate(c *fiber.Ctx, tx *gorm.DB, orgID string, before, after, object any, types ...string) error {
	return h.Starter.In(c, tx).EmitChange(orgID, before, after, object, types...)
}
