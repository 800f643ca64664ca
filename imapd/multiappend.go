package imapd

import (
	"fmt"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// APPEND and MULTIAPPEND (RFC 3502): imapserver hands each message of an
// APPEND to an appendTx, which reads it into memory (readLiteral, within
// the shared memory budget) and checks it against APPENDLIMIT and the
// account's quota as it arrives, then stores them all in one transaction
// (mailstore.Mail.AppendMany) when the command ends: all or none, under
// consecutive UIDs, answered APPENDUID with the set (RFC 4315). A
// message that fails a check fails the command, and imapserver asks the
// client for no more literals. Since the messages wait in memory until
// the last arrives, one APPEND's messages together are bounded by
// Config.MaxMessageBytes too, as each is, and their number by
// maxAppendMessages.
//
// A literal8 (RFC 3516, "~{n}") is taken like a literal; a message with
// NUL octets is stored with the parts that hold them base64-encoded
// (binary.go's withoutNUL).

// maxAppendMessages bounds the messages of one APPEND: their bytes are
// bounded by MaxMessageBytes, but each message costs a record and a
// summary however small, so a command of millions of one-byte messages
// would hold far more memory than its bytes.
const maxAppendMessages = 1000

// appendTx is one APPEND command's messages (imapserver.AppendTx).
type appendTx struct {
	s        *session
	f        mailstore.Folder
	mb       *mailstore.Mailbox
	msgs     []mailstore.AppendMessage
	total    int64
	releases []func()
}

// BeginAppend implements imapserver.SessionMultiAppend.
func (s *session) BeginAppend(mailbox string) (imapserver.AppendTx, error) {
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	f, err := s.st.Folder(s.ctx, s.user.ID, mailbox)
	if err != nil {
		return nil, s.tryCreate("append", err)
	}
	return &appendTx{s: s, f: f}, nil
}

// Append implements imapserver.AppendTx: a message over APPENDLIMIT, or
// that would put the account over quota with those before it, is
// refused before it is read.
func (tx *appendTx) Append(r imap.LiteralReader, options *imap.AppendOptions, binary bool) error {
	s := tx.s
	if len(tx.msgs) >= maxAppendMessages {
		return no(imap.ResponseCodeLimit, fmt.Sprintf("At most %d messages in one APPEND", maxAppendMessages))
	}
	size := r.Size()
	limit := s.srv.cfg.MaxMessageBytes
	if size > limit {
		return no(imap.ResponseCodeTooBig, fmt.Sprintf("Messages are limited to %d bytes", limit))
	}
	if tx.total+size > limit {
		return no(imap.ResponseCodeTooBig, fmt.Sprintf("The messages of one APPEND are limited to %d bytes together", limit))
	}
	if tx.mb == nil {
		// The account's usage changes with every delivery: read it now.
		mb, err := s.account()
		if err != nil {
			return s.fail("append", err)
		}
		tx.mb = &mb
	}
	if !tx.mb.Fits(tx.total + size) {
		return s.fail("append", mailstore.ErrOverQuota)
	}
	body, release, err := s.readLiteral(r, size)
	tx.releases = append(tx.releases, release)
	if err != nil {
		return err
	}
	if body, err = withoutNUL(body); err != nil {
		return err
	}
	size = int64(len(body))
	t := options.Time
	if t.IsZero() {
		t = s.srv.now()
	}
	tx.msgs = append(tx.msgs, mailstore.AppendMessage{Body: body, Flags: storeFlags(options.Flags), ReceivedAt: t})
	tx.total += size
	return nil
}

// Commit implements imapserver.AppendTx.
func (tx *appendTx) Commit() (uint32, []imap.UID, error) {
	defer tx.Abort()
	s := tx.s
	ms, err := s.st.AppendMany(s.ctx, s.user.ID, tx.f.ID, tx.msgs)
	if err != nil {
		return 0, nil, s.tryCreate("append", err)
	}
	uids := make([]imap.UID, len(ms))
	raw := make([]uint32, len(ms))
	for i, m := range ms {
		uids[i], raw[i] = imap.UID(m.UID), m.UID
	}
	s.srv.recent.added(tx.f.ID, raw...)
	return tx.f.UIDValidity, uids, nil
}

// Abort implements imapserver.AppendTx: the messages read are let go.
func (tx *appendTx) Abort() {
	for _, release := range tx.releases {
		release()
	}
	tx.releases, tx.msgs = nil, nil
}
