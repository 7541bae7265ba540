package web

import (
	"bytes"
	"cmp"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// The handler dialect of the CRM and the Helpdesk: a resource's routes are
// written with these helpers, which know the organization's scope, the
// :id parameter, the 404 that hides other tenants' rows, the request
// transaction and the page.
//
//	GET    /things      List(c, h.DB, scope, Listing[Thing, thingResponse]{…})
//	GET    /things/:id  Get(c, h.DB, scope, "The thing", toThing)
//	PUT    /things/:id  Update(c, s, "The thing", func(tx, t) error {…})
//	DELETE /things/:id  Delete[Thing](c, scope, "The thing")
//
// A read or a removal resolves the caller's scope from the request alone,
// through the interface's Scoper (CRM: the organization the query names
// and the caller's role in it; Helpdesk: the workspace header). A change
// resolves it with its decoded body (the CRM names the organization
// there), after decoding, so a malformed body is reported before anything
// is looked up.

// Scope is the rows of a table a caller may see: their organization's,
// and — when Column is set — only those whose Column is Value (an AGENT
// sees only the deals, leads and tasks assigned to them).
type Scope struct {
	OrgID  string
	Column string
	Value  string
}

// A Scoper resolves the Scope of a request's caller, or refuses the
// request (the organization is not theirs: 404).
type Scoper func(c *fiber.Ctx) (Scope, error)

// Narrow restricts q to the rows s lets the caller see.
func (s Scope) Narrow(q *gorm.DB) *gorm.DB {
	q = q.Where("org_id = ?", s.OrgID)
	if s.Column != "" {
		q = q.Where(s.Column+" = ?", s.Value)
	}
	return q
}

// Find loads the row of T with id that s lets the caller see; a malformed
// id, another organization's row, a row outside the caller's assignment
// and a missing one are the same NotFound(what), never told apart.
func Find[T any](db *gorm.DB, s Scope, id, what string) (*T, error) {
	q := db
	if s.Column != "" {
		q = q.Where(s.Column+" = ?", s.Value)
	}
	return models.FindInOrg[T](q, s.OrgID, id, what)
}

// Load is the row of T named by the :id parameter in the caller's scope,
// read on the pool (Find): the row a route is about, or the parent of a
// list under it.
func Load[T any](c *fiber.Ctx, db *gorm.DB, scope Scoper, what string) (*T, error) {
	s, err := scope(c)
	if err != nil {
		return nil, err
	}
	return Find[T](db.WithContext(c.UserContext()), s, c.Params("id"), what)
}

// Get answers the row of T named by the :id parameter (Load), shown by
// view.
func Get[T, R any](c *fiber.Ctx, db *gorm.DB, scope Scoper, what string, view func(*T) R) error {
	row, err := Load[T](c, db, scope, what)
	if err != nil {
		return err
	}
	return c.JSON(view(row))
}

// Update changes the row of T named by the :id parameter in the request's
// transaction: the row is loaded with a lock, change applies the request to
// it (or refuses, and the request changes nothing) and it is saved, but for
// the columns in keep, which another writer owns (an article's view count,
// an organization's status). It returns the saved row.
func Update[T any](c *fiber.Ctx, s Scope, what string, change func(tx *gorm.DB, row *T) error, keep ...string) (*T, error) {
	tx := Tx(c)
	row, err := Find[T](models.LockForUpdate(tx), s, c.Params("id"), what)
	if err != nil {
		return nil, err
	}
	if err := change(tx, row); err != nil {
		return nil, err
	}
	if len(keep) > 0 {
		return row, tx.Omit(keep...).Save(row).Error
	}
	return row, tx.Save(row).Error
}

// Delete deletes the row of T named by the :id parameter in the request's
// transaction and answers 204; then, when given, runs in the same
// transaction with the deleted row (to record what the removal causes).
func Delete[T any](c *fiber.Ctx, scope Scoper, what string, then ...func(tx *gorm.DB, row *T) error) error {
	s, err := scope(c)
	if err != nil {
		return err
	}
	tx := Tx(c)
	row, err := Find[T](tx, s, c.Params("id"), what)
	if err != nil {
		return err
	}
	if err := tx.Delete(row).Error; err != nil {
		return err
	}
	for _, fn := range then {
		if err := fn(tx, row); err != nil {
			return err
		}
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Listing describes a list route over rows of T, shown as R.
type Listing[T, R any] struct {
	// Filter points to a struct of the route's query parameters (string
	// fields named by their json tags, with validate rules); Narrow applies
	// it once it is filled and valid.
	Filter any
	Narrow func(q *gorm.DB) *gorm.DB
	// FieldsOf, when set, is the object whose custom fields the list
	// filters by (fields.<key>=…, models.FieldFilters).
	FieldsOf string
	// TimeColumn orders the list, newest first (created_at when empty).
	TimeColumn string
	Cursor     func(*T) Cursor
	View       func(*T) R
	// PageView, when set, builds the view of a page's rows in place of
	// View: for rows shown with more of the database (one query for the
	// page, not one per row).
	PageView func(rows []T) (func(*T) R, error)
}

// List answers a list route: the rows of T that the caller's scope lets
// them see, narrowed by the route's filters, newest first, a page at a
// time.
func List[T, R any](c *fiber.Ctx, db *gorm.DB, scope Scoper, l Listing[T, R]) error {
	s, err := scope(c)
	if err != nil {
		return err
	}
	// One 422 names every bad parameter, the page's and the filters'.
	page, err := ParsePage(c)
	if l.Filter != nil {
		fillFromQuery(c, l.Filter)
		err = MergeInvalid(err, Validate(l.Filter))
	}
	// One session of the request's context serves every query below
	// (each chain from it starts a statement of its own).
	db = db.WithContext(c.UserContext())
	var order *models.FieldOrder
	if l.FieldsOf != "" {
		var orderErr error
		order, orderErr = listOrder(c, db, s.OrgID, l.FieldsOf, page.After)
		err = MergeInvalid(err, orderErr)
	}
	if err != nil {
		return err
	}
	q := s.Narrow(db.Model(new(T)))
	if l.Narrow != nil {
		q = l.Narrow(q)
	}
	if l.FieldsOf != "" {
		filter, err := models.FieldFilters(db, s.OrgID, l.FieldsOf, fieldParams(c))
		if err != nil {
			return err
		}
		q = filter(q)
	}
	var rows Page[T]
	if order != nil {
		rows, err = PaginateOrdered(q, page, order, l.Cursor)
	} else {
		rows, err = PaginateBy(q, page, cmp.Or(l.TimeColumn, "created_at"), l.Cursor)
	}
	if err != nil {
		return err
	}
	view := l.View
	if l.PageView != nil {
		if view, err = l.PageView(rows.Data); err != nil {
			return err
		}
	}
	return SendPage(c, rows, view)
}

// listOrder is a list's order by one of object's custom fields
// (?sort=fields.<key>, models.FieldSort, read with db), nil for the
// default (newest first); a cursor of another order is a 422 naming it.
func listOrder(c *fiber.Ctx, db *gorm.DB, orgID, object string, after *Cursor) (*models.FieldOrder, error) {
	order, err := models.FieldSort(db, orgID, object, c.Query("sort"))
	if err != nil {
		return nil, err
	}
	if after != nil && (order == nil && after.Sort != "" || order != nil && (after.Sort != order.Param || !order.ValidCursorValue(after.Value))) {
		return nil, errCursorOfAnotherOrder
	}
	return order, nil
}

var errCursorOfAnotherOrder = models.Invalid(models.FieldError{Field: "cursor", Code: "invalid",
	Message: "Not a cursor of this list in this order (?sort=): page on with the sort the cursor came from."})

// DecodeQuery fills the string fields of the struct dst points to from
// the query parameters their json tags name (fillFromQuery) and checks
// their `validate` rules: one 422 names every bad parameter.
func DecodeQuery(c *fiber.Ctx, dst any) error {
	fillFromQuery(c, dst)
	return Validate(dst)
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

// In is the Scoper of a scope already resolved (a list under a parent the
// handler has found).
func In(s Scope) Scoper { return func(*fiber.Ctx) (Scope, error) { return s, nil } }

// fieldParams are the request's custom field filters: its query
// parameters named fields.… (nil when there are none, which a list page
// without filters pays no map for).
func fieldParams(c *fiber.Ctx) map[string]string {
	var out map[string]string
	c.Context().QueryArgs().VisitAll(func(key, value []byte) {
		if bytes.HasPrefix(key, []byte("fields.")) {
			if out == nil {
				out = map[string]string{}
			}
			out[string(key)] = string(value)
		}
	})
	return out
}
