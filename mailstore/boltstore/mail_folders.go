package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// Folders implements Mail.
func (s *Store) Folders(ctx context.Context, mailboxID int64) ([]mailstore.Folder, error) {
	out := []mailstore.Folder{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		folders := tx.Bucket(bFolders)
		prefix := id8(mailboxID)
		c := tx.Bucket(bMailboxFolders).Cursor()
		for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			var f mailstore.Folder
			if getJSON(folders, v, &f) {
				out = append(out, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("folders of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

// Folder implements Mail.
func (s *Store) Folder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	var f mailstore.Folder
	err := s.view(ctx, func(tx *bolt.Tx) error {
		p, err := newMailTx(tx).folderByName(mailboxID, name)
		if err != nil {
			return err
		}
		f = *p
		return nil
	})
	if err != nil {
		return mailstore.Folder{}, fmt.Errorf("folder %q: %w", name, err)
	}
	return f, nil
}

// CreateFolder implements Mail.
func (s *Store) CreateFolder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	name = mailstore.CanonFolder(name)
	if err := mailstore.CheckFolderName(name); err != nil {
		return mailstore.Folder{}, fmt.Errorf("create folder: %w", err)
	}
	var f mailstore.Folder
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		f, err = createFolderTx(tx, mailboxID, name, "")
		return err
	})
	if err != nil {
		return mailstore.Folder{}, fmt.Errorf("create folder %q: %w", name, err)
	}
	s.notify(mailboxID)
	return f, nil
}

// DeleteFolder implements Mail. Children ("name/...") stay.
func (s *Store) DeleteFolder(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	if name == "INBOX" {
		return fmt.Errorf("delete folder %q: %w", name, mailstore.ErrFolderProtected)
	}
	err := s.deleting(ctx, func(tx *bolt.Tx) error {
		t := s.mailTx(tx)
		f, err := t.folderByName(mailboxID, name)
		if err != nil {
			return err
		}
		if err := t.dropKeywords(f.ID); err != nil {
			return err
		}
		var gone []mailstore.Message
		if err := t.eachMessage(f.ID, func(m mailstore.Message) error {
			gone = append(gone, m)
			return nil
		}); err != nil {
			return err
		}
		for _, m := range gone {
			if err := t.remove(f, m, true); err != nil {
				return err
			}
		}
		// Its log goes with it (the removals above logged nothing that
		// anyone could read: the folder id is never used again).
		delete(t.fcache, f.ID)
		if err := t.deleteLog(f.ID); err != nil {
			return err
		}
		if err := t.folders.Delete(id8(f.ID)); err != nil {
			return err
		}
		if err := t.names.Delete(folderNameKey(mailboxID, name)); err != nil {
			return err
		}
		if n := folderCount(tx, mailboxID); n > 0 {
			if err := tx.Bucket(bFolderCounts).Put(id8(mailboxID), u64(n-1)); err != nil {
				return err
			}
		}
		return t.flush()
	})
	if err != nil {
		return fmt.Errorf("delete folder %q: %w", name, err)
	}
	s.notify(mailboxID)
	return nil
}

// RenameFolder implements Mail. The folders keep their ids, UIDs and
// UIDValidity (RFC 3501 6.3.5); the children move with their parent.
func (s *Store) RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error {
	oldName, newName = mailstore.CanonFolder(oldName), mailstore.CanonFolder(newName)
	if oldName == "INBOX" {
		return fmt.Errorf("rename folder %q: %w", oldName, mailstore.ErrFolderProtected)
	}
	if err := mailstore.CheckFolderName(newName); err != nil {
		return fmt.Errorf("rename folder %q: %w", oldName, err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		t := s.mailTx(tx)
		if _, err := t.folderByName(mailboxID, oldName); err != nil {
			return err
		}
		if oldName == newName {
			return nil
		}
		type move struct {
			id       int64
			from, to string
		}
		var moves []move
		prefix := folderNameKey(mailboxID, "")
		c := t.names.Cursor()
		for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
			name := string(k[8:])
			if name != oldName && !strings.HasPrefix(name, oldName+"/") {
				continue
			}
			if len(v) == 8 {
				moves = append(moves, move{int64(binary.BigEndian.Uint64(v)), name, newName + name[len(oldName):]})
			}
		}
		for _, m := range moves {
			if err := t.names.Delete(folderNameKey(mailboxID, m.from)); err != nil {
				return err
			}
		}
		for _, m := range moves {
			key := folderNameKey(mailboxID, m.to)
			if t.names.Get(key) != nil {
				return mailstore.ErrFolderExists
			}
			if err := mailstore.CheckFolderName(m.to); err != nil {
				return err
			}
			f, err := t.folder(mailboxID, m.id)
			if err != nil {
				return err
			}
			f.Name = m.to
			if err := t.names.Put(key, id8(m.id)); err != nil {
				return err
			}
		}
		return t.flush()
	})
	if err != nil {
		return fmt.Errorf("rename folder %q to %q: %w", oldName, newName, err)
	}
	s.notify(mailboxID)
	return nil
}
