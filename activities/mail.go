package activities

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"go.temporal.io/sdk/temporal"
)

// SMTP is how the suite sends e-mail: an SMTP server given as a URL, and
// the sender address. The zero value sends nothing (Configured is false).
//
//	smtp://user:password@host:587   STARTTLS, required (the default port is 587)
//	smtps://user:password@host:465  TLS from the first byte (default port 465)
//	smtp://host:25?tls=none         plain SMTP (a local relay or the dev sink);
//	                                credentials are refused unless the host is loopback
type SMTP struct {
	URL  string
	From string
	// RootCAs, when set, replaces the system's certificate authorities.
	RootCAs *x509.CertPool
}

// Configured tells whether an SMTP server is set.
func (s SMTP) Configured() bool { return s.URL != "" }

type smtpTarget struct {
	addr, host   string
	implicitTLS  bool
	startTLS     bool
	user, secret string
}

// CheckSMTP validates SMTP_URL and SMTP_FROM (at start, and before sending).
func CheckSMTP(s SMTP) error {
	if !s.Configured() {
		return nil
	}
	if _, err := parseSMTPURL(s.URL); err != nil {
		return err
	}
	if _, err := mail.ParseAddress(s.From); err != nil {
		return fmt.Errorf("SMTP_FROM must be an e-mail address (e.g. \"Business Suite <no-reply@example.com>\"): %w", err)
	}
	return nil
}

func parseSMTPURL(raw string) (smtpTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return smtpTarget{}, errors.New("SMTP_URL is not a URL")
	}
	t := smtpTarget{host: u.Hostname()}
	port := u.Port()
	switch u.Scheme {
	case "smtps":
		t.implicitTLS = true
		if port == "" {
			port = "465"
		}
	case "smtp":
		t.startTLS = u.Query().Get("tls") != "none"
		if port == "" {
			port = "587"
		}
	default:
		return smtpTarget{}, errors.New("SMTP_URL must start with smtp:// or smtps://")
	}
	if t.host == "" {
		return smtpTarget{}, errors.New("SMTP_URL has no host")
	}
	t.addr = net.JoinHostPort(t.host, port)
	if u.User != nil {
		t.user = u.User.Username()
		t.secret, _ = u.User.Password()
	}
	if t.user != "" && !t.implicitTLS && !t.startTLS && !isLoopbackHost(t.host) {
		return smtpTarget{}, errors.New("SMTP_URL sends credentials without TLS (tls=none) to a host that is not loopback")
	}
	return t, nil
}

func isLoopbackHost(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return h == "localhost"
}

// send delivers msg to rcpt through the configured server. SMTP 5xx
// answers are non-retryable (ErrTypeSMTPRejected); 4xx answers and
// connection failures are retryable (ErrTypeSMTPTemporary).
func (s SMTP) send(ctx context.Context, rcpt string, msg []byte) error {
	from, err := mail.ParseAddress(s.From)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("SMTP_FROM is not an e-mail address", ErrTypeSMTPConfig, err)
	}
	return s.sendFrom(ctx, from.Address, rcpt, msg)
}

// sendFrom is send with from as the envelope's sender (a workspace's
// address, so that bounces come back to its channel).
func (s SMTP) sendFrom(ctx context.Context, from, rcpt string, msg []byte) error {
	t, err := parseSMTPURL(s.URL)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSMTPConfig, nil)
	}
	if err := s.deliver(ctx, t, from, rcpt, msg); err != nil {
		return classifySMTP(err)
	}
	return nil
}

func (s SMTP) deliver(ctx context.Context, t smtpTarget, from, rcpt string, msg []byte) error {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return err
	}
	tlsConfig := &tls.Config{ServerName: t.host, MinVersion: tls.VersionTLS12, RootCAs: s.RootCAs}
	if t.implicitTLS {
		conn = tls.Client(conn, tlsConfig)
	}
	// The context bounds the whole exchange.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var c *smtp.Client
	if t.startTLS {
		if c, err = smtp.NewClientStartTLS(conn, tlsConfig); err != nil {
			_ = conn.Close()
			return err
		}
	} else {
		c = smtp.NewClient(conn)
	}
	defer c.Close()
	c.CommandTimeout, c.SubmissionTimeout = 30*time.Second, time.Minute
	if t.user != "" {
		if err := c.Auth(sasl.NewPlainClient("", t.user, t.secret)); err != nil {
			return err
		}
	}
	if err := c.SendMail(from, []string{rcpt}, bytes.NewReader(msg)); err != nil {
		return err
	}
	return c.Quit()
}

// classifySMTP maps a delivery error to its retry behaviour.
func classifySMTP(err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		msg := fmt.Sprintf("the SMTP server answered %d: %s", se.Code, se.Message)
		if se.Code >= 500 {
			return temporal.NewNonRetryableApplicationError(msg, ErrTypeSMTPRejected, err)
		}
		return temporal.NewApplicationErrorWithCause(msg, ErrTypeSMTPTemporary, err)
	}
	return temporal.NewApplicationErrorWithCause("the SMTP server could not be reached: "+err.Error(), ErrTypeSMTPTemporary, err)
}

// mailMessage is one plain-text e-mail. MessageID (without brackets) is
// random at From's domain when empty; the thread's headers and
// Auto-Submitted are written when set.
type mailMessage struct {
	From, To, Subject, Body string
	ReplyTo, MessageID      string
	// References are the thread's earlier Message-IDs, oldest first; the
	// last is also In-Reply-To.
	References []string
	// AutoSubmitted marks a message no person wrote (RFC 3834), so that
	// auto-responders do not answer it.
	AutoSubmitted string
}

// bytes renders the message (RFC 5322, UTF-8, quoted-printable body).
func (m mailMessage) bytes(now time.Time) []byte {
	if m.MessageID == "" {
		id := make([]byte, 12)
		_, _ = rand.Read(id)
		domain := "business-suite.local"
		if a, err := mail.ParseAddress(m.From); err == nil {
			if _, d, ok := strings.Cut(a.Address, "@"); ok {
				domain = d
			}
		}
		m.MessageID = hex.EncodeToString(id) + "@" + domain
	}
	var b bytes.Buffer
	header := func(k, v string) {
		if v != "" {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	header("From", m.From)
	header("Reply-To", m.ReplyTo)
	header("To", m.To)
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+m.MessageID+">")
	if n := len(m.References); n > 0 {
		header("In-Reply-To", "<"+m.References[n-1]+">")
		header("References", "<"+strings.Join(m.References, "> <")+">")
	}
	header("Auto-Submitted", m.AutoSubmitted)
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(m.Body, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}
