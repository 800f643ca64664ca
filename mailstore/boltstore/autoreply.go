package boltstore

// AutoReplies of the bbolt store.
//
// Buckets, made lazily as certs.go's are (no schema number; a file
// without them reads as empty, and older binaries ignore them):
//
//	autoreplies       mailbox id (8) -> AutoReply (JSON)
//	autoreply_sent    mailbox id (8) | sender -> unix seconds (8)

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bAutoReplies   = []byte("autoreplies")
	bAutoReplySent = []byte("autoreply_sent")
)

var _ mailstore.AutoReplies = (*Store)(nil)

// AutoReply implements AutoReplies.
func (s *Store) AutoReply(ctx context.Context, mailboxID int64) (mailstore.AutoReply, error) {
	var a mailstore.AutoReply
	found := false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bAutoReplies); b != nil {
			found = getJSON(b, id8(mailboxID), &a)
		}
		return nil
	})
	if err != nil {
		return mailstore.AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, err)
	}
	if !found {
		return mailstore.AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, mailstore.ErrNotFound)
	}
	return a, nil
}

// SetAutoReply implements AutoReplies.
func (s *Store) SetAutoReply(ctx context.Context, a mailstore.AutoReply) error {
	if !a.Start.IsZero() && !a.End.IsZero() && !a.End.After(a.Start) {
		return fmt.Errorf("set auto-reply of mailbox %d: end not after start: %w", a.MailboxID, mailstore.ErrInvalidArgument)
	}
	if !a.Start.IsZero() {
		a.Start = mailstore.UTC(a.Start)
	}
	if !a.End.IsZero() {
		a.End = mailstore.UTC(a.End)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(a.MailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		b, err := tx.CreateBucketIfNotExists(bAutoReplies)
		if err != nil {
			return err
		}
		return putJSON(b, id8(a.MailboxID), a)
	})
	if err != nil {
		return fmt.Errorf("set auto-reply of mailbox %d: %w", a.MailboxID, err)
	}
	return nil
}

// DeleteAutoReply implements AutoReplies.
func (s *Store) DeleteAutoReply(ctx context.Context, mailboxID int64) error {
	if err := s.update(ctx, func(tx *bolt.Tx) error { return deleteAutoReplyTx(tx, mailboxID) }); err != nil {
		return fmt.Errorf("delete auto-reply of mailbox %d: %w", mailboxID, err)
	}
	return nil
}

// deleteAutoReplyTx removes a mailbox's auto-reply and memory of senders
// (also when the mailbox is deleted).
func deleteAutoReplyTx(tx *bolt.Tx, mailboxID int64) error {
	if b := tx.Bucket(bAutoReplies); b != nil {
		if err := b.Delete(id8(mailboxID)); err != nil {
			return err
		}
	}
	return deletePrefix(tx.Bucket(bAutoReplySent), id8(mailboxID))
}

// deletePrefix deletes the keys of b (nil: none) that start with prefix:
// a mailbox's rows in the buckets keyed by mailbox id first.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	if b == nil {
		return nil
	}
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// TakeAutoReply implements AutoReplies.
func (s *Store) TakeAutoReply(ctx context.Context, mailboxID int64, sender string, now time.Time, interval time.Duration) (bool, error) {
	if sender == "" {
		return false, fmt.Errorf("take auto-reply of mailbox %d: empty sender: %w", mailboxID, mailstore.ErrInvalidArgument)
	}
	key := append(id8(mailboxID), sender...)
	now = mailstore.UTC(now)
	var ok bool
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bAutoReplySent)
		if err != nil {
			return err
		}
		if v := b.Get(key); len(v) == 8 {
			last := time.Unix(int64(binary.BigEndian.Uint64(v)), 0)
			if now.Before(last.Add(interval)) {
				ok = false
				return nil
			}
		}
		ok = true
		return b.Put(key, u64(uint64(now.Unix())))
	})
	if err != nil {
		return false, fmt.Errorf("take auto-reply of mailbox %d to %s: %w", mailboxID, sender, err)
	}
	return ok, nil
}
