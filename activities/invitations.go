package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// Invitations sends invitation e-mails. The token in the e-mail is never
// part of the workflow's input or history: the activity recomputes it from
// the invitation id and the server's invitation key (models.InvitationToken).
type Invitations struct {
	DB   *gorm.DB
	Mail SMTP
	// PublicURL is the API's public base URL, for the accept call shown in
	// the e-mail ("" shows the path alone).
	PublicURL string
	// InviteURL, when set, is a link template of the operator's front end
	// with {token} where the token goes, e.g.
	// https://app.example.com/accept-invite?token={token}.
	InviteURL string
}

// InvitationEmailResult tells what SendInvitationEmail did.
type InvitationEmailResult struct {
	Sent bool `json:"sent"`
	// Skipped says why nothing was sent: not_pending (accepted or
	// withdrawn meanwhile), expired, or smtp_not_configured.
	Skipped string `json:"skipped,omitempty"`
}

// SendInvitationEmail e-mails the invitation's token to the invited
// address. Retried by its workflow on SMTP 4xx answers and connection
// failures; a 5xx answer is final.
func (a *Invitations) SendInvitationEmail(ctx context.Context, invitationID string) (InvitationEmailResult, error) {
	db := a.DB.WithContext(ctx)
	var inv models.Invitation
	if err := db.Take(&inv, "id = ?", invitationID).Error; err != nil {
		return InvitationEmailResult{}, missing("invitation "+invitationID, err)
	}
	switch {
	case inv.Status != models.InvitationPending:
		return InvitationEmailResult{Skipped: "not_pending"}, nil
	case inv.ExpiresAt.Before(models.Now()):
		return InvitationEmailResult{Skipped: "expired"}, nil
	case !a.Mail.Configured():
		err := a.setEmailStatus(ctx, inv.ID, models.InviteEmailDisabled, "no SMTP server is configured (SMTP_URL)")
		return InvitationEmailResult{Skipped: "smtp_not_configured"}, err
	}
	key, err := models.EnsureServerSecret(ctx, a.DB, models.InvitationKeyName)
	if err != nil {
		return InvitationEmailResult{}, err
	}
	token := models.InvitationToken(key, inv.ID)
	if models.HashKey(token) != inv.TokenHash {
		return InvitationEmailResult{}, temporal.NewNonRetryableApplicationError(
			"the invitation key changed since the invitation was made; resend the invitation", ErrTypeInvitationKeyChanged, nil)
	}
	var org models.Organization
	if err := db.Take(&org, "id = ?", inv.OrgID).Error; err != nil {
		return InvitationEmailResult{}, missing("organization "+inv.OrgID, err)
	}
	var m models.Member
	if err := db.Take(&m, "id = ?", inv.MemberID).Error; err != nil {
		return InvitationEmailResult{}, missing("member "+inv.MemberID, err)
	}
	inviter := "An administrator"
	var who models.Member
	if inv.InvitedBy != "" && db.Take(&who, "org_id = ? AND user_id = ?", inv.OrgID, inv.InvitedBy).Error == nil {
		inviter = strings.TrimSpace(who.Name + " (" + who.Email + ")")
	}
	msg := mailMessage{From: a.Mail.From, To: inv.Email,
		Subject: "You are invited to join " + org.Name + " on Business Suite",
		Body:    a.invitationText(inviter, org.Name, m.Role, inv, token)}
	if err := a.Mail.send(ctx, inv.Email, msg.bytes(time.Now())); err != nil {
		_ = a.setEmailStatus(ctx, inv.ID, models.InviteEmailQueued, err.Error()) // the last failure, for operators
		return InvitationEmailResult{}, err
	}
	return InvitationEmailResult{Sent: true}, a.setEmailStatus(ctx, inv.ID, models.InviteEmailSent, "")
}

func (a *Invitations) invitationText(inviter, org, role string, inv models.Invitation, token string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s invited you (%s) to join %s on Business Suite as %s.\n\n", inviter, inv.Email, org, role)
	if link := models.InviteLink(a.InviteURL, token); link != "" {
		fmt.Fprintf(&b, "Accept the invitation:\n\n  %s\n\n", link)
	}
	endpoint := strings.TrimRight(a.PublicURL, "/") + "/crm/invitations/accept"
	fmt.Fprintf(&b, "To accept it through the API, sign in as %s (sign up with that address first if you have no account) and send your access token with the invitation token:\n\n", inv.Email)
	fmt.Fprintf(&b, "  curl -s -X POST %s \\\n    -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' \\\n    -d '{\"token\":\"%s\"}'\n\n", endpoint, token)
	fmt.Fprintf(&b, "Invitation token: %s\n\n", token)
	fmt.Fprintf(&b, "The invitation works once and expires on %s. If you did not expect it, ignore this e-mail.\n",
		inv.ExpiresAt.UTC().Format("2 January 2006 at 15:04 UTC"))
	return b.String()
}

// MarkInvitationEmailFailed records that the invitation e-mail could not be
// sent (the workflow gave up); the inviter still has the token they were
// shown, and may resend.
func (a *Invitations) MarkInvitationEmailFailed(ctx context.Context, invitationID, reason string) error {
	return a.setEmailStatus(ctx, invitationID, models.InviteEmailFailed, reason)
}

func (a *Invitations) setEmailStatus(ctx context.Context, id, status, reason string) error {
	if len(reason) > 500 {
		reason = reason[:500]
	}
	err := a.DB.WithContext(ctx).Model(&models.Invitation{}).Where("id = ?", id).
		Updates(map[string]any{"email_status": status, "email_error": strings.ToValidUTF8(reason, ""), "updated_at": models.Now()}).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	return err
}
