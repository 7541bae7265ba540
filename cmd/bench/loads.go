package main

import (
	"context"
	"database/sql"
	"fmt"
)

// A load is one measurement of the bench: rows of the table (a paired
// database and API run) or notes under it. run walks loads in order and
// runs those whose name -only matches.
type load struct {
	name string
	// needs is what the load needs set up before any load runs.
	needs need
	// slow: the load cannot be made quick (its length is set by what it
	// measures, not by -duration or a burst's size); -quick skips it.
	slow bool
	run  func(r *benchRun, name string) error
}

// need is a set of things the loads need from the suite before they run.
type need uint8

const (
	// needMailbox: the organization's e-mail address (bencher.mailbox).
	needMailbox need = 1 << iota
	// needHelpdeskKey: an hd_ key of the organization (bencher.hdKey).
	needHelpdeskKey
)

// loads are the bench's measurements, in the order they run.
var loads = []load{
	{name: "GET /crm/contacts?limit=25 (10k in org)", run: paired(16, getContacts)},
	{name: "GET /crm/contacts?limit=25 (10k in org)", run: paired(64, getContacts)},
	{name: preparedGetLoad, run: pairedWith(16, preparedGetContacts, goal{ratio: 0.35})},
	{name: preparedGetLoad, run: paired(64, preparedGetContacts)},
	{name: "POST /crm/contacts", run: paired(16, postContact)},
	{name: ticketLoad, needs: needHelpdeskKey, run: paired(16, postTicket)},
	{name: limitedTicketLoad, needs: needHelpdeskKey, run: func(r *benchRun, name string) error {
		return r.b.onLimitedPlan(func() error { return paired(16, postTicket)(r, name) })
	}},
	{name: fullTicketLoad, run: ticketRow(true)},
	{name: atOnceTicketLoad, run: ticketRow(false)},
	// The intake pipeline is measured before the webhook's accept run,
	// whose ten thousand or so accepted intakes would otherwise still be
	// queued ahead of the steady run's (the pipeline drains far slower
	// than the API accepts); the SMTP run comes before it too, for the
	// same reason (each round waits for what the last one accepted).
	{name: "web-form intake", run: func(r *benchRun, _ string) error {
		steady, err := r.b.steadyIntake(r.ctx, r.db)
		if err != nil {
			return err
		}
		r.note(steady)
		other, err := setupOrg(r.suite, r.b.cfg.binary, r.b.dbURL, r.b.dataDir)
		if err != nil {
			return fmt.Errorf("set up the second organization: %w", err)
		}
		burst, err := r.b.burstIntake(r.ctx, r.db, other.tenant)
		if err != nil {
			return err
		}
		r.note(burst)
		return nil
	}},
	{name: readsLoad, run: func(r *benchRun, _ string) error {
		reads, err := r.b.intakeBesideReads(r.ctx, r.db)
		if err != nil {
			return err
		}
		r.note(reads)
		return nil
	}},
	{name: mailLoad, needs: needMailbox, run: paired(4, inboundMail)},
	{name: mailOwnLoad, needs: needMailbox, run: paired(4, mailOwn)},
	{name: "POST /crm/leads/webhook (202)", run: paired(16, postWebhook)},
	// Webhook delivery last: it needs no drained pipeline, and leaves none.
	// Its endpoint is made here, not before the first load: an organization
	// with a webhook endpoint records every create's event in the create's
	// transaction (models.AnyReceivingEndpoint does not look at the types an
	// endpoint subscribes to), so with it in place the contact and ticket
	// rows above measured the transaction instead of their one statement.
	{name: webhookLoad, run: func(r *benchRun, _ string) error {
		receiver, err := r.b.newWebhookReceiver()
		if err != nil {
			return err
		}
		defer receiver.srv.Close()
		delivery, err := r.b.webhookDelivery(receiver)
		if err != nil {
			return err
		}
		r.note(delivery)
		return nil
	}},
	// A rule's runs after the ticket rows (the rule turns the one-statement
	// create off while it is active; it is disabled at the end).
	{name: automationLoad, needs: needHelpdeskKey, run: func(r *benchRun, _ string) error {
		runs, err := r.b.automationRuns(r.ctx, r.db)
		if err != nil {
			return err
		}
		r.note(runs)
		return nil
	}},
	{name: rulesLoad, run: func(r *benchRun, _ string) error {
		res, err := r.ticketsWithRules()
		if err != nil {
			return err
		}
		r.note(res)
		return nil
	}},
	// A million contacts imported, copied and exported, then a million of
	// a workspace with a custom field listed, each in workspaces of their
	// own; the contacts stay (the bench's database is dropped at the end,
	// and deleting two million took longer than a row). Before the rows
	// that leave workflows open: after them, with 12,000 workflows open and
	// suite dev at 983 MB resident, the import ran at 7,582 rows/s where
	// it had run at 15,631 after the automation runs (2026-11-29): the
	// heap then holds 300–350 MB, and the soft memory limit (GOMEMLIMIT,
	// 768 MiB) sets the next collection only 40–70 MB above it
	// (docs/decisions.md, "make bench toward 15 minutes").
	{name: importLoad, slow: true, run: func(r *benchRun, _ string) error { return r.importRow() }},
	{name: fieldsLoad, slow: true, run: func(r *benchRun, name string) error { return r.fieldFilterRow(name) }},
	// The SLA timers near the end: its workflows stay open.
	{name: slaLoad, needs: needHelpdeskKey, slow: true, run: func(r *benchRun, _ string) error {
		slas, err := r.b.slaTimers(r.ctx, r.db, r.b.hdKey)
		if err != nil {
			return err
		}
		r.note(slas)
		return nil
	}},
	// The runs waiting in a delay after it: they stay open.
	{name: waitingLoad, slow: true, run: func(r *benchRun, _ string) error {
		ws, err := r.workspace()
		if err != nil {
			return err
		}
		res, err := ws.runsWaiting(r.ctx, r.db)
		if err != nil {
			return err
		}
		r.note(res)
		return nil
	}},
}

// paired is a load that measures w's database statement and its API
// request side by side at conns connections (bencher.pair): one row.
func paired(conns int, w workload) func(r *benchRun, name string) error {
	return func(r *benchRun, name string) error { return r.add(r.b.pair(name, conns, w)) }
}

// benchRun is what the loads run with, and what they found: the table's
// rows and the notes under it, each printed as it comes.
type benchRun struct {
	b     *bencher
	ctx   context.Context
	db    *sql.DB
	suite *suite
	rows  []row
	notes []string
}

// add keeps a paired run's row, or passes its error on.
func (r *benchRun) add(rw row, err error) error {
	if err != nil {
		return err
	}
	r.rows = append(r.rows, rw)
	fmt.Println(rw.text())
	return nil
}

// note keeps a line for under the table.
func (r *benchRun) note(s fmt.Stringer) {
	fmt.Println(s)
	r.notes = append(r.notes, s.String())
}
