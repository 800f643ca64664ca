package outbound

import (
	"fmt"
	"net"
	"sync/atomic"
)

// maxReplyBytes bounds what a remote server may send in answer to one
// thing we sent. RFC 5321 replies are short (section 4.5.3.1.5: a reply
// line is at most 512 octets), and an EHLO reply with every extension
// there is is a few hundred bytes; 64 KiB is generous. The bound exists
// because go-smtp's client limits a reply line but not the number of
// lines, and textproto's reader (command) limits neither: a hostile MX,
// which any user's mail, a forward or a bounce can make us talk to,
// could otherwise stream a reply until the command timeout and take the
// memory of the whole server with it.
const maxReplyBytes = 64 << 10

// errReplyTooLong is the read error of a connection whose server sent
// more than maxReplyBytes in one reply. It is not a lost connection nor a
// timeout: classify makes it a temporary failure (the message is retried
// later), and the session, whose replies are out of step, is dropped.
var errReplyTooLong = fmt.Errorf("reply longer than %d KiB", maxReplyBytes>>10)

// replyLimitConn is a connection whose reads fail with errReplyTooLong
// once more than max bytes have come in since the last Write: a reply is
// what the server sends after a command, and after the message body
// during DATA its reply is read after our last write too. The failure
// sticks: the stream is out of step, and the connection is good for
// nothing but Close.
//
// It goes under everything that reads the connection, go-smtp's client,
// command and crypto/tls alike; under TLS the handshake is bounded the
// same way (crypto/tls caps a handshake message at 64 KiB itself, so a
// server's flight near the bound would be refused: no real certificate
// chain comes close). With TLS a second one goes over the tls.Conn (see
// connect): the server can make crypto/tls write (a KeyUpdate asking for
// ours, RFC 8446 section 4.6.3), which would restart the count below,
// while above only our commands do.
type replyLimitConn struct {
	net.Conn
	max int64
	// n and over are atomic: Close (ctx ending a command) may write a
	// TLS close_notify while a Read is under way.
	n    atomic.Int64
	over atomic.Bool
}

func limitReplies(c net.Conn) *replyLimitConn {
	return &replyLimitConn{Conn: c, max: maxReplyBytes}
}

func (c *replyLimitConn) Read(p []byte) (int, error) {
	if c.over.Load() {
		return 0, errReplyTooLong
	}
	// Never read more than the bound leaves plus one byte, so that the
	// bytes beyond it are not handed on before the failure.
	if room := c.max - c.n.Load() + 1; int64(len(p)) > room {
		p = p[:max(room, 1)]
	}
	n, err := c.Conn.Read(p)
	if c.n.Add(int64(n)) > c.max {
		c.over.Store(true)
		return 0, errReplyTooLong
	}
	return n, err
}

func (c *replyLimitConn) Write(p []byte) (int, error) {
	c.n.Store(0)
	return c.Conn.Write(p)
}
