package record

import (
	"errors"
	"time"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// WakeTicketSLA records the signal that tells t's SLA workflow to read
// its timers again: with every change that moves its clocks
// (models.TicketChange.SLAMoved, those ApplySLAPolicy moved) and when the
// ticket is closed or deleted (the workflow ends). While t has a timer to
// wait for it is a signal-with-start: a ticket without a running workflow
// gets one. Without a timer it is a plain signal: a running workflow
// drops its timers, or ends; with none running there is nothing to wait
// for, and the row is skipped. A ticket opened without a timer records
// no wake-up at all: no workflow can be running for it yet.
func (tx *Tx) WakeTicketSLA(t *models.Ticket) error {
	sig := Signal{WorkflowID: names.TicketSLAID(t.ID), Name: names.SignalTicketSLAWake, OrgID: t.OrgID, Kind: names.KindTicketSLA}
	if t.HasSLATimer() {
		sig.Start = &Start{Workflow: names.TicketSLAWorkflow, Input: models.TicketSLAInput{TicketID: t.ID, OrgID: t.OrgID, LocalSteps: true},
			OrgID: t.OrgID, Kind: names.KindTicketSLA}
	}
	return tx.Signal(sig)
}

// FollowTicketStatus records the timers a ticket's change asks for: its
// SLA workflow reads its timers again when the clocks moved; solving
// starts the auto-close timer of this solve (closing after after, or
// models.DefaultTicketAutoClose when it is zero), leaving solved cancels
// it. The API's updates and comments, and an automation's steps, follow
// their changes with it.
func (tx *Tx) FollowTicketStatus(t *models.Ticket, change models.TicketChange, after time.Duration) error {
	if change.SLAMoved {
		if err := tx.WakeTicketSLA(t); err != nil {
			return err
		}
	}
	switch {
	case change.Solved:
		if after <= 0 {
			after = models.DefaultTicketAutoClose
		}
		return tx.Start(Start{WorkflowID: names.TicketAutoCloseID(t.ID, t.SolveCount), Workflow: names.TicketAutoCloseWorkflow,
			Input: models.TicketAutoCloseInput{TicketID: t.ID, SolveCount: t.SolveCount, After: after}, OrgID: t.OrgID,
			Kind: names.KindTicketAutoClose})
	case change.Unsolved:
		return tx.CancelAutoClose(t)
	}
	return nil
}

// CancelAutoClose records the cancellation of the auto-close timer of the
// solved state t is leaving, so that only live timers stay in the Temporal
// UI. (The timer would not close the ticket anyway: it closes only the
// solved state it was started for.)
func (tx *Tx) CancelAutoClose(t *models.Ticket) error {
	err := tx.Start(Start{WorkflowID: names.TicketAutoCloseCancelID(t.ID, t.SolveCount), Workflow: names.TicketAutoCloseCancelWorkflow,
		Input: models.TicketAutoCloseCancelInput{TicketID: t.ID, SolveCount: t.SolveCount}, OrgID: t.OrgID,
		Kind: names.KindTicketAutoCloseCancel})
	if errors.Is(err, ErrDuplicate) {
		return nil // already requested
	}
	return err
}

// EmailReply records the e-mail of a public agent reply cm on t to its
// requester, from the workspace's address at domain: the outgoing
// message's row and its EmailSend workflow. A reply that is internal, by
// the customer, or on a ticket without a requester's address is not sent.
func (tx *Tx) EmailReply(t *models.Ticket, cm *models.TicketComment, domain string, now time.Time) error {
	if cm.AuthorType != models.AuthorAgent || !cm.Public || t.RequesterEmail == "" {
		return nil
	}
	msg := models.EmailMessage{OrgID: t.OrgID, MessageID: "c-" + cm.ID + "@" + domain, TicketID: t.ID, CommentID: &cm.ID,
		Direction: models.EmailOut, Status: models.EmailQueued, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&msg).Error; err != nil {
		return err
	}
	return tx.Start(Start{WorkflowID: names.EmailSendID(t.OrgID, cm.ID), Workflow: names.EmailSendWorkflow,
		Input: models.EmailSendInput{CommentID: cm.ID, OrgID: t.OrgID}, OrgID: t.OrgID, Kind: names.KindEmailSend})
}
