// Package mailsink is a real SMTP server that keeps every message it
// receives instead of delivering it: `suite dev` runs one so that
// invitations (and any later e-mail) can be read without a mail provider,
// and tests run one to read what the suite sent. It speaks SMTP through
// github.com/emersion/go-smtp, so the suite's mail client is exercised
// exactly as against a provider.
package mailsink

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one received message.
type Message struct {
	From string
	To   []string
	// Data is the message as sent (RFC 5322 headers and body).
	Data []byte
	// Path is where it was stored ("" without a directory).
	Path string
}

// Header parses the message's header.
func (m Message) Header() mail.Header {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return mail.Header{}
	}
	return msg.Header
}

// Options configure a sink.
type Options struct {
	// Addr is where to listen, e.g. 127.0.0.1:1025 (":0" picks a port).
	Addr string
	// Dir, when set, receives every message as <time>-<n>.eml.
	Dir string
	// Log reports each stored message (nil: not reported).
	Log *slog.Logger
	// Reject, when set, may refuse a recipient with an SMTP error, as a
	// real server would (tests of temporary 4xx and permanent 5xx
	// failures).
	Reject func(rcpt string) *smtp.SMTPError
	// TLS, when set, makes the sink offer STARTTLS with it.
	TLS *tls.Config
}

// Sink is a running SMTP sink.
type Sink struct {
	opts Options
	srv  *smtp.Server
	ln   net.Listener

	mu       sync.Mutex
	messages []Message
	arrived  chan struct{} // closed and replaced on every message
	seq      int
}

// Start listens on opts.Addr and serves until Close.
func Start(opts Options) (*Sink, error) {
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("mail sink directory: %w", err)
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("mail sink: listen on %s: %w", opts.Addr, err)
	}
	s := &Sink{opts: opts, ln: ln, arrived: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{sink: s}, nil }))
	s.srv.Domain = "mailsink.local"
	s.srv.MaxMessageBytes = 10 << 20
	s.srv.MaxRecipients = 100
	s.srv.ReadTimeout, s.srv.WriteTimeout = time.Minute, time.Minute
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.TLSConfig = opts.TLS
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the sink listens on.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// URL is the SMTP_URL that sends to this sink (plain SMTP: it only
// listens where it was told, loopback in dev mode and tests).
func (s *Sink) URL() string { return "smtp://" + s.Addr() + "?tls=none" }

// Close stops the sink.
func (s *Sink) Close() error {
	err := s.srv.Close()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// Messages returns the messages received so far.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Wait returns the first message to rcpt, waiting up to timeout for it.
func (s *Sink) Wait(rcpt string, timeout time.Duration) (Message, error) {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		arrived := s.arrived
		for _, m := range s.messages {
			for _, to := range m.To {
				if strings.EqualFold(to, rcpt) {
					s.mu.Unlock()
					return m, nil
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline:
			return Message{}, fmt.Errorf("no message to %s within %s", rcpt, timeout)
		}
	}
}

func (s *Sink) store(m Message) error {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	if s.opts.Dir != "" {
		name := fmt.Sprintf("%s-%04d.eml", time.Now().UTC().Format("20060102T150405.000000Z"), n)
		m.Path = filepath.Join(s.opts.Dir, name)
		if err := os.WriteFile(m.Path, m.Data, 0o600); err != nil {
			return err
		}
	}
	if s.opts.Log != nil {
		s.opts.Log.Info("mail received (not delivered: dev mail sink)", "to", strings.Join(m.To, ", "),
			"subject", m.Header().Get("Subject"), "file", m.Path)
	}
	s.mu.Lock()
	s.messages = append(s.messages, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
	s.mu.Unlock()
	return nil
}

type session struct {
	sink *Sink
	from string
	to   []string
}

func (ss *session) Reset()        { ss.from, ss.to = "", nil }
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if r := ss.sink.opts.Reject; r != nil {
		if err := r(to); err != nil {
			return err
		}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := ss.sink.store(Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data}); err != nil {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "could not store the message"}
	}
	return nil
}
