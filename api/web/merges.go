package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
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
