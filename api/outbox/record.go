package outbox

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models/record"
)

// The recording of work (models/record) as the API's processes use it:
// in a request (In), in a transaction of its own (Transact), and as a
// request's one statement (RecordWithStart); each wakes the relay once
// what it recorded is committed.

// In is the request's transaction tx — web.Tx(c), or web.OneStatementTx(c)
// for a request of one statement — able to record workflow starts; the
// relay is woken once the request commits (web.AfterCommit).
func (s *Starter) In(c *fiber.Ctx, tx *gorm.DB) *record.Tx {
	woken := false
	return record.In(c.UserContext(), tx, func(orgID string) {
		if s.recorded(orgID) && !woken {
			woken = true
			web.AfterCommit(c, s.Wake)
		}
	})
}

// Transact runs fn in a database transaction of its own, for work done
// outside a request (`suite admin`); a request records its starts in its
// own transaction (In). Workflow starts recorded with tx.Start commit or
// roll back with the domain writes; after the commit the relay is woken to
// dispatch them at once.
func (s *Starter) Transact(ctx context.Context, fn func(tx *record.Tx) error) error {
	wake := false
	err := s.db.WithContext(ctx).Transaction(func(gtx *gorm.DB) error {
		return fn(record.In(ctx, gtx, func(orgID string) { wake = s.recorded(orgID) || wake }))
	})
	if err == nil && wake {
		s.Wake()
	}
	return err
}

// RecordWithStart is Tx.InsertWith outside a request and outside a
// transaction: the row and its workflow start as one statement on
// PostgreSQL, with no BEGIN and COMMIT round trips (one transaction on
// SQLite). The SMTP listener stores a message for one workspace with it
// (docs/decisions.md, "Performance"). It reports whether the row was
// written; when it was not, nothing was.
func (s *Starter) RecordWithStart(ctx context.Context, insert string, args []any, start record.Start, dest ...any) (bool, error) {
	tx := record.In(ctx, s.db.WithContext(ctx), func(orgID string) {
		if s.recorded(orgID) {
			s.Wake()
		}
	})
	return tx.InsertWith(insert, args, start, dest...)
}
