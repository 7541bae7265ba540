package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
	"github.com/business-suite/suite/workflows/names"
)

// GetPerson answers a contact's or a customer's GET (Get); one merged
// into another answers 301 with the survivor's path (base + its id) in
// Location and the body {"mergedInto": id}.
func GetPerson[T, R any](c *fiber.Ctx, db *gorm.DB, scope Scoper, object, what, base string, view func(*T) R) error {
	row, err := Load[T](c, db, scope, what)
	if errors.Is(err, models.ErrNotFound) {
		s, serr := scope(c)
		if serr != nil {
			return serr
		}
		into, merr := models.MergedInto(db.WithContext(c.UserContext()), s.OrgID, object, string([]byte(c.Params("id"))))
		if merr != nil || into == "" {
			return errors.Join(err, merr)
		}
		c.Location(base + into)
		return c.Status(fiber.StatusMovedPermanently).JSON(fiber.Map{"mergedInto": into})
	}
	if err != nil {
		return err
	}
	return c.JSON(view(row))
}

// AcceptedMerge answers the start of a merge into the path's record, what
// (record.Tx.StartMerge's m and err): 202 with the merge, or 404 when the
// record is not the organization's.
func AcceptedMerge(c *fiber.Ctx, what string, m *models.PersonMerge, err error) error {
	if errors.Is(err, models.ErrNotFound) {
		return models.NotFound(what)
	}
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(views.ToPersonMerge(m, names.PersonMergeID(m.OrgID, m.FromID, m.IntoID)))
}
