package web

import (
	"io"
	"slices"

	"github.com/gofiber/fiber/v2"
)

// LimitBody keeps every route but uploads ("METHOD /path") to bodies of
// at most limit bytes. The server streams a body over its limit, or sent
// in chunks, instead of reading it (fiber.Config.StreamRequestBody) so
// that an upload route reads its body a part at a time; here every other
// route reads such a body up to limit — and answers 413 past it — before
// its handler sees it as an ordinary body.
func LimitBody(limit int, uploads ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !c.Request().IsBodyStream() || slices.Contains(uploads, c.Method()+" "+c.Path()) {
			return c.Next()
		}
		tooLarge := c.Request().Header.ContentLength() > limit // announced: answered without reading it
		var body []byte
		if !tooLarge {
			var err error
			if body, err = io.ReadAll(io.LimitReader(c.Context().RequestBodyStream(), int64(limit)+1)); err != nil {
				return err
			}
			tooLarge = len(body) > limit
		}
		if tooLarge {
			c.Context().SetConnectionClose()
			return fiber.ErrRequestEntityTooLarge
		}
		c.Request().SetBody(body)
		return c.Next()
	}
}

type bodyReadKey struct{}

// BodyRead records that the handler of an upload route read its streamed
// body to the end: the connection may serve a next request
// (CloseUnreadBody).
func BodyRead(c *fiber.Ctx) { c.Locals(bodyReadKey{}, true) }

// CloseUnreadBody closes the connection after the answer to a request
// whose streamed body was left unread — by whatever answered first: the
// in-flight limit, authentication, an upload's refusal — since the rest of
// the body would otherwise be read as the next request. A body LimitBody
// read, or an upload's handler read to its end (BodyRead), leaves the
// connection open.
func CloseUnreadBody(c *fiber.Ctx) error {
	err := c.Next()
	if c.Request().IsBodyStream() && c.Locals(bodyReadKey{}) != true {
		c.Context().SetConnectionClose()
	}
	return err
}
