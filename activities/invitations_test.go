package activities_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
	"github.com/business-suite/suite/worker/mailsink"
)

// invitation stores a pending invitation of a new invited member of a new
// organization, its token derived as the API derives it.
func invitation(t *testing.T, db *gorm.DB, email string) (*models.Invitation, string) {
	t.Helper()
	orgID, _ := seedOrg(t, db, models.RoleOwner)
	now := models.Now()
	m := models.Member{ID: models.NewID(), OrgID: orgID, Email: email, Role: models.RoleAgent, Status: models.MemberInvited, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&m).Error; err != nil {
		t.Fatal(err)
	}
	key, err := models.EnsureServerSecret(t.Context(), db, models.InvitationKeyName)
	if err != nil {
		t.Fatal(err)
	}
	inv := &models.Invitation{ID: models.NewID(), OrgID: orgID, MemberID: m.ID, Email: email, Status: models.InvitationPending,
		ExpiresAt: now.Add(models.InvitationTTL), EmailStatus: models.InviteEmailQueued, CreatedAt: now, UpdatedAt: now}
	token := models.InvitationToken(key, inv.ID)
	inv.TokenHash = models.HashKey(token)
	if err := db.Create(inv).Error; err != nil {
		t.Fatal(err)
	}
	return inv, token
}

// The e-mail goes over real SMTP; the server's answers decide the retry:
// 4xx and an unreachable server are temporary (retried), 5xx permanent.
func TestSendInvitationEmailOverSMTP(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		sink, err := mailsink.Start(mailsink.Options{Addr: "127.0.0.1:0", Reject: func(rcpt string) *smtp.SMTPError {
			switch {
			case strings.HasPrefix(rcpt, "full@"):
				return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "mailbox full, try later"}
			case strings.HasPrefix(rcpt, "nobody@"):
				return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		a := &activities.Invitations{DB: db, Mail: activities.SMTP{URL: sink.URL(), From: "Suite <no-reply@suite.example>"},
			PublicURL: "https://api.example.com"}
		ctx := context.Background()
		status := func(id string) models.Invitation {
			var inv models.Invitation
			db.Take(&inv, "id = ?", id)
			return inv
		}

		ok, token := invitation(t, db, "grace@example.com")
		if out, err := a.SendInvitationEmail(ctx, ok.ID); err != nil || !out.Sent {
			t.Fatalf("send: %+v %v", out, err)
		}
		m, err := sink.Wait("grace@example.com", 5*time.Second)
		if err != nil || !strings.Contains(string(m.Data), token) || m.Header().Get("From") != "Suite <no-reply@suite.example>" {
			t.Fatalf("message %s %v", m.Data, err)
		}
		if s := status(ok.ID); s.EmailStatus != models.InviteEmailSent {
			t.Fatalf("status %+v", s)
		}

		var appErr *temporal.ApplicationError
		full, _ := invitation(t, db, "full@example.com")
		_, err = a.SendInvitationEmail(ctx, full.ID)
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeSMTPTemporary || appErr.NonRetryable() {
			t.Fatalf("4xx: %v", err)
		}
		if s := status(full.ID); s.EmailStatus != models.InviteEmailQueued || !strings.Contains(s.EmailError, "452") {
			t.Fatalf("after a 4xx: %+v", s)
		}
		nobody, _ := invitation(t, db, "nobody@example.com")
		_, err = a.SendInvitationEmail(ctx, nobody.ID)
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeSMTPRejected || !appErr.NonRetryable() {
			t.Fatalf("5xx: %v", err)
		}
		if err := a.MarkInvitationEmailFailed(ctx, nobody.ID, appErr.Message()); err != nil {
			t.Fatal(err)
		}
		if s := status(nobody.ID); s.EmailStatus != models.InviteEmailFailed || !strings.Contains(s.EmailError, "550") {
			t.Fatalf("after a 5xx: %+v", s)
		}

		// Accepted (or withdrawn) meanwhile: nothing to send.
		db.Model(&models.Invitation{}).Where("id = ?", ok.ID).Update("status", models.InvitationAccepted)
		if out, err := a.SendInvitationEmail(ctx, ok.ID); err != nil || out.Skipped != "not_pending" {
			t.Fatalf("accepted: %+v %v", out, err)
		}
		// No SMTP server configured: recorded, not an error.
		off, _ := invitation(t, db, "off@example.com")
		if out, err := (&activities.Invitations{DB: db}).SendInvitationEmail(ctx, off.ID); err != nil || out.Skipped != "smtp_not_configured" {
			t.Fatalf("unconfigured: %+v %v", out, err)
		}
		if s := status(off.ID); s.EmailStatus != models.InviteEmailDisabled {
			t.Fatalf("unconfigured status %+v", s)
		}
		// The server is down: temporary.
		_ = sink.Close()
		down, _ := invitation(t, db, "down@example.com")
		_, err = a.SendInvitationEmail(ctx, down.ID)
		if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeSMTPTemporary || appErr.NonRetryable() {
			t.Fatalf("server down: %v", err)
		}
	})
}

// smtp:// means STARTTLS, required: the message goes out encrypted to a
// server that offers it, and not at all to one that does not.
func TestSendInvitationEmailRequiresSTARTTLS(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate
	defer certSrv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(certSrv.Certificate())
	tlsSink, err := mailsink.Start(mailsink.Options{Addr: "127.0.0.1:0", TLS: certSrv.TLS.Clone()})
	if err != nil {
		t.Fatal(err)
	}
	defer tlsSink.Close()
	plainSink, err := mailsink.Start(mailsink.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer plainSink.Close()
	send := func(sink *mailsink.Sink, email string) error {
		inv, _ := invitation(t, db, email)
		a := &activities.Invitations{DB: db, Mail: activities.SMTP{URL: "smtp://" + sink.Addr(), From: "no-reply@suite.example", RootCAs: pool}}
		_, err := a.SendInvitationEmail(t.Context(), inv.ID)
		return err
	}
	if err := send(tlsSink, "tls@example.com"); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	if err := send(plainSink, "plain@example.com"); err == nil || len(plainSink.Messages()) != 0 {
		t.Fatalf("sent without TLS: %v", err)
	}
}

func TestCheckSMTP(t *testing.T) {
	for raw, ok := range map[string]bool{
		"smtp://user:pw@mail.example.com:587":      true,
		"smtps://user:pw@mail.example.com":         true,
		"smtp://127.0.0.1:1025?tls=none":           true,
		"smtp://user:pw@127.0.0.1:1025?tls=none":   true,
		"smtp://user:pw@mail.example.com?tls=none": false,
		"http://mail.example.com":                  false,
		"smtp://":                                  false,
	} {
		err := activities.CheckSMTP(activities.SMTP{URL: raw, From: "no-reply@example.com"})
		if (err == nil) != ok {
			t.Errorf("CheckSMTP(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
	if err := activities.CheckSMTP(activities.SMTP{URL: "smtp://mail.example.com", From: "not an address"}); err == nil {
		t.Error("a bad SMTP_FROM passed")
	}
}
