package imapd

import (
	"errors"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// Folder names use "/" as the hierarchy delimiter; INBOX is matched in any
// case (RFC 9051 section 5.1).

// Create answers CREATE. A trailing delimiter is dropped, and missing
// parents are created (RFC 9051 section 6.3.4).
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
	parts := strings.Split(name, string(delim))
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], string(delim))
		if _, err := s.st.CreateFolder(s.ctx, s.user.ID, parent); err != nil && !errors.Is(err, mailstore.ErrFolderExists) {
			return s.fail("create", err)
		}
	}
	_, err := s.st.CreateFolder(s.ctx, s.user.ID, name)
	return s.fail("create", err)
}

func validName(name string) error {
	if name == "" || strings.Contains(name, "//") || strings.HasPrefix(name, "/") ||
		strings.ContainsAny(name, "*%\r\n\x00") || len(name) > 512 {
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

// Subscribe answers SUBSCRIBE.
func (s *session) Subscribe(name string) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	return s.fail("subscribe", s.st.SetSubscribed(s.ctx, s.user.ID, name, true))
}

// Unsubscribe answers UNSUBSCRIBE.
func (s *session) Unsubscribe(name string) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	return s.fail("unsubscribe", s.st.SetSubscribed(s.ctx, s.user.ID, name, false))
}

// List answers LIST (with LIST-EXTENDED's SUBSCRIBED and SPECIAL-USE
// selection and SUBSCRIBED, CHILDREN and STATUS return options, RFC 5258,
// 6154, 5819) and LSUB.
func (s *session) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	if len(patterns) == 0 {
		// LIST "" "": the hierarchy delimiter and root (RFC 9051 section
		// 6.3.9); imapserver drops empty patterns.
		return w.WriteList(&imap.ListData{Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}, Delim: delim})
	}
	folders, err := s.st.Folders(s.ctx, s.user.ID)
	if err != nil {
		return s.fail("list", err)
	}
	for _, f := range folders {
		if !matchAny(f.Name, ref, patterns) {
			continue
		}
		if options.SelectSubscribed && !f.Subscribed {
			continue
		}
		if options.SelectSpecialUse && f.SpecialUse == "" {
			continue
		}
		data := &imap.ListData{Mailbox: f.Name, Delim: delim}
		if hasChildren(folders, f.Name) {
			data.Attrs = append(data.Attrs, imap.MailboxAttrHasChildren)
		} else {
			data.Attrs = append(data.Attrs, imap.MailboxAttrHasNoChildren)
		}
		if f.Subscribed && (options.SelectSubscribed || options.ReturnSubscribed) {
			data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
		}
		if f.SpecialUse != "" {
			data.Attrs = append(data.Attrs, imap.MailboxAttr(f.SpecialUse))
		}
		if options.ReturnStatus != nil {
			st, err := s.status(f, options.ReturnStatus)
			if err != nil {
				return err
			}
			data.Status = st
		}
		if err := w.WriteList(data); err != nil {
			return err
		}
	}
	return nil
}

func matchAny(name, ref string, patterns []string) bool {
	for _, p := range patterns {
		if imapserver.MatchList(name, delim, ref, p) {
			return true
		}
		// INBOX in any case.
		if name == "INBOX" && ref == "" && imapserver.MatchList(name, delim, ref, strings.ToUpper(p)) {
			return true
		}
	}
	return false
}

func hasChildren(folders []mailstore.Folder, name string) bool {
	prefix := name + string(delim)
	for _, f := range folders {
		if strings.HasPrefix(f.Name, prefix) {
			return true
		}
	}
	return false
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
	d := &imap.StatusData{Mailbox: f.Name, UIDNext: imap.UID(f.UIDNext), UIDValidity: f.UIDValidity}
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
