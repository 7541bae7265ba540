// Package mailin takes the Helpdesk's inbound e-mail: an SMTP listener (a
// workspace's mail exchanger, or the relay a mail provider forwards to) and
// the store that the HTTP inbound route shares with it. A message is never
// accepted before it is stored: Store writes it raw, with the start of its
// EmailIngest workflow, in one transaction, and only then does the
// listener answer 250 (the route 202). A process killed right after loses
// nothing — the outbox relay starts the workflow when the next process
// comes up — and the same Message-ID delivered twice (a sender's retry) is
// one message.
package mailin

import (
	"context"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows"
	"github.com/business-suite/suite/workflows/names"
)

// DefaultMaxBytes is the largest message taken (SUITE_MAIL_MAX_BYTES).
const DefaultMaxBytes = 25 << 20

// Store records the received message m (its Message-ID set from p, the
// message as models.ParseEmail read it) and the start of its
// EmailIngest workflow in tx. It reports whether m is new: false when the
// workspace already has a message with its Message-ID, which is then left
// as it was.
func Store(tx *record.Tx, m *models.InboundEmail, p *models.ParsedEmail) (bool, error) {
	insert, args, start := storing(m, p)
	return tx.InsertWith(insert, args, start, new(string))
}

// storing is the statement that stores m and its EmailIngest start. A
// message is keyed by a hash of its bytes only when it has no Message-ID.
func storing(m *models.InboundEmail, p *models.ParsedEmail) (string, []any, record.Start) {
	m.MessageID = models.InboundMessageID(p.MessageID, m.Raw)
	m.Subject = models.Truncate(p.Subject, 500)
	insert, args := models.InsertInboundEmail(m)
	return insert, args, record.Start{WorkflowID: names.EmailIngestID(m.OrgID, m.ID), Workflow: names.EmailIngestWorkflow,
		Input: workflows.EmailIngestInput{InboundID: m.ID, OrgID: m.OrgID}, OrgID: m.OrgID, Kind: names.KindEmailIngest}
}

// storeAll stores the message for each workspace it is addressed to: for
// one, the common case, as one statement; for several, in one
// transaction.
func storeAll(ctx context.Context, starter *outbox.Starter, msgs []*models.InboundEmail, p *models.ParsedEmail) error {
	if len(msgs) == 1 {
		insert, args, start := storing(msgs[0], p)
		_, err := starter.RecordWithStart(ctx, insert, args, start, new(string))
		return err
	}
	return starter.Transact(ctx, func(tx *record.Tx) error {
		for _, m := range msgs {
			if _, err := Store(tx, m, p); err != nil {
				return err
			}
		}
		return nil
	})
}
