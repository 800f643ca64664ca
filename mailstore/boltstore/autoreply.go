package mailstore

// AutoReplies of the bbolt store.
//
// Buckets, made lazily as bolt_certs.go's are (no schema number; a file
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

	bolt "go.etcd.io/bbolt"
)

var (
	bAutoReplies   = []byte("autoreplies")
	bAutoReplySent = []byte("autoreply_sent")
)

var _ AutoReplies = (*Bolt)(nil)

// AutoReply implements AutoReplies.
func (s *Bolt) AutoReply(ctx context.Context, mailboxID int64) (AutoReply, error) {
	var a AutoReply
	found := false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bAutoReplies); b != nil {
			found = getJSON(b, id8(mailboxID), &a)
		}
		return nil
	})
	if err != nil {
		return AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, err)
	}
	if !found {
		return AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, ErrNotFound)
	}
	return a, nil
}

// SetAutoReply implements AutoReplies.
func (s *Bolt) SetAutoReply(ctx context.Context, a AutoReply) error {
	if !a.Start.IsZero() && !a.End.IsZero() && !a.End.After(a.Start) {
		return fmt.Errorf("set auto-reply of mailbox %d: end not after start: %w", a.MailboxID, ErrInvalidArgument)
	}
	if !a.Start.IsZero() {
		a.Start = UTC(a.Start)
	}
	if !a.End.IsZero() {
		a.End = UTC(a.End)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(a.MailboxID)) == nil {
			return ErrMailboxNotFound
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
func (s *Bolt) DeleteAutoReply(ctx context.Context, mailboxID int64) error {
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
func (s *Bolt) TakeAutoReply(ctx context.Context, mailboxID int64, sender string, now time.Time, interval time.Duration) (bool, error) {
	if sender == "" {
		return false, fmt.Errorf("take auto-reply of mailbox %d: empty sender: %w", mailboxID, ErrInvalidArgument)
	}
	key := append(id8(mailboxID), sender...)
	now = UTC(now)
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
