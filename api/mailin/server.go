package mailin

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"time"

	"github.com/emersion/go-smtp"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Options configure the SMTP listener.
type Options struct {
	// Domain is the workspaces' mail domain (SUITE_MAIL_DOMAIN): mail to
	// ws-<workspace>@Domain, and to the workspaces' own support addresses,
	// is taken; any other recipient is refused.
	Domain string
	// MaxBytes is the largest message taken (DefaultMaxBytes when 0).
	MaxBytes int64
	// TLS, when set, is offered with STARTTLS.
	TLS *tls.Config
	// Log reports stored messages and storage failures.
	Log *slog.Logger
	// SenderRate and ClientRate are how many messages one sending address
	// and one client address may store in a minute (451 beyond: a real
	// sender retries later, a storm is slowed); DefaultSenderRate and
	// DefaultClientRate when 0. A mail provider relaying for many
	// customers is one client address, so ClientRate is the larger
	// (SUITE_SMTP_CLIENT_RATE).
	SenderRate, ClientRate int
	// InFlight, when set, counts each message while its data is read and
	// stored as a request in flight, as the API counts its requests:
	// under `suite dev` the outbox relay gives way while mail arrives
	// faster than the cores take it (outbox.Starter.YieldTo).
	InFlight *web.InFlight
}

// The default per-minute limits of Options.
const (
	DefaultSenderRate = 120
	DefaultClientRate = 600
)

// Limits of one SMTP session (go-smtp answers them itself).
const (
	// maxRecipients: a message to more workspaces than this is a list or
	// a storm, not a request (452 beyond).
	maxRecipients = 50
	// maxLine is the longest line taken, in a command or the message.
	maxLine = 64 << 10
)

// Server is a running SMTP listener.
type Server struct {
	db      *gorm.DB
	starter *outbox.Starter
	opts    Options
	srv     *smtp.Server
	ln      net.Listener
}

// Serve serves SMTP on ln (SUITE_SMTP_ADDR's, opened by the caller so
// that a port taken fails the process's start) until Close.
func Serve(ln net.Listener, db *gorm.DB, starter *outbox.Starter, opts Options) *Server {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.SenderRate <= 0 {
		opts.SenderRate = DefaultSenderRate
	}
	if opts.ClientRate <= 0 {
		opts.ClientRate = DefaultClientRate
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{db: db, starter: starter, opts: opts, ln: ln}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, client: clientHost(c.Conn().RemoteAddr())}, nil
	}))
	s.srv.Domain = opts.Domain
	s.srv.MaxMessageBytes = opts.MaxBytes
	s.srv.MaxRecipients = maxRecipients
	s.srv.MaxLineLength = maxLine
	s.srv.ReadTimeout, s.srv.WriteTimeout = 5*time.Minute, time.Minute
	s.srv.TLSConfig = opts.TLS
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

// Addr is the address the listener listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener; a message being received is not stored (its
// sender was never told 250, and sends it again).
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// SMTP answers of the listener.
var (
	errNoMailbox = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
		Message: "No such mailbox: this server takes mail for its workspaces' addresses only"}
	errUnavailable = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "The message could not be stored now; try again later"}
	errTooFast = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1},
		Message: "Too many messages from this sender; try again later"}
	errNoRecipient = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "No valid recipients"}
	errBadSender   = &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Not a valid sender address"}
	errBadMailbox  = &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Not a valid recipient address"}
	errProbing     = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
		Message: "Too many unknown recipients in this session"}
)

// maxRefused is how many recipients a session may name that are no
// workspace's before every further one is refused unread: a client
// guessing addresses costs the database nothing more.
const maxRefused = 20

// session is one SMTP conversation: a return path, the workspaces its
// recipients reach, then the message.
type session struct {
	s      *Server
	client string
	from   string
	// orgs maps each workspace reached to the first address that reached
	// it: a message to two addresses of one workspace is one message.
	orgs  map[string]string
	order []string
	// refused counts the session's recipients that were no workspace's.
	refused int
}

// Reset ends a message: delivered, refused or abandoned.
func (ss *session) Reset()        { ss.from, ss.orgs, ss.order = "", nil, nil }
func (ss *session) Logout() error { return nil }

// Mail takes the return path: empty (a bounce) or an address.
func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	from = models.NormalizeEmail(from)
	if from != "" && !models.PlainAddress(from) {
		return errBadSender
	}
	ss.from = from
	return nil
}

// Rcpt takes a workspace's address and refuses any other (550), so that
// nothing is ever accepted for nobody; a database that does not answer is
// a temporary failure (451).
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case ss.refused >= maxRefused:
		return errProbing
	case !models.PlainAddress(models.NormalizeEmail(to)):
		ss.refused++
		return errBadMailbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	orgID, err := models.ResolveMailbox(ss.s.db.WithContext(ctx), to, ss.s.opts.Domain)
	switch {
	case errors.Is(err, models.ErrNoSuchMailbox):
		ss.refused++
		return errNoMailbox
	case err != nil:
		ss.s.opts.Log.Warn("inbound mail: resolving a recipient failed", "error", err)
		return errUnavailable
	}
	if ss.orgs == nil {
		ss.orgs = map[string]string{}
	}
	if _, seen := ss.orgs[orgID]; !seen {
		ss.orgs[orgID] = models.NormalizeEmail(to)
		ss.order = append(ss.order, orgID)
	}
	return nil
}

// Data reads the message (go-smtp refuses one over MaxBytes with 552),
// refuses one that can never become a ticket (550 5.6.0: unreadable, or
// no sender to answer) and stores the others for each workspace it
// reached; 250 only once it is stored.
// While it does, the message counts as a request in flight.
func (ss *session) Data(r io.Reader) error {
	if ss.s.opts.InFlight != nil {
		defer ss.s.opts.InFlight.Begin()()
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return err // too large (552) or the connection broke: nothing stored
	}
	if len(ss.order) == 0 {
		return errNoRecipient
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if limited, err := ss.tooFast(ctx); err != nil {
		ss.s.opts.Log.Warn("inbound mail: counting the sender's messages failed", "error", err)
		return errUnavailable
	} else if limited {
		return errTooFast
	}
	// What can never become a ticket is refused now, so that the sending
	// server tells its sender; what is accepted is read the same way again
	// by the ingest activity.
	p := models.ParseEmail(raw, ss.from)
	if p.Rejected != "" {
		return refusalOf(p.Rejected)
	}
	now := models.Now()
	msgs := make([]*models.InboundEmail, len(ss.order))
	for i, orgID := range ss.order {
		msgs[i] = &models.InboundEmail{OrgID: orgID, MailFrom: ss.from, Rcpt: ss.orgs[orgID], Via: "smtp", Raw: raw, ReceivedAt: now}
	}
	if err := storeAll(ctx, ss.s.starter, msgs, &p); err != nil {
		ss.s.opts.Log.Error("inbound mail: storing a message failed; the sender was told to try again", "error", err)
		return errUnavailable
	}
	ss.s.opts.Log.Info("inbound mail stored", "from", ss.from, "workspaces", len(msgs), "bytes", len(raw))
	return nil
}

// refusalOf is the 550 of a message that can never become a ticket, for
// the reason ParseEmail gave.
func refusalOf(reason string) error {
	why := map[string]string{
		"no_sender":  "The message names no sender (From) that can be answered",
		"bad_sender": "The message's From is not an address that can be answered",
	}[reason]
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0},
		Message: cmp.Or(why, "The message cannot be read: its header or MIME structure is malformed")}
}

// tooFast counts the message against its sending address and its client
// address, in one statement, and tells whether it is over either's limit.
func (ss *session) tooFast(ctx context.Context) (bool, error) {
	rates, err := models.HitRates(ctx, ss.s.db, []string{"smtp-from|" + ss.from, "smtp-client|" + ss.client}, time.Minute, models.Now(), 1)
	if err != nil {
		return false, err
	}
	return rates[0].Estimate() > float64(ss.s.opts.SenderRate) || rates[1].Estimate() > float64(ss.s.opts.ClientRate), nil
}

// clientHost is the client's IP address, without its port.
func clientHost(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
