package web

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// List limits (DESIGN §4).
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// PageRequest is a parsed ?limit=&cursor=.
type PageRequest struct {
	Limit int
	After *Cursor
}

// Cursor is the position after the last row of a page: the sort time
// (usually createdAt) and the id. It is sent to clients base64url-encoded
// and is opaque to them.
type Cursor struct {
	CreatedAt time.Time `json:"t,omitzero"`
	ID        string    `json:"i"`
	// Sort and Value, on a page ordered by a custom field (PaginateOrdered):
	// the order's ?sort= and the last row's value (nil: none); CreatedAt
	// is not used.
	Sort  string `json:"s,omitempty"`
	Value any    `json:"v,omitempty"`
}

// Page is the envelope of every CRM and Helpdesk list.
type Page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`

	// recycled is the buffer of rows Data came from (Paginate), which
	// SendPage gives back once the page is written.
	recycled *[]T
}

// ParsePage reads ?limit= and ?cursor=; bad values are a 422 naming them.
func ParsePage(c *fiber.Ctx) (PageRequest, error) {
	p := PageRequest{Limit: DefaultLimit}
	var bad []models.FieldError
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxLimit {
			bad = append(bad, models.FieldError{Field: "limit", Code: "range", Message: "Must be an integer from 1 to 100."})
		} else {
			p.Limit = n
		}
	}
	if raw := c.Query("cursor"); raw != "" {
		cur, err := DecodeCursor(raw)
		if err != nil {
			bad = append(bad, models.FieldError{Field: "cursor", Code: "invalid", Message: "Not a cursor returned by this list."})
		} else {
			p.After = &cur
		}
	}
	if len(bad) > 0 {
		return p, models.Invalid(bad...)
	}
	return p, nil
}

// EncodeCursor makes the opaque cursor text: the base64url of the
// cursor's JSON. A list page makes one, so its JSON is written here
// rather than by json.Marshal, which through reflection and a check of
// time.Time's own JSON cost 3 % of a list request's CPU; the bytes are
// json.Marshal's (TestEncodeCursorIsJSON), which an id that is not a UUID
// (whose characters JSON never escapes) still goes through.
func EncodeCursor(c Cursor) string {
	var b []byte
	if y := c.CreatedAt.Year(); y >= 1 && y <= 9999 && models.ValidID(c.ID) && c.Sort == "" {
		b = make([]byte, 0, 96)
		b = append(b, `{"t":"`...)
		b = c.CreatedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","i":"`...)
		b = append(b, c.ID...)
		b = append(b, `"}`...)
	} else {
		b, _ = json.Marshal(c)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a cursor made by EncodeCursor.
func DecodeCursor(s string) (Cursor, error) {
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil && ((c.CreatedAt.IsZero() && c.Sort == "") || !models.ValidID(c.ID)) {
		err = strconv.ErrSyntax
	}
	return c, err
}

// Paginate runs q as a keyset-paginated list in (created_at desc, id desc)
// order. Unlike OFFSET, a keyset page is stable under concurrent inserts: a
// row created while a client pages never shifts or repeats the next page.
// The rows are read into a recycled buffer, which SendPage gives back: a
// page handed to SendPage is not to be used after it.
func Paginate[T any](q *gorm.DB, p PageRequest, key func(*T) Cursor) (Page[T], error) {
	return PaginateBy(q, p, "created_at", key)
}

// PaginateBy is Paginate on another time column (e.g. a timeline's
// occurred_at), newest first, id as the tie-break.
func PaginateBy[T any](q *gorm.DB, p PageRequest, timeColumn string, key func(*T) Cursor) (Page[T], error) {
	if p.After != nil {
		// A row-value comparison, not the equivalent "t < ? OR (t = ? AND
		// id < ?)": PostgreSQL's B-tree serves a row comparison as one index
		// range on (org_id, t, id), so a page deep in a large list costs what
		// the first page costs; the OR form is a filter over every newer row
		// (measured 900,000 rows deep: 0.15 ms against 1.6 s). SQLite
		// supports row values too.
		q = q.Where("("+timeColumn+", id) < (?, ?)", p.After.CreatedAt, p.After.ID)
	}
	return readPage(q.Order(timeColumn+" DESC").Order("id DESC"), p, key)
}

// PaginateOrdered is Paginate in a custom field's order (?sort=, see
// models.FieldOrder), T an object that takes custom fields; the cursor
// keeps the last row's value and id (key's). A custom field has no index
// of its own: the database sorts the organization's rows that pass the
// filters (a top-N sort, docs/decisions.md "Custom fields").
func PaginateOrdered[T any](q *gorm.DB, p PageRequest, order *models.FieldOrder, key func(*T) Cursor) (Page[T], error) {
	if p.After != nil {
		q = order.After(q, p.After.Value, p.After.ID)
	}
	return readPage(order.Order(q), p, func(row *T) Cursor {
		return Cursor{ID: key(row).ID, Sort: order.Param, Value: order.Value(any(row).(models.HasFieldValues).CustomFieldValues())}
	})
}

// readPage reads the page of the ordered query q: p.Limit rows, and
// whether more follow (the cursor after the last, made by key).
func readPage[T any](q *gorm.DB, p PageRequest, key func(*T) Cursor) (Page[T], error) {
	buf := database.GetBuffer[T]()
	rows, err := database.FindAllInto(database.PageLimit(q, p.Limit+1), *buf)
	if err != nil {
		database.PutBuffer(buf, (*buf)[:cap(*buf)])
		return Page[T]{}, err
	}
	page := Page[T]{Data: rows, recycled: buf}
	if len(rows) > p.Limit {
		page.Data = rows[:p.Limit]
		page.HasMore = true
		next := EncodeCursor(key(&page.Data[p.Limit-1]))
		page.NextCursor = &next
	}
	if page.Data == nil {
		page.Data = []T{}
	}
	return page, nil
}

// SendPage answers with the page's rows converted by f, encoded straight
// into the response body. c.JSON would encode into a new slice first: for a
// 25-row page that copy was a fifth of the list's allocation, and the suite's
// CPU per GET /crm/contacts fell by about 5 % without it (docs/decisions.md,
// "Performance"). The bytes are encoding/json's, followed by a newline.
//
// The page is the handler's answer and is not used after it: the rows a
// Paginate read, and the response items they are converted into, go back
// to buffers that later pages reuse (database.GetBuffer). For a 25-row page of
// contacts the two slices were two fifths of the bytes a GET allocated.
func SendPage[T, R any](c *fiber.Ctx, p Page[T], f func(*T) R) error {
	buf := database.GetBuffer[R]()
	items := slices.Grow(*buf, len(p.Data))[:len(p.Data)]
	if items == nil { // a new buffer, and no rows: still a list, [] and not null
		items = []R{}
	}
	err := SendJSON(c, mapPageInto(items, p, f))
	database.PutBuffer(buf, items)
	if p.recycled != nil {
		database.PutBuffer(p.recycled, p.Data[:cap(p.Data)])
	}
	return err
}

// SendJSON is c.JSON without the intermediate copy (see SendPage), for the
// large answers: pages inside an envelope of their own.
func SendJSON(c *fiber.Ctx, v any) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return gojson.NewEncoder(c.Response().BodyWriter()).Encode(v)
}

// MapPage converts a page of rows into a page of response items.
func MapPage[T, R any](p Page[T], f func(*T) R) Page[R] {
	return mapPageInto(make([]R, len(p.Data)), p, f)
}

// mapPageInto is MapPage writing the items into items, which holds
// len(p.Data) of them.
func mapPageInto[T, R any](items []R, p Page[T], f func(*T) R) Page[R] {
	for i := range p.Data {
		items[i] = f(&p.Data[i])
	}
	return Page[R]{Data: items, NextCursor: p.NextCursor, HasMore: p.HasMore}
}
