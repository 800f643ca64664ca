package imapd

import (
	"fmt"
	"io"
	"slices"

	"github.com/emersion/go-imap/v2"
)

// Append answers an APPEND of one message; imapserver hands APPEND to
// BeginAppend (multiappend.go), which this goes through.
func (s *session) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (*imap.AppendData, error) {
	tx, err := s.BeginAppend(mailbox)
	if err != nil {
		return nil, err
	}
	defer tx.Abort()
	if err := tx.Append(r, options, false); err != nil {
		return nil, err
	}
	uidValidity, uids, err := tx.Commit()
	if err != nil {
		return nil, err
	}
	return &imap.AppendData{UID: uids[0], UIDValidity: uidValidity}, nil
}

// appendStep is how much of a literal APPEND reads, and takes room for in
// the memory budget, at a time.
const appendStep = 64 << 10

// readLiteral reads an APPEND's message of size bytes, taking room in the
// shared memory budget (Config.Reserve) a step at a time as the bytes
// arrive, never for the announced size at once: imapserver has already
// asked the client to send, and a client that announced 50 MB and sent a
// byte would otherwise hold 50 MB of everyone's budget, SMTP's included.
// Without room it answers NO [UNAVAILABLE] (imapserver then discards the
// rest of the literal). release gives back every step taken.
func (s *session) readLiteral(r io.Reader, size int64) (body []byte, release func(), err error) {
	var releases []func()
	release = func() {
		for _, f := range releases {
			f()
		}
	}
	body = make([]byte, 0, min(size, appendStep))
	for int64(len(body)) < size {
		n := int(min(size-int64(len(body)), appendStep))
		if s.srv.cfg.Reserve != nil {
			rel, err := s.srv.cfg.Reserve(s.ctx, int64(n))
			if err != nil {
				s.srv.log.Warn("append refused: the memory budget is used", "user", s.user.Email, "size_bytes", size, "read_bytes", len(body))
				return nil, release, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Server busy, try again later"}
			}
			releases = append(releases, rel)
		}
		body = slices.Grow(body, n)
		m, err := io.ReadFull(r, body[len(body):len(body)+n])
		body = body[:len(body)+m]
		if err != nil {
			return nil, release, fmt.Errorf("append: read literal: %w", err)
		}
	}
	return body, release, nil
}
