package web

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// ContentTypeProblem is the media type of every error response (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// Problem is the body of every error response.
type Problem struct {
	Type      string              `json:"type"`
	Title     string              `json:"title"`
	Status    int                 `json:"status"`
	Detail    string              `json:"detail,omitempty"`
	Code      string              `json:"code"`
	Errors    []models.FieldError `json:"errors,omitempty"`
	RequestID string              `json:"requestId"`

	// retryAfter, in seconds, is sent as the Retry-After header.
	retryAfter int
	// extensions are further members of the problem (RFC 9457 §3.2), such
	// as the numbers behind a refusal.
	extensions map[string]any
}

// WithExtensions adds members to the problem document; they never replace
// the standard members.
func (p *Problem) WithExtensions(ext map[string]any) *Problem { p.extensions = ext; return p }

// MarshalJSON writes the standard members and then the extensions.
func (p Problem) MarshalJSON() ([]byte, error) {
	type standard Problem // without this method
	b, err := json.Marshal(standard(p))
	if err != nil || len(p.extensions) == 0 {
		return b, err
	}
	var members map[string]any
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	for k, v := range p.extensions {
		if _, taken := members[k]; !taken {
			members[k] = v
		}
	}
	return json.Marshal(members)
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// NewProblem builds a Problem for status with a machine-readable code.
func NewProblem(status int, code, detail string) *Problem {
	return &Problem{Type: "urn:business-suite:problem:" + code, Title: statusTitle(status), Status: status, Code: code, Detail: detail}
}

// WithRetryAfter sets the Retry-After header sent with the problem.
func (p *Problem) WithRetryAfter(seconds int) *Problem { p.retryAfter = seconds; return p }

// WithErrors attaches field errors.
func (p *Problem) WithErrors(errs []models.FieldError) *Problem { p.Errors = errs; return p }

// kindStatus is the one table from domain error kinds to HTTP status and the
// default problem code used when the error carries none of its own.
var kindStatus = []struct {
	kind   error
	status int
	code   string
}{
	{models.ErrInvalid, fiber.StatusUnprocessableEntity, "validation_failed"},
	{models.ErrUnauthorized, fiber.StatusUnauthorized, "unauthorized"},
	{models.ErrForbidden, fiber.StatusForbidden, "forbidden"},
	{models.ErrNotFound, fiber.StatusNotFound, "not_found"},
	{gorm.ErrRecordNotFound, fiber.StatusNotFound, "not_found"},
	{models.ErrConflict, fiber.StatusConflict, "conflict"},
	{gorm.ErrDuplicatedKey, fiber.StatusConflict, "already_exists"},
	{models.ErrLimit, fiber.StatusPaymentRequired, "plan_limit_reached"},
	{models.ErrUnavailable, fiber.StatusServiceUnavailable, "service_unavailable"},
	{models.ErrGone, fiber.StatusGone, "gone"},
}

// statusCode is the default problem code for statuses that reach the
// handler as plain fiber errors (routing, body limit, method).
var statusCode = map[int]string{
	fiber.StatusBadRequest:                  "bad_request",
	fiber.StatusUnauthorized:                "unauthorized",
	fiber.StatusForbidden:                   "forbidden",
	fiber.StatusNotFound:                    "not_found",
	fiber.StatusMethodNotAllowed:            "method_not_allowed",
	fiber.StatusConflict:                    "conflict",
	fiber.StatusGone:                        "gone",
	fiber.StatusRequestEntityTooLarge:       "payload_too_large",
	fiber.StatusUnsupportedMediaType:        "unsupported_media_type",
	fiber.StatusUnprocessableEntity:         "validation_failed",
	fiber.StatusTooManyRequests:             "rate_limited",
	fiber.StatusRequestTimeout:              "request_timeout",
	fiber.StatusRequestHeaderFieldsTooLarge: "headers_too_large",
	fiber.StatusServiceUnavailable:          "service_unavailable",
}

// ToProblem converts any error returned by a handler into a Problem. Errors
// it does not recognise become a 500 whose detail never echoes internals.
func ToProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var de *models.DomainError
	errors.As(err, &de)
	for _, row := range kindStatus {
		if errors.Is(err, row.kind) {
			prob := NewProblem(row.status, row.code, defaultDetail(row.status))
			if de != nil {
				prob.Code, prob.Detail, prob.Errors = de.Code, de.Message, de.Fields
				prob.Type = "urn:business-suite:problem:" + de.Code
			}
			if row.status == fiber.StatusServiceUnavailable {
				prob.retryAfter = 5
			}
			return prob
		}
	}
	if databaseUnavailable(err) {
		prob := NewProblem(fiber.StatusServiceUnavailable, "service_unavailable", defaultDetail(fiber.StatusServiceUnavailable))
		prob.retryAfter = 5
		return prob
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22P02" {
		// A malformed id reached PostgreSQL's uuid parser: nothing has that id.
		return NewProblem(fiber.StatusNotFound, "not_found", "The resource was not found.")
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code, ok := statusCode[fe.Code]
		if !ok {
			code = "http_" + strconv.Itoa(fe.Code)
		}
		detail := defaultDetail(fe.Code)
		if fe.Code == fiber.StatusNotFound {
			detail = "No such route."
		}
		return NewProblem(fe.Code, code, detail)
	}
	return NewProblem(fiber.StatusInternalServerError, "internal_error", "An unexpected error occurred; it has been logged with the request id.")
}

// HeaderLimitDetail is the 431's detail: the server's read buffer
// (api.ReadBufferSize) holds the request line and the headers together.
const HeaderLimitDetail = "The request line and headers exceed the 4 KiB limit; send long values in the body."

func defaultDetail(status int) string {
	switch status {
	case fiber.StatusRequestEntityTooLarge:
		return "The request body exceeds the 1 MiB limit."
	case fiber.StatusRequestHeaderFieldsTooLarge:
		return HeaderLimitDetail
	case fiber.StatusMethodNotAllowed:
		return "The method is not allowed on this route."
	case fiber.StatusServiceUnavailable:
		return "A dependency is unavailable; retry later."
	case fiber.StatusTooManyRequests:
		return "Too many requests; retry after the time in Retry-After."
	}
	return statusTitle(status) + "."
}

func statusTitle(status int) string {
	if t := utils.StatusMessage(status); t != "" {
		return t
	}
	return "Error"
}

// ErrorHandler is the single Fiber error handler: every error becomes an
// application/problem+json response carrying the request id.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		p := *ToProblem(err) // copy: shared problems must not be mutated
		p.RequestID = RequestID(c)
		if p.Status >= 500 && p.Code == "internal_error" {
			log.ErrorContext(c.UserContext(), "request failed", "request_id", p.RequestID,
				"method", Method(c), "path", strings.Clone(c.Path()), "error", err.Error())
		}
		if p.retryAfter > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(p.retryAfter))
		}
		c.Status(p.Status)
		if err := c.JSON(p); err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, ContentTypeProblem)
		return nil
	}
}

// databaseUnavailable tells whether err says the database went away (a
// restart, failover or network cut) rather than refused the request: the
// server ending the connection (SQLSTATE class 57P: admin, crash shutdown,
// still starting up), a connection exception (class 08), or no connection
// at all. The request may be retried, so it is a 503 with Retry-After. A
// network error from another service a handler calls (the identity API,
// say) is an outage of the same kind and gets the same answer.
func databaseUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var netErr *net.OpError
	return errors.As(err, &netErr)
}
