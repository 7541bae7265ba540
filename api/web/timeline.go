package web

import (
	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// timelineSummary is how much of an item's text a timeline shows (a
// comment's body, in full, is its ticket's).
const timelineSummary = 500

// Timeline answers a page of person's timeline in orgID, newest first
// (models.PersonTimeline): the route of a contact's (CRM) and a
// customer's (Helpdesk), which are the same person's.
func Timeline(c *fiber.Ctx, db *gorm.DB, orgID string, person models.Person, scope models.TimelineScope) error {
	page, err := ParsePage(c)
	if err != nil {
		return err
	}
	q := models.PersonTimeline(db.WithContext(c.UserContext()), orgID, person, scope)
	items, err := Paginate(q, page, func(i *models.TimelineItem) Cursor { return Cursor{CreatedAt: i.At, ID: i.ID} })
	if err != nil {
		return err
	}
	return SendPage(c, items, func(i *models.TimelineItem) models.TimelineItem {
		item := *i
		item.Summary = models.Truncate(item.Summary, timelineSummary)
		return item
	})
}
