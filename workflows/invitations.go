package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/business-suite/suite/activities"
)

// InvitationEmailInput names the invitation to e-mail. It carries no
// token: the activity derives it, so no secret enters workflow history.
type InvitationEmailInput struct {
	InvitationID string `json:"invitationId"`
	OrgID        string `json:"orgId"`
}

// mailOptions: an SMTP server that is down or answers 4xx ("try again
// later") is retried with backoff for about two hours; a 5xx answer or a
// configuration error is final.
var mailOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    10 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    15 * time.Minute,
		MaximumAttempts:    12,
		NonRetryableErrorTypes: []string{activities.ErrTypeSMTPRejected, activities.ErrTypeSMTPConfig,
			activities.ErrTypeNotFound, activities.ErrTypeInvitationKeyChanged},
	},
}

// InvitationEmail sends one invitation's e-mail. When it cannot be sent,
// the invitation is marked so (the inviter sees emailStatus "failed" and
// may resend) and the workflow fails with the reason, visible in the
// Temporal UI.
func InvitationEmail(ctx workflow.Context, in InvitationEmailInput) (activities.InvitationEmailResult, error) {
	var a *activities.Invitations
	var out activities.InvitationEmailResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, mailOptions), a.SendInvitationEmail, in.InvitationID).Get(ctx, &out)
	if err == nil {
		return out, nil
	}
	reason := err.Error()
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		reason = appErr.Message()
	}
	dctx := workflow.WithActivityOptions(ctx, dbOptions)
	if markErr := workflow.ExecuteActivity(dctx, a.MarkInvitationEmailFailed, in.InvitationID, reason).Get(ctx, nil); markErr != nil {
		return out, markErr
	}
	return out, err
}
