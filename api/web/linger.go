package web

import (
	"io"
	"net"
	"time"
)

// Lingering close. When the server closes a connection that still holds
// unread input — a request whose headers or request line overflow the read
// buffer (431), a body over the limit (413) — the kernel answers the
// client's next segment with a TCP reset, and a reset makes the client's
// kernel drop what it had received and not yet read: the client sees
// "connection reset by peer" instead of the answer that was already sent.
// So a closing connection first shuts down its sending side (the answer
// and a FIN go out), then reads and discards what the client still sends
// until the client closes too, for at most lingerFor and lingerBytes, as
// web servers have done since Apache 1.x (nginx: lingering_close).

const (
	lingerFor   = 2 * time.Second
	lingerBytes = 8 << 20
)

// Linger wraps ln so that its TCP connections close lingeringly (above).
func Linger(ln net.Listener) net.Listener { return lingeringListener{ln} }

type lingeringListener struct{ net.Listener }

func (l lingeringListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return lingeringConn{tc}, nil
	}
	return c, err
}

// lingeringConn is a TCP connection whose Close half-closes it and
// drains the client's input in the background before closing it fully.
type lingeringConn struct{ *net.TCPConn }

func (c lingeringConn) Close() error {
	if err := c.CloseWrite(); err != nil {
		return c.TCPConn.Close() // already closed or reset: nothing to linger for
	}
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(lingerFor))
		_, _ = io.CopyN(io.Discard, c.TCPConn, lingerBytes)
		_ = c.TCPConn.Close()
	}()
	return nil
}
