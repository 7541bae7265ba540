package record

import (
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// WakeTicketSLA records the signal-with-start that tells t's SLA workflow
// to read its timers again: with every change that moves its clocks
// (models.TicketChange.SLAMoved, a ticket opened with clocks, those
// ApplySLAPolicy moved) and when the ticket is closed or deleted (the
// workflow ends). A ticket without a running workflow gets one.
func (tx *Tx) WakeTicketSLA(t *models.Ticket) error {
	return tx.Signal(Signal{WorkflowID: names.TicketSLAID(t.ID), Name: names.SignalTicketSLAWake,
		Start: &Start{Workflow: names.TicketSLAWorkflow, Input: models.TicketSLAInput{TicketID: t.ID, OrgID: t.OrgID},
			OrgID: t.OrgID, Kind: names.KindTicketSLA}})
}
