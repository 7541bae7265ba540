package web

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestDatabaseOutageIsServiceUnavailable(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("list: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}),
		&pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"},
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		&pgconn.ConnectError{},
		&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
	} {
		p := ToProblem(err)
		if p.Status != fiber.StatusServiceUnavailable || p.retryAfter == 0 || p.Code != "service_unavailable" {
			t.Errorf("%T %v: %d %s retry-after %d, want 503 service_unavailable with Retry-After", err, err, p.Status, p.Code, p.retryAfter)
		}
	}
	// A statement the database refused is not an outage.
	if p := ToProblem(&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}); p.Status == fiber.StatusServiceUnavailable {
		t.Errorf("a query timeout became %d", p.Status)
	}
}
