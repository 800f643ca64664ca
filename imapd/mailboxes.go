package imapd

import (
	"errors"
	"strings"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// Folder names use "/" as the hierarchy delimiter; INBOX is matched in any
// case (RFC 9051 section 5.1).

// Create answers CREATE. A trailing delimiter is dropped, and missing
// parents are created (RFC 9051 section 6.3.4). Nothing is subscribed:
// subscriptions are the client's to make (mailstore.Mail.Subscribe).
//
// A refused CREATE changes nothing: everything that can refuse it (the
// whole name, and so every parent it implies; the name taken; the folders
// the account may have) is decided before the first folder is made. Two
// sessions of one account creating at once can still race past the count
// check between the look and the creation; the store's own check then
// refuses the folder that would exceed MaxFolders, after the parents
// made before it.
func (s *session) Create(name string, options *imap.CreateOptions) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	name = strings.TrimSuffix(name, string(delim))
	if err := validName(name); err != nil {
		return err
	}
	if strings.EqualFold(name, "INBOX") {
		return s.fail("create", mailstore.ErrFolderExists)
	}
	folders, err := s.st.Folders(s.ctx, s.user.ID)
	if err != nil {
		return s.fail("create", err)
	}
	have := make(map[string]bool, len(folders))
	for _, f := range folders {
		have[f.Name] = true
	}
	if have[mailstore.CanonFolder(name)] {
		return s.fail("create", mailstore.ErrFolderExists)
	}
	var missing []string
	parts := strings.Split(name, string(delim))
	for i := 1; i < len(parts); i++ {
		if parent := mailstore.CanonFolder(strings.Join(parts[:i], string(delim))); !have[parent] {
			missing = append(missing, parent)
		}
	}
	if len(folders)+len(missing)+1 > mailstore.MaxFolders {
		return s.fail("create", mailstore.ErrTooManyFolders)
	}
	for _, parent := range missing {
		if _, err := s.st.CreateFolder(s.ctx, s.user.ID, parent); err != nil && !errors.Is(err, mailstore.ErrFolderExists) {
			return s.fail("create", err)
		}
	}
	_, err = s.st.CreateFolder(s.ctx, s.user.ID, name)
	return s.fail("create", err)
}

// validName refuses, as NO [CANNOT], a name the store would refuse
// (mailstore.CheckFolderName): checked whole, so that every parent a
// CREATE implies is checked with it.
func validName(name string) error {
	if mailstore.CheckFolderName(name) != nil {
		return no(imap.ResponseCodeCannot, "Invalid mailbox name")
	}
	return nil
}

// Delete answers DELETE: the folder and its messages go; INBOX cannot.
func (s *session) Delete(name string) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	return s.fail("delete", s.st.DeleteFolder(s.ctx, s.user.ID, name))
}

// Rename answers RENAME (children move along). Renaming INBOX is refused.
func (s *session) Rename(name, newName string, options *imap.RenameOptions) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	newName = strings.TrimSuffix(newName, string(delim))
	if err := validName(newName); err != nil {
		return err
	}
	if strings.EqualFold(newName, "INBOX") {
		return s.fail("rename", mailstore.ErrFolderExists)
	}
	return s.fail("rename", s.st.RenameFolder(s.ctx, s.user.ID, name, newName))
}

// Subscribe answers SUBSCRIBE. The name need not be a folder's (RFC 9051
// section 6.3.7 lets a server check, this one does not: a client may
// subscribe before it creates, and a subscription outlives its folder).
// A trailing delimiter is dropped, as by CREATE.
func (s *session) Subscribe(name string) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	name = strings.TrimSuffix(name, string(delim))
	if err := validName(name); err != nil {
		return err
	}
	return s.fail("subscribe", s.st.Subscribe(s.ctx, s.user.ID, name))
}

// Unsubscribe answers UNSUBSCRIBE: OK also for a name not subscribed
// (RFC 9051 section 6.3.8).
func (s *session) Unsubscribe(name string) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	name = strings.TrimSuffix(name, string(delim))
	return s.fail("unsubscribe", s.st.Unsubscribe(s.ctx, s.user.ID, name))
}

// Status answers STATUS (with SIZE, RFC 8438, and DELETED).
func (s *session) Status(name string, options *imap.StatusOptions) (*imap.StatusData, error) {
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	f, err := s.st.Folder(s.ctx, s.user.ID, name)
	if err != nil {
		return nil, s.fail("status", err)
	}
	return s.status(f, options)
}

func (s *session) status(f mailstore.Folder, o *imap.StatusOptions) (*imap.StatusData, error) {
	d := &imap.StatusData{Mailbox: f.Name, UIDNext: imap.UID(f.UIDNext), UIDValidity: f.UIDValidity, HighestModSeq: imapModSeq(f.HighestModSeq), MailboxID: mailboxObjectID(f.ID)}
	num, unseen, zero := uint32(f.Messages), uint32(f.Unseen), uint32(0)
	size := f.Size
	d.NumMessages, d.NumUnseen, d.NumRecent, d.Size = &num, &unseen, &zero, &size
	limit := uint32(s.srv.cfg.MaxMessageBytes)
	d.AppendLimit = &limit
	if o.NumRecent && s.rev1() {
		msgs, err := s.st.Messages(s.ctx, s.user.ID, f.ID)
		if err != nil {
			return nil, s.fail("status", err)
		}
		n := s.srv.recent.unclaimed(f, msgs)
		d.NumRecent = &n
	}
	if o.NumDeleted || o.DeletedStorage {
		msgs, err := s.st.Messages(s.ctx, s.user.ID, f.ID)
		if err != nil {
			return nil, s.fail("status", err)
		}
		var n uint32
		var bytes int64
		for _, m := range msgs {
			if hasFlag(m.Flags, imap.FlagDeleted) {
				n++
				bytes += m.Size
			}
		}
		d.NumDeleted, d.DeletedStorage = &n, &bytes
	}
	return d, nil
}
