package web

import (
	"cmp"
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
	s, err := scope(c)
	if err != nil {
		return err
	}
	db = db.WithContext(c.UserContext())
	id := string([]byte(c.Params("id")))
	row, err := Find[T](db, s, id, what)
	if errors.Is(err, models.ErrNotFound) {
		into, merr := models.MergedInto(db, s.OrgID, object, id)
		if merr != nil || into == "" {
			return cmp.Or(merr, err)
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
