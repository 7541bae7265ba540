package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// HeaderRequestID carries the request id on every response.
const HeaderRequestID = "X-Request-Id"

const localRequestID = "requestid"

// RequestIDMiddleware takes a caller's X-Request-Id when it is a sane token
// and otherwise mints one; either way it is echoed on the response.
func RequestIDMiddleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Get(HeaderRequestID)
		if !saneRequestID(id) {
			id = uuid.NewString()
		} else {
			id = string([]byte(id)) // fiber reuses header memory
		}
		c.Locals(localRequestID, id)
		c.Set(HeaderRequestID, id)
		return c.Next()
	}
}

// RequestID returns the request id, minting one for responses produced
// before the middleware ran (e.g. a body rejected by the server for size).
func RequestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localRequestID).(string); ok {
		return id
	}
	id := uuid.NewString()
	c.Locals(localRequestID, id)
	c.Set(HeaderRequestID, id)
	return id
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header (scheme case-insensitive), and whether an Authorization header
// was sent at all.
func BearerToken(c *fiber.Ctx) (token string, present bool) {
	h := c.Get(fiber.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "Bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", h != ""
}
