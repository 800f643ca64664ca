package mailstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Deliver implements Mail. It runs in a bbolt batch: concurrent deliveries
// share one commit and one fsync. bbolt may run the function twice (when
// another function of the batch fails), so the result is rebuilt inside.
func (s *Bolt) Deliver(ctx context.Context, d Delivery) (DeliveryResult, error) {
	if d.ReceivedAt.IsZero() {
		return DeliveryResult{}, fmt.Errorf("deliver: no received time: %w", ErrInvalidArgument)
	}
	ids := make([]int64, 0, len(d.MailboxIDs))
	for _, id := range d.MailboxIDs {
		if !containsID(ids, id) {
			ids = append(ids, id)
		}
	}
	size := int64(len(d.Body))
	received := utc(d.ReceivedAt)
	month := Month(received)
	var res DeliveryResult
	if len(ids) == 0 {
		return DeliveryResult{}, ctx.Err()
	}
	err := s.batch(ctx, func(tx *bolt.Tx) error {
		res = DeliveryResult{}
		t := newMailTx(tx)
		blobID, err := nextID(t.blobs)
		if err != nil {
			return err
		}
		var domainIDs []int64
		for _, id := range ids {
			mb, err := t.mailbox(id)
			if errors.Is(err, ErrMailboxNotFound) {
				res.Skipped = append(res.Skipped, id)
				continue
			}
			if err != nil {
				return err
			}
			inbox, err := t.folderByName(id, "INBOX")
			if err != nil {
				return fmt.Errorf("mailbox %d: INBOX: %w", id, err)
			}
			if _, err := t.add(inbox, Message{BlobID: blobID, Size: size, ReceivedAt: received}); err != nil {
				return err
			}
			res.Delivered = append(res.Delivered, id)
			if !containsID(domainIDs, mb.DomainID) {
				domainIDs = append(domainIDs, mb.DomainID)
			}
		}
		if len(res.Delivered) == 0 {
			return nil
		}
		if err := t.blobs.Put(id8(blobID), d.Body); err != nil {
			return err
		}
		t.rcache[blobID] = uint64(len(res.Delivered))
		for _, did := range domainIDs {
			tr := transferOf(tx, did, month)
			tr.InBytes += size
			if err := putJSON(t.transfer, transferKey(did, month), tr); err != nil {
				return err
			}
		}
		return t.flush()
	})
	if err != nil {
		return DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	s.watch.notify(res.Delivered...)
	return res, nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// overQuota reports whether adding size bytes would take the account past
// its quota, or it is there already (a zero quota admits nothing, as in
// policy.AcceptAtRCPT).
func overQuota(mb *Mailbox, size int64) bool {
	quota := mb.QuotaBytes()
	return mb.UsedBytes >= quota || size > quota-mb.UsedBytes
}

// Append implements Mail.
func (s *Bolt) Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (Message, error) {
	if receivedAt.IsZero() {
		return Message{}, fmt.Errorf("append: no received time: %w", ErrInvalidArgument)
	}
	var out Message
	err := s.update(ctx, func(tx *bolt.Tx) error {
		t := newMailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		mb, err := t.mailbox(mailboxID)
		if err != nil {
			return err
		}
		if overQuota(mb, int64(len(body))) {
			return ErrOverQuota
		}
		blobID, err := nextID(t.blobs)
		if err != nil {
			return err
		}
		if err := t.blobs.Put(id8(blobID), body); err != nil {
			return err
		}
		t.rcache[blobID] = 1
		out, err = t.add(f, Message{
			BlobID: blobID, Size: int64(len(body)), ReceivedAt: utc(receivedAt), Flags: normFlags(flags),
		})
		if err != nil {
			return err
		}
		return t.flush()
	})
	if err != nil {
		return Message{}, fmt.Errorf("append to folder %d: %w", folderID, err)
	}
	s.watch.notify(mailboxID)
	return out, nil
}

// RecordLogin implements Mail.
func (s *Bolt) RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bMailboxes)
		var m Mailbox
		if !getJSON(b, id8(mailboxID), &m) {
			return ErrMailboxNotFound
		}
		m.LastLogin = utc(now)
		return putJSON(b, id8(mailboxID), m)
	})
	if err != nil {
		return fmt.Errorf("record login of mailbox %d: %w", mailboxID, err)
	}
	return nil
}
