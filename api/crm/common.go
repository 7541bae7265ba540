package crm

import (
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// orgOf resolves the organization a CRM data request acts in: bodyOrgID
// (writes) or ?orgId= for user tokens; an API key's own organization.
func (h *handlers) orgOf(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error) {
	orgID := bodyOrgID
	if orgID == "" {
		orgID = c.Query("orgId")
	}
	return h.Auth.ResolveOrg(c, orgID)
}

// agentScoped tells whether the caller sees only work assigned to them:
// AGENTs do; ADMINs, OWNERs and API keys see everything.
func agentScoped(p *auth.Principal) bool { return !p.IsKey() && p.Role == models.RoleAgent }

// scope restricts q to rows assigned to the caller when agentScoped and
// the rows have an assignee column ("" — everyone sees every row).
func scope(q *gorm.DB, p *auth.Principal, column string) *gorm.DB {
	if column != "" && agentScoped(p) {
		return q.Where(column+" = ?", p.MemberID)
	}
	return q
}

// checkLinked fails with 422 on field unless id names a row of model in orgID.
func checkLinked(db *gorm.DB, model any, orgID, field string, id *string) error {
	if id == nil || *id == "" {
		return nil
	}
	if models.ValidID(*id) {
		var n int64
		if err := db.Model(model).Where("id = ? AND org_id = ?", *id, orgID).Count(&n).Error; err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
	}
	return models.Invalid(models.FieldError{Field: field, Code: "not_found", Message: "Must be the id of a record of this organization."})
}

// findScoped loads one row of the organization (and, for AGENTs when
// column is set, assigned to them); anything else is a 404.
func findScoped[T any](c *fiber.Ctx, db *gorm.DB, p *auth.Principal, id, assigneeColumn, what string) (*T, error) {
	return models.FindInOrg[T](scope(db.WithContext(c.UserContext()), p, assigneeColumn), p.OrgID, id, what)
}

// getScoped answers the row of T named by the :id parameter, seen as the
// caller sees it (findScoped), shown by view.
func getScoped[T, R any](h *handlers, c *fiber.Ctx, assigneeColumn, what string, view func(*T) R) error {
	row, err := pathRow[T](h, c, assigneeColumn, what)
	if err != nil {
		return err
	}
	return c.JSON(view(row))
}

// pathRow is the row of T named by the :id parameter in the organization
// the query names (orgOf), seen as the caller sees it (findScoped).
func pathRow[T any](h *handlers, c *fiber.Ctx, assigneeColumn, what string) (*T, error) {
	p, err := h.orgOf(c, "")
	if err != nil {
		return nil, err
	}
	return findScoped[T](c, h.DB, p, c.Params("id"), assigneeColumn, what)
}

// updateScoped changes the row of T named by the :id parameter, seen as the
// caller p sees it (findScoped), in one transaction: the row is locked,
// change applies the request to it (or refuses, changing nothing) and the
// row is saved. It returns the saved row.
func updateScoped[T any](h *handlers, c *fiber.Ctx, p *auth.Principal, assigneeColumn, what string, change func(tx *gorm.DB, row *T) error) (*T, error) {
	var row *T
	err := h.DB.WithContext(c.UserContext()).Transaction(func(tx *gorm.DB) error {
		var err error
		if row, err = findScoped[T](c, models.LockForUpdate(tx), p, c.Params("id"), assigneeColumn, what); err != nil {
			return err
		}
		if err := change(tx, row); err != nil {
			return err
		}
		return tx.Save(row).Error
	})
	return row, err
}

// deleteScoped deletes the row of T named by the :id parameter, seen as the
// caller sees it (findScoped), and answers 204.
func deleteScoped[T any](h *handlers, c *fiber.Ctx, assigneeColumn, what string) error {
	row, err := pathRow[T](h, c, assigneeColumn, what)
	if err != nil {
		return err
	}
	if err := h.DB.WithContext(c.UserContext()).Delete(row).Error; err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// nullable turns "" into nil (clearing an optional reference).
func nullable(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// dateRule validates YYYY-MM-DD dates (empty allowed where optional).
const dateRule = "omitempty,datetime=2006-01-02"

// shownActor is an actor as the CRM interface publishes it (createdBy,
// changedBy): a member by their bare member id, anything else as stored
// (`key:<API key id>`, `intake`). Only the presentation differs from the
// Helpdesk's; what is stored is one encoding (models.Actor).
func shownActor(a models.Actor) string {
	if id, ok := a.MemberID(); ok {
		return id
	}
	return string(a)
}

// listing describes a list route over T, shown as R: the column by which
// AGENTs see only their own rows ("" — everyone sees all), the query
// parameters it filters by, and how a row pages and shows.
type listing[T, R any] struct {
	assignee string
	// filter points to a struct of the route's query parameters (string
	// fields named by their json tags, with validate rules); narrow
	// applies it once filled and valid.
	filter any
	narrow func(q *gorm.DB) *gorm.DB
	cursor func(*T) web.Cursor
	view   func(*T) R
}

// list answers a list route: the organization's rows of T as the caller
// may see them, narrowed by the route's filters, newest first, a page at
// a time.
func list[T, R any](h *handlers, c *fiber.Ctx, l listing[T, R]) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	if l.filter != nil {
		fillFromQuery(c, l.filter)
		if err := web.Validate(l.filter); err != nil {
			return err
		}
	}
	q := scope(h.DB.WithContext(c.UserContext()).Model(new(T)).Where("org_id = ?", p.OrgID), p, l.assignee)
	if l.narrow != nil {
		q = l.narrow(q)
	}
	rows, err := web.Paginate(q, page, l.cursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, l.view)
}

// fillFromQuery sets each string field of the struct filter points to
// from the query parameter its json tag names (as c.Query reads it; an
// absent parameter is ""), trimmed of spaces when tagged query:"trim".
func fillFromQuery(c *fiber.Ctx, filter any) {
	v := reflect.ValueOf(filter).Elem()
	for i := range v.NumField() {
		field := v.Type().Field(i)
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if f := v.Field(i); name != "" && f.Kind() == reflect.String {
			value := c.Query(name)
			if field.Tag.Get("query") == "trim" {
				value = strings.TrimSpace(value)
			}
			f.SetString(value)
		}
	}
}

// equal narrows q to rows whose column is value, when value is set.
func equal(q *gorm.DB, column, value string) *gorm.DB {
	if value == "" {
		return q
	}
	return q.Where(column+" = ?", value)
}

// containing narrows q to rows with text in one of columns, when set.
func containing(q *gorm.DB, text string, columns ...string) *gorm.DB {
	if text == "" {
		return q
	}
	return web.ContainsText(q, text, columns...)
}
