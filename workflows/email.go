package workflows

import (
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// EmailIngestInput names a stored inbound message.
type EmailIngestInput struct {
	InboundID string `json:"inboundId"`
	OrgID     string `json:"orgId"`
}

// EmailIngest reads a received message into a ticket or a comment. It is
// started, in the transaction that stores the message, by the SMTP listener
// or the HTTP inbound route, so a message accepted (250, 202) is read even
// if the process dies right after. Then: a reopened ticket's auto-close
// timer is cancelled, the assignee's notification of the reply is pushed,
// and a ticket opened by e-mail gets its receipt when the workspace sends
// them; a message rejected after it was accepted has its sender told (a
// delivery status notification). A message from a machine is never
// answered.
func EmailIngest(ctx workflow.Context, in EmailIngestInput) (activities.IngestResult, error) {
	var a *activities.Email
	var res activities.IngestResult
	lctx := workflow.WithLocalActivityOptions(ctx, localDBOptions)
	if err := workflow.ExecuteLocalActivity(lctx, a.IngestEmail, in.InboundID).Get(ctx, &res); err != nil {
		return res, err
	}
	if res.CancelAutoClose > 0 {
		if err := cancelAutoCloseChild(ctx, in.OrgID, res.TicketID, res.CancelAutoClose); err != nil {
			return res, err
		}
	}
	if res.NotificationID != "" {
		// A push failure does not undo the reply (the notification stays
		// listed in the API).
		var push *activities.Push
		pctx := workflow.WithActivityOptions(ctx, pushOptions)
		if err := workflow.ExecuteActivity(pctx, push.Deliver, res.NotificationID).Get(pctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("reply notification push failed", "notificationId", res.NotificationID, "error", err)
		}
	}
	if res.Notice && workflow.GetVersion(ctx, "rejection-notice", workflow.DefaultVersion, 1) == 1 {
		// Accepted, then rejected: its sender is told (a failure to tell
		// them is logged; the rejection stands, and is listed).
		mctx := workflow.WithActivityOptions(ctx, mailOptions)
		if err := workflow.ExecuteActivity(mctx, a.NotifyRejection, in.InboundID).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("the sender of a rejected message was not told", "inboundId", in.InboundID, "error", err)
		}
	}
	if res.Acknowledge {
		mctx := workflow.WithActivityOptions(ctx, mailOptions)
		if err := workflow.ExecuteActivity(mctx, a.Acknowledge, res.TicketID).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("the receipt of a ticket opened by e-mail was not sent", "ticketId", res.TicketID, "error", err)
		}
	}
	return res, nil
}

// cancelAutoCloseChild starts the cancellation of the auto-close timer of
// the solved state a reply reopened, as the API records it through the
// outbox; one already started is fine.
func cancelAutoCloseChild(ctx workflow.Context, orgID, ticketID string, solveCount int) error {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            names.TicketAutoCloseCancelID(ticketID, solveCount),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: names.SearchAttributes(orgID, names.KindTicketAutoCloseCancel),
	})
	child := workflow.ExecuteChildWorkflow(cctx, names.TicketAutoCloseCancelWorkflow, TicketAutoCloseCancelInput{TicketID: ticketID, SolveCount: solveCount})
	var started workflow.Execution
	err := child.GetChildWorkflowExecution().Get(ctx, &started)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return nil
	}
	return err
}

// EmailSendInput names the public comment to send (record.Tx.EmailReply).
type EmailSendInput = models.EmailSendInput

// EmailSend sends one public agent reply to its ticket's requester,
// retrying an SMTP server that is down or says "try again later" for
// about two hours (mailOptions). When it cannot be sent the comment's
// delivery says so, with the reason, and the workflow fails visibly; a
// reply whose comment or ticket was deleted meanwhile is not sent.
func EmailSend(ctx workflow.Context, in EmailSendInput) error {
	var a *activities.Email
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, mailOptions), a.SendReply, in.CommentID).Get(ctx, nil)
	if err == nil {
		return nil
	}
	reason := err.Error()
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if appErr.Type() == activities.ErrTypeNotFound {
			return nil // deleted meanwhile: nothing to send
		}
		reason = appErr.Message()
	}
	dctx := workflow.WithActivityOptions(ctx, dbOptions)
	if markErr := workflow.ExecuteActivity(dctx, a.MarkReplyFailed, in.CommentID, reason).Get(ctx, nil); markErr != nil {
		return markErr
	}
	return err
}

// EmailVerifyInput names the support address to verify.
type EmailVerifyInput struct {
	AddressID string `json:"addressId"`
	OrgID     string `json:"orgId"`
}

// EmailAddressVerify mails a support address its verification token, with
// the retries of any mail the suite sends; the address is verified when
// the message comes back through its forwarding (EmailIngest).
func EmailAddressVerify(ctx workflow.Context, in EmailVerifyInput) error {
	var a *activities.Email
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, mailOptions), a.SendVerification, in.AddressID).Get(ctx, nil)
}
