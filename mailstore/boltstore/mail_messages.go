package boltstore

import (
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// Messages implements Mail.
func (s *Store) Messages(ctx context.Context, mailboxID, folderID int64) ([]mailstore.Message, error) {
	out := []mailstore.Message{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		t := newMailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		out = make([]mailstore.Message, 0, max(f.Messages, 0))
		return t.eachMessage(folderID, func(m mailstore.Message) error {
			out = append(out, m)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("messages of folder %d: %w", folderID, err)
	}
	return out, nil
}

// Body implements Mail. The bytes are a copy: bbolt's memory is valid only
// within the transaction.
func (s *Store) Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error) {
	var body []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		t := newMailTx(tx)
		if _, err := t.folder(mailboxID, folderID); err != nil {
			return err
		}
		m, ok, err := t.message(folderID, uid)
		if err != nil {
			return err
		}
		if !ok {
			return mailstore.ErrMessageNotFound
		}
		raw := t.blobs.Get(id8(m.BlobID))
		if raw == nil {
			return fmt.Errorf("blob %d missing", m.BlobID)
		}
		body = append(make([]byte, 0, len(raw)), raw...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("body of message %d/%d: %w", folderID, uid, err)
	}
	return body, nil
}

// SetFlags implements Mail. UIDs no longer in the folder are skipped; the
// messages whose flags did change come back, in the order of uids.
func (s *Store) SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string) ([]mailstore.Message, error) {
	out, _, err := s.setFlags(ctx, mailboxID, folderID, uids, op, flags, nil)
	return out, err
}

// SetFlagsIf implements Mail.
func (s *Store) SetFlagsIf(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string, unchangedSince uint64) ([]mailstore.Message, []uint32, error) {
	return s.setFlags(ctx, mailboxID, folderID, uids, op, flags, &unchangedSince)
}

// setFlags is SetFlags, and with unchangedSince SetFlagsIf.
func (s *Store) setFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string, unchangedSince *uint64) ([]mailstore.Message, []uint32, error) {
	flags = mailstore.NormFlags(flags)
	if op != mailstore.FlagsRemove {
		if err := mailstore.CheckKeywordLength(flags); err != nil {
			return nil, nil, fmt.Errorf("set flags in folder %d: %w", folderID, err)
		}
	}
	// Setting \Deleted is the first half of deleting (then EXPUNGE): it
	// may use the space reserve (reserve.go).
	write := s.update
	if op != mailstore.FlagsRemove && mailstore.HasFlag(flags, mailstore.FlagDeleted) {
		write = s.deleting
	}
	var out []mailstore.Message
	var modified []uint32
	err := write(ctx, func(tx *bolt.Tx) error {
		out, modified = []mailstore.Message{}, nil
		t := s.mailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		for _, uid := range uids {
			m, ok, err := t.message(folderID, uid)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if unchangedSince != nil && m.ModSeq > *unchangedSince {
				modified = append(modified, uid)
				continue
			}
			next, changed := mailstore.ApplyFlags(m.Flags, op, flags)
			if !changed {
				continue
			}
			if err := t.reflag(folderID, m.Flags, next); err != nil {
				return err
			}
			f.Unseen -= unseen(m)
			m.Flags = next
			m.ModSeq = f.HighestModSeq + 1 // what logChange gives the change
			f.Unseen += unseen(m)
			if err := t.messages.Put(msgKey(folderID, uid), encodeMessage(m)); err != nil {
				return err
			}
			t.logChange(f, mailstore.ChangeFlags, m)
			out = append(out, m)
		}
		if len(out) == 0 {
			return nil
		}
		return t.flush()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("set flags in folder %d: %w", folderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, modified, nil
}

// sources loads the messages named by uids, in that order, each once;
// ErrMessageNotFound if one is not in the folder (COPY and MOVE succeed
// whole or not at all, RFC 9051 6.4.7).
func (t *mailTx) sources(folderID int64, uids []uint32) ([]mailstore.Message, error) {
	out := make([]mailstore.Message, 0, len(uids))
	seen := make(map[uint32]bool, len(uids))
	for _, uid := range uids {
		if seen[uid] {
			continue
		}
		seen[uid] = true
		m, ok, err := t.message(folderID, uid)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("uid %d: %w", uid, mailstore.ErrMessageNotFound)
		}
		out = append(out, m)
	}
	return out, nil
}

// Copy implements Mail. Copies share the originals' bodies but count in
// full against the quota, as every message does.
func (s *Store) Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	var out []uint32
	err := s.update(ctx, func(tx *bolt.Tx) error {
		out = []uint32{}
		t := s.mailTx(tx)
		if _, err := t.folder(mailboxID, fromFolderID); err != nil {
			return err
		}
		to, err := t.folder(mailboxID, toFolderID)
		if err != nil {
			return err
		}
		msgs, err := t.sources(fromFolderID, uids)
		if err != nil {
			return err
		}
		var total int64
		for _, m := range msgs {
			total += m.Size
		}
		mb, err := t.mailbox(mailboxID)
		if err != nil {
			return err
		}
		if len(msgs) > 0 && overQuota(mb, total) {
			return mailstore.ErrOverQuota
		}
		for _, m := range msgs {
			n, err := t.add(to, m)
			if err != nil {
				return err
			}
			t.ref(m.BlobID, +1)
			out = append(out, n.UID)
		}
		return t.flush()
	})
	if err != nil {
		return nil, fmt.Errorf("copy from folder %d to %d: %w", fromFolderID, toFolderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}

// Move implements Mail: each message leaves its folder and enters the
// other with a new UID, keeping its body, flags and received time.
func (s *Store) Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	var out []uint32
	err := s.deleting(ctx, func(tx *bolt.Tx) error {
		out = []uint32{}
		t := s.mailTx(tx)
		from, err := t.folder(mailboxID, fromFolderID)
		if err != nil {
			return err
		}
		to, err := t.folder(mailboxID, toFolderID)
		if err != nil {
			return err
		}
		msgs, err := t.sources(fromFolderID, uids)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := t.remove(from, m, false); err != nil {
				return err
			}
			n, err := t.add(to, m)
			if err != nil {
				return err
			}
			out = append(out, n.UID)
		}
		return t.flush()
	})
	if err != nil {
		return nil, fmt.Errorf("move from folder %d to %d: %w", fromFolderID, toFolderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}

// Expunge implements Mail. Given UIDs are removed whatever their flags
// (the IMAP server picks the \Deleted ones for UID EXPUNGE); UIDs not in
// the folder are skipped.
func (s *Store) Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error) {
	var out []uint32
	err := s.deleting(ctx, func(tx *bolt.Tx) error {
		out = []uint32{}
		t := s.mailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		var gone []mailstore.Message
		if uids == nil {
			err = t.eachMessage(folderID, func(m mailstore.Message) error {
				if mailstore.HasFlag(m.Flags, mailstore.FlagDeleted) {
					gone = append(gone, m)
				}
				return nil
			})
			if err != nil {
				return err
			}
		} else {
			seen := make(map[uint32]bool, len(uids))
			for _, uid := range uids {
				if seen[uid] {
					continue
				}
				seen[uid] = true
				m, ok, err := t.message(folderID, uid)
				if err != nil {
					return err
				}
				if ok {
					gone = append(gone, m)
				}
			}
		}
		for _, m := range gone {
			if err := t.remove(f, m, true); err != nil {
				return err
			}
			out = append(out, m.UID)
		}
		if len(out) == 0 {
			return nil
		}
		return t.flush()
	})
	if err != nil {
		return nil, fmt.Errorf("expunge in folder %d: %w", folderID, err)
	}
	if len(out) > 0 {
		s.notify(mailboxID)
	}
	return out, nil
}
