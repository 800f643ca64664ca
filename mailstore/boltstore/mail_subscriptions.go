package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// bSubscriptions holds each account's subscribed names, keyed
// mailboxID|name like mailbox_folders, so that an account's are one
// cursor range and a name is found without a folder.
var bSubscriptions = []byte("subscriptions")

// Subscriptions implements Mail.
func (s *Store) Subscriptions(ctx context.Context, mailboxID int64) ([]string, error) {
	out := []string{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		prefix := id8(mailboxID)
		c := tx.Bucket(bSubscriptions).Cursor()
		for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, string(k[8:]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("subscriptions of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

// Subscribe implements Mail. The account's subscriptions are counted by
// a cursor walk: at most MaxSubscriptions keys, in one range.
func (s *Store) Subscribe(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	if err := mailstore.CheckFolderName(name); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		b := tx.Bucket(bSubscriptions)
		key := folderNameKey(mailboxID, name)
		if b.Get(key) != nil {
			return nil
		}
		n := 0
		prefix := id8(mailboxID)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		if n >= mailstore.MaxSubscriptions {
			return mailstore.ErrTooManySubscriptions
		}
		return b.Put(key, nil)
	})
	if err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	return nil
}

// Unsubscribe implements Mail.
func (s *Store) Unsubscribe(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		return tx.Bucket(bSubscriptions).Delete(folderNameKey(mailboxID, name))
	})
	if err != nil {
		return fmt.Errorf("unsubscribe %q: %w", name, err)
	}
	return nil
}

// deleteSubscriptionsTx removes all of an account's subscriptions.
func deleteSubscriptionsTx(tx *bolt.Tx, mailboxID int64) error {
	prefix := id8(mailboxID)
	c := tx.Bucket(bSubscriptions).Cursor()
	for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// migrateSubscriptions (schema 6 to 7) creates the subscriptions bucket
// and fills it from the folders' records, which carried a "subscribed"
// mark before: a folder subscribed before the upgrade stays subscribed.
// The mark is left in the records (a later write of the folder drops it);
// nothing reads it any more.
func migrateSubscriptions(tx *bolt.Tx) error {
	subs, err := tx.CreateBucketIfNotExists(bSubscriptions)
	if err != nil {
		return err
	}
	return tx.Bucket(bFolders).ForEach(func(k, raw []byte) error {
		var f struct {
			MailboxID  int64  `json:"mailbox_id"`
			Name       string `json:"name"`
			Subscribed bool   `json:"subscribed"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("folder %x: %w", k, err)
		}
		if !f.Subscribed {
			return nil
		}
		return subs.Put(folderNameKey(f.MailboxID, f.Name), nil)
	})
}
