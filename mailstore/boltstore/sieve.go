package boltstore

// SieveScripts of the bbolt store.
//
// Buckets, made lazily as autoreply.go's are (no schema number; a
// file without them reads as empty, and older binaries ignore them):
//
//	sieve_scripts   mailbox id (8) | name -> sieveRecord (JSON)
//	sieve_active    mailbox id (8) -> name of the active script
//	sieve_version   mailbox id (8) -> the active script's stamp (8),
//	                from the bucket's sequence (SieveScript.Version)
//
// Invariant, kept by every writer in its transaction: sieve_active names
// a script that exists in sieve_scripts.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bSieveScripts = []byte("sieve_scripts")
	bSieveActive  = []byte("sieve_active")
	bSieveVersion = []byte("sieve_version")
)

var _ mailstore.SieveScripts = (*Store)(nil)

// sieveRecord is a script as stored; its mailbox and name are its key,
// and whether it is active is sieve_active's.
type sieveRecord struct {
	Script    string    `json:"script"`
	UpdatedAt time.Time `json:"updated_at"`
}

func sieveKey(mailboxID int64, name string) []byte { return append(id8(mailboxID), name...) }

// sieveActiveName is the mailbox's active script's name, or "".
func sieveActiveName(tx *bolt.Tx, mailboxID int64) string {
	if b := tx.Bucket(bSieveActive); b != nil {
		return string(b.Get(id8(mailboxID)))
	}
	return ""
}

// sieveVersion is the mailbox's active script's stamp, 0 for none (a
// script activated before stamps).
func sieveVersion(tx *bolt.Tx, mailboxID int64) int64 {
	if b := tx.Bucket(bSieveVersion); b != nil {
		if v := b.Get(id8(mailboxID)); len(v) == 8 {
			return int64(binary.BigEndian.Uint64(v))
		}
	}
	return 0
}

// sieveScript reads one script, with whether it is active.
func sieveScript(tx *bolt.Tx, mailboxID int64, name string) (mailstore.SieveScript, bool) {
	b := tx.Bucket(bSieveScripts)
	if b == nil {
		return mailstore.SieveScript{}, false
	}
	var r sieveRecord
	if !getJSON(b, sieveKey(mailboxID, name), &r) {
		return mailstore.SieveScript{}, false
	}
	return mailstore.SieveScript{MailboxID: mailboxID, Name: name, Script: r.Script, UpdatedAt: r.UpdatedAt,
		Active: sieveActiveName(tx, mailboxID) == name}, true
}

// SieveScripts implements SieveScripts.
func (s *Store) SieveScripts(ctx context.Context, mailboxID int64) ([]mailstore.SieveScript, error) {
	out := []mailstore.SieveScript{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSieveScripts)
		if b == nil {
			return nil
		}
		active := sieveActiveName(tx, mailboxID)
		prefix := id8(mailboxID)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var r sieveRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("script %q: %w", k[8:], err)
			}
			name := string(k[8:])
			out = append(out, mailstore.SieveScript{MailboxID: mailboxID, Name: name, Script: r.Script, UpdatedAt: r.UpdatedAt, Active: name == active})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sieve scripts of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

// SieveScript implements SieveScripts.
func (s *Store) SieveScript(ctx context.Context, mailboxID int64, name string) (mailstore.SieveScript, error) {
	var sc mailstore.SieveScript
	found := false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		sc, found = sieveScript(tx, mailboxID, name)
		return nil
	})
	if err == nil && !found {
		err = mailstore.ErrNotFound
	}
	if err != nil {
		return mailstore.SieveScript{}, fmt.Errorf("sieve script %q of mailbox %d: %w", name, mailboxID, err)
	}
	return sc, nil
}

// ActiveSieveScript implements SieveScripts.
func (s *Store) ActiveSieveScript(ctx context.Context, mailboxID int64) (mailstore.SieveScript, error) {
	var sc mailstore.SieveScript
	found := false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if name := sieveActiveName(tx, mailboxID); name != "" {
			sc, found = sieveScript(tx, mailboxID, name)
			sc.Version = sieveVersion(tx, mailboxID)
		}
		return nil
	})
	if err == nil && !found {
		err = mailstore.ErrNotFound
	}
	if err != nil {
		return mailstore.SieveScript{}, fmt.Errorf("active sieve script of mailbox %d: %w", mailboxID, err)
	}
	return sc, nil
}

// PutSieveScript implements SieveScripts.
func (s *Store) PutSieveScript(ctx context.Context, sc mailstore.SieveScript) error {
	if err := mailstore.CheckSieveScript(sc); err != nil {
		return fmt.Errorf("put sieve script of mailbox %d: %w", sc.MailboxID, err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(sc.MailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		b, err := tx.CreateBucketIfNotExists(bSieveScripts)
		if err != nil {
			return err
		}
		key := sieveKey(sc.MailboxID, sc.Name)
		if b.Get(key) == nil && sieveCount(b, sc.MailboxID) >= mailstore.MaxSieveScripts {
			return fmt.Errorf("%d scripts already: %w", mailstore.MaxSieveScripts, mailstore.ErrSieveLimit)
		}
		if err := putJSON(b, key, sieveRecord{Script: sc.Script, UpdatedAt: mailstore.UTC(sc.UpdatedAt)}); err != nil {
			return err
		}
		if sc.Active || sieveActiveName(tx, sc.MailboxID) == sc.Name {
			// Activated, or the active script's text replaced: a new
			// stamp either way.
			return setSieveActive(tx, sc.MailboxID, sc.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put sieve script %q of mailbox %d: %w", sc.Name, sc.MailboxID, err)
	}
	return nil
}

// sieveCount is the number of the mailbox's scripts: at most
// MaxSieveScripts keys to pass over.
func sieveCount(b *bolt.Bucket, mailboxID int64) int {
	n := 0
	prefix := id8(mailboxID)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// setSieveActive makes name the mailbox's active script ("" for none),
// with a new stamp.
func setSieveActive(tx *bolt.Tx, mailboxID int64, name string) error {
	bs, err := buckets(tx, bSieveActive, bSieveVersion)
	if err != nil {
		return err
	}
	if name == "" {
		if err := bs[1].Delete(id8(mailboxID)); err != nil {
			return err
		}
		return bs[0].Delete(id8(mailboxID))
	}
	v, err := bs[1].NextSequence()
	if err != nil {
		return err
	}
	if err := bs[1].Put(id8(mailboxID), u64(v)); err != nil {
		return err
	}
	return bs[0].Put(id8(mailboxID), []byte(name))
}

// DeleteSieveScript implements SieveScripts.
func (s *Store) DeleteSieveScript(ctx context.Context, mailboxID int64, name string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSieveScripts)
		key := sieveKey(mailboxID, name)
		if b == nil || b.Get(key) == nil {
			return mailstore.ErrNotFound
		}
		if sieveActiveName(tx, mailboxID) == name {
			return mailstore.ErrSieveActive
		}
		return b.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("delete sieve script %q of mailbox %d: %w", name, mailboxID, err)
	}
	return nil
}

// RenameSieveScript implements SieveScripts.
func (s *Store) RenameSieveScript(ctx context.Context, mailboxID int64, oldName, newName string) error {
	if !mailstore.ValidSieveName(newName) {
		return fmt.Errorf("rename sieve script %q of mailbox %d to %q: %w", oldName, mailboxID, newName, mailstore.ErrInvalidArgument)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bSieveScripts)
		from := sieveKey(mailboxID, oldName)
		v := []byte(nil)
		if b != nil {
			v = b.Get(from)
		}
		if v == nil {
			return mailstore.ErrNotFound
		}
		if oldName == newName {
			return nil
		}
		to := sieveKey(mailboxID, newName)
		if b.Get(to) != nil {
			return mailstore.ErrSieveExists
		}
		if err := b.Put(to, bytes.Clone(v)); err != nil {
			return err
		}
		if err := b.Delete(from); err != nil {
			return err
		}
		if sieveActiveName(tx, mailboxID) == oldName {
			return setSieveActive(tx, mailboxID, newName)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rename sieve script %q of mailbox %d to %q: %w", oldName, mailboxID, newName, err)
	}
	return nil
}

// SetActiveSieveScript implements SieveScripts.
func (s *Store) SetActiveSieveScript(ctx context.Context, mailboxID int64, name string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if name != "" {
			if _, ok := sieveScript(tx, mailboxID, name); !ok {
				return mailstore.ErrNotFound
			}
		}
		return setSieveActive(tx, mailboxID, name)
	})
	if err != nil {
		return fmt.Errorf("activate sieve script %q of mailbox %d: %w", name, mailboxID, err)
	}
	return nil
}

// deleteSieveTx removes a mailbox's scripts (when the mailbox is
// deleted).
func deleteSieveTx(tx *bolt.Tx, mailboxID int64) error {
	for _, name := range [][]byte{bSieveActive, bSieveVersion} {
		if b := tx.Bucket(name); b != nil {
			if err := b.Delete(id8(mailboxID)); err != nil {
				return err
			}
		}
	}
	return deletePrefix(tx.Bucket(bSieveScripts), id8(mailboxID))
}
