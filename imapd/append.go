package imapd

import (
	"fmt"
	"io"
	"slices"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// Append answers APPEND with APPENDUID (RFC 4315). A message that would
// put the account over quota is refused with NO [OVERQUOTA] before it is
// read; INTERNALDATE defaults to now.
func (s *session) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (*imap.AppendData, error) {
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	f, err := s.st.Folder(s.ctx, s.user.ID, mailbox)
	if err != nil {
		return nil, s.tryCreate("append", err)
	}
	size := r.Size()
	if size > s.srv.cfg.MaxMessageBytes {
		return nil, no(imap.ResponseCodeTooBig, fmt.Sprintf("Messages are limited to %d bytes", s.srv.cfg.MaxMessageBytes))
	}
	// The account's usage changes with every delivery: read it now.
	mb, err := s.account()
	if err != nil {
		return nil, s.fail("append", err)
	}
	if !mb.Fits(size) {
		return nil, s.fail("append", mailstore.ErrOverQuota)
	}
	body, release, err := s.readLiteral(r, size)
	defer release()
	if err != nil {
		return nil, err
	}
	t := options.Time
	if t.IsZero() {
		t = s.srv.now()
	}
	m, err := s.st.Append(s.ctx, s.user.ID, f.ID, body, storeFlags(options.Flags), t)
	if err != nil {
		return nil, s.tryCreate("append", err)
	}
	s.srv.recent.added(f.ID, m.UID)
	return &imap.AppendData{UID: imap.UID(m.UID), UIDValidity: f.UIDValidity}, nil
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
