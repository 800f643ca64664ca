package boltstore

// The change log of the bbolt store (schema 6): every change to a folder's
// messages is a record in the same transaction as the change, so that an
// IMAP session told "something changed" reads what changed, not the whole
// folder (style.md, convention 18).
//
//	changes  folderID|modseq(8) -> kind(1) | uid(4) | message record
//	         (encodeMessage; none for ChangeExpunge)
//
// Folder.HighestModSeq is the ModSeq of the folder's latest record. The
// log of a folder holds the ModSeqs HighestModSeq-keep+1 .. HighestModSeq
// (or fewer, for a folder made before schema 6, whose log begins with its
// first change after the upgrade): flush prunes what falls out of that
// window in the transaction that writes the new records, so a write costs
// the records it adds and removes, never a walk of the log. DeleteFolder
// and DeleteMailbox delete the folder's whole log with the folder.

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var bChanges = []byte("changes")

func changeKey(folderID int64, modseq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(folderID))
	binary.BigEndian.PutUint64(k[8:], modseq)
	return k
}

func encodeChange(c mailstore.Change) []byte {
	b := make([]byte, 5, 32)
	b[0] = byte(c.Kind)
	binary.BigEndian.PutUint32(b[1:], c.Message.UID)
	if c.Kind != mailstore.ChangeExpunge {
		b = append(b, encodeMessage(c.Message)...)
	}
	return b
}

func decodeChange(k, v []byte) (mailstore.Change, error) {
	if len(k) != 16 || len(v) < 5 {
		return mailstore.Change{}, errBadRecord
	}
	folderID := int64(binary.BigEndian.Uint64(k))
	c := mailstore.Change{
		ModSeq: binary.BigEndian.Uint64(k[8:]),
		Kind:   mailstore.ChangeKind(v[0]),
	}
	uid := binary.BigEndian.Uint32(v[1:])
	switch c.Kind {
	case mailstore.ChangeExpunge:
		c.Message = mailstore.Message{FolderID: folderID, UID: uid}
	case mailstore.ChangeAdd, mailstore.ChangeFlags:
		m, err := decodeMessage(msgKey(folderID, uid), v[5:])
		if err != nil {
			return mailstore.Change{}, err
		}
		m.ModSeq = c.ModSeq // records logged before messages kept it have none
		c.Message = m
	default:
		return mailstore.Change{}, fmt.Errorf("change kind %d: %w", c.Kind, errBadRecord)
	}
	return c, nil
}

// logChange gives the change the folder's next ModSeq and keeps it for
// flush. m is the message after the change.
func (t *mailTx) logChange(f *mailstore.Folder, kind mailstore.ChangeKind, m mailstore.Message) {
	f.HighestModSeq++
	m.FolderID = f.ID
	if kind == mailstore.ChangeExpunge {
		m = mailstore.Message{FolderID: f.ID, UID: m.UID}
	}
	t.changes = append(t.changes, mailstore.Change{ModSeq: f.HighestModSeq, Kind: kind, Message: m})
}

// flushChanges writes the logged changes and prunes each folder's log to
// the last keep records.
func (t *mailTx) flushChanges() error {
	if len(t.changes) == 0 {
		return nil
	}
	b := t.tx.Bucket(bChanges)
	highest := map[int64]uint64{}
	for _, c := range t.changes {
		if err := b.Put(changeKey(c.Message.FolderID, c.ModSeq), encodeChange(c)); err != nil {
			return err
		}
		highest[c.Message.FolderID] = c.ModSeq
	}
	t.changes = nil
	for folderID, h := range highest {
		if h <= t.keep {
			continue
		}
		// Everything at or below h-keep goes: usually the one record the
		// new ones pushed out, so a seek and a delete per record written.
		prefix := id8(folderID)
		limit := h - t.keep
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix) && binary.BigEndian.Uint64(k[8:]) <= limit; k, _ = c.Seek(prefix) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteLog forgets a folder's log, pending records included: the folder
// is being deleted, and its id is never used again.
func (t *mailTx) deleteLog(folderID int64) error {
	kept := t.changes[:0]
	for _, c := range t.changes {
		if c.Message.FolderID != folderID {
			kept = append(kept, c)
		}
	}
	t.changes = kept
	prefix := id8(folderID)
	c := t.tx.Bucket(bChanges).Cursor()
	for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// Changes implements Mail. It reads the folder record and the log
// records after since: one seek and as many steps as there are changes.
// A since at or above the folder's HighestModSeq answers no changes (a
// folder made before schema 6 has HighestModSeq 0, so a session that
// loaded it then asks since 0 and hears of every change from the first).
func (s *Store) Changes(ctx context.Context, mailboxID, folderID int64, since uint64) (mailstore.Folder, []mailstore.Change, error) {
	var f mailstore.Folder
	var out []mailstore.Change
	err := s.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		if !getJSON(tx.Bucket(bFolders), id8(folderID), &f) || f.MailboxID != mailboxID {
			return mailstore.ErrFolderNotFound
		}
		if since >= f.HighestModSeq {
			return nil
		}
		out = make([]mailstore.Change, 0, min(f.HighestModSeq-since, mailstore.ChangeLogKeep))
		prefix := id8(folderID)
		c := tx.Bucket(bChanges).Cursor()
		k, v := c.Seek(changeKey(folderID, since+1))
		if k == nil || !hasPrefix(k, prefix) || binary.BigEndian.Uint64(k[8:]) != since+1 {
			return mailstore.ErrChangesGone
		}
		for ; k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			ch, err := decodeChange(k, v)
			if err != nil {
				return fmt.Errorf("change %x: %w", k, err)
			}
			out = append(out, ch)
		}
		return nil
	})
	if err != nil {
		return mailstore.Folder{}, nil, fmt.Errorf("changes of folder %d since %d: %w", folderID, since, err)
	}
	return f, out, nil
}

// notify tells the watchers of the accounts that they changed; a writer
// calls it after its commit, so that a watcher that wakes and reads sees
// the change. pgstore's notify does the same, and tells the other nodes.
func (s *Store) notify(mailboxIDs ...int64) { s.watch.Notify(mailboxIDs...) }

// Watch implements Mail.
func (s *Store) Watch(mailboxID int64) (<-chan struct{}, func()) {
	return s.watch.Watch(mailboxID)
}
