package imapd

import (
	"fmt"
	"io"

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
	if mb.UsedBytes+size > mb.QuotaBytes() {
		return nil, s.fail("append", mailstore.ErrOverQuota)
	}
	if s.srv.cfg.Reserve != nil {
		release, err := s.srv.cfg.Reserve(s.ctx, size)
		if err != nil {
			s.srv.log.Warn("append refused: the memory budget is used", "user", s.user.Email, "size_bytes", size)
			return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Server busy, try again later"}
		}
		defer release()
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("append: read literal: %w", err)
	}
	t := options.Time
	if t.IsZero() {
		t = s.srv.now()
	}
	m, err := s.st.Append(s.ctx, s.user.ID, f.ID, body, storeFlags(options.Flags), t)
	if err != nil {
		return nil, s.tryCreate("append", err)
	}
	return &imap.AppendData{UID: imap.UID(m.UID), UIDValidity: f.UIDValidity}, nil
}
