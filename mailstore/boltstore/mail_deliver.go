package boltstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// Deliver implements Mail. It runs in a bbolt batch: concurrent deliveries
// share one commit and one fsync. bbolt may run the function twice (when
// another function of the batch fails), so the result is rebuilt inside;
// and a refusal (cap reached, unknown sender domain) is not returned from
// the function, which would make bbolt roll back and rerun the whole
// batch, but noted and answered once the batch has committed, with
// nothing of this delivery in it. The quota of concurrent deliveries
// (Mail.Deliver) is decided on each mailbox as the batch's earlier
// functions left it in the transaction: bbolt has one writer, so the
// figures are the committed ones plus the batch's own.
func (s *Store) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	if d.ReceivedAt.IsZero() {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: no received time: %w", mailstore.ErrInvalidArgument)
	}
	ids := make([]int64, 0, len(d.MailboxIDs))
	for _, id := range d.MailboxIDs {
		if !containsID(ids, id) {
			ids = append(ids, id)
		}
	}
	groups, err := mailstore.GroupRelays(d.Relay)
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	if len(ids) == 0 && len(groups) == 0 {
		return mailstore.DeliveryResult{}, ctx.Err()
	}
	size := int64(len(d.Body))
	received := mailstore.UTC(d.ReceivedAt)
	month := mailstore.Month(received)
	// Made before the transaction, which holds the store's write lock.
	var summary []byte
	if len(ids) > 0 {
		summary = mailstore.HeaderSummary(d.Body)
	}
	var res mailstore.DeliveryResult
	var refused error
	err = s.batch(ctx, func(tx *bolt.Tx) error {
		res, refused = mailstore.DeliveryResult{}, nil
		t := s.mailTx(tx)
		// Every decision is taken on the month's figures as they stand
		// before this delivery, and before anything is written.
		if d.SenderDomainID != 0 {
			used, err := t.capUsed(d.SenderDomainID, month)
			if err != nil {
				refused = fmt.Errorf("sender domain %d: %w", d.SenderDomainID, err)
				return nil
			}
			if used {
				refused = fmt.Errorf("sender domain %d: %w", d.SenderDomainID, mailstore.ErrTransferCapReached)
				return nil
			}
		}
		held := map[int64]bool{}
		for _, g := range groups {
			did := g.Relay.DomainID
			if _, ok := held[did]; ok || did == 0 || did == d.SenderDomainID {
				continue
			}
			used, err := t.capUsed(did, month)
			if err != nil {
				refused = fmt.Errorf("relay domain %d: %w", did, err)
				return nil
			}
			held[did] = used
		}

		blobID, err := nextID(t.blobs)
		if err != nil {
			return err
		}
		var inDomains []int64
		var events []mailstore.Event
		var full []mailstore.Mailbox // of res.OverQuota
		marks := tx.Bucket(bEventMarks)
		for _, id := range ids {
			mb, err := t.mailbox(id)
			if errors.Is(err, mailstore.ErrMailboxNotFound) {
				res.Skipped = append(res.Skipped, id)
				continue
			}
			if err != nil {
				return err
			}
			if !d.IgnoreQuota && mb.Full() {
				res.OverQuota = append(res.OverQuota, id)
				full = append(full, *mb)
				continue
			}
			inbox, err := t.folderByName(id, "INBOX")
			if err != nil {
				return fmt.Errorf("mailbox %d: INBOX: %w", id, err)
			}
			if containsID(d.JunkMailboxIDs, id) {
				if junk, err := t.specialFolder(id, `\Junk`); err == nil {
					inbox = junk
				} else if !errors.Is(err, mailstore.ErrFolderNotFound) {
					return fmt.Errorf("mailbox %d: Junk: %w", id, err)
				}
			}
			pl := d.PlacementOf(id)
			if pl.Folder != "" {
				if inbox, err = t.folderByName(id, pl.Folder); errors.Is(err, mailstore.ErrFolderNotFound) {
					inbox, err = t.folderByName(id, "INBOX")
				}
				if err != nil {
					return fmt.Errorf("mailbox %d: %s: %w", id, pl.Folder, err)
				}
			}
			before := mb.UsedBytes
			if _, err := t.add(inbox, mailstore.Message{BlobID: blobID, Size: size, ReceivedAt: received, Flags: mailstore.DeliveryFlags(pl.Flags)}); err != nil {
				return err
			}
			if mailstore.QuotaCrossed(before, mb.UsedBytes, mb.QuotaBytes()) {
				dom, err := t.domain(mb.DomainID)
				if err != nil {
					return err
				}
				events = append(events, mailstore.NewQuotaEvent(mailstore.EventQuotaWarning, *mb, dom.Name, received))
			}
			// Accepted: the mailbox was not full, so its next refusal is a
			// new filling (Webhooks.QuotaFull).
			if marks != nil {
				if err := marks.Delete([]byte(mailstore.QuotaFullMark(id))); err != nil {
					return err
				}
			}
			res.Delivered = append(res.Delivered, id)
			if !containsID(inDomains, mb.DomainID) {
				inDomains = append(inDomains, mb.DomainID)
			}
		}
		if len(res.OverQuota) > 0 && len(res.Delivered) == 0 {
			// No recipient took the message, so the loop wrote nothing:
			// refused with nothing of it stored.
			refused = fmt.Errorf("mailbox %d: %w", res.OverQuota[0], mailstore.ErrOverQuota)
			return nil
		}
		q := newQueueTx(tx)
		for _, g := range groups {
			o := relayEntry(g, blobID, size, received, held[g.Relay.DomainID])
			if o.ID, err = nextID(q.entries); err != nil {
				return err
			}
			if err := q.put(o); err != nil {
				return err
			}
			res.Queued = append(res.Queued, o.ID)
		}
		// Neither counted nor held: the recipient's domain counts the
		// message when the queue delivers it.
		for _, mb := range full {
			o := relayEntry(mailstore.LocalRetry(mb, d.From), blobID, size, received, false)
			if o.ID, err = nextID(q.entries); err != nil {
				return err
			}
			if err := q.put(o); err != nil {
				return err
			}
			res.Queued = append(res.Queued, o.ID)
		}
		refs := len(res.Delivered) + len(res.Queued)
		if refs == 0 {
			return nil
		}
		if err := t.blobs.Put(id8(blobID), d.Body); err != nil {
			return err
		}
		if len(res.Delivered) > 0 {
			if err := t.putSummary(blobID, summary); err != nil {
				return err
			}
		}
		t.rcache[blobID] = uint64(refs)

		// The transfer figures before the counting, for the crossings.
		before := map[int64]int64{}
		for _, did := range append(inDomains, d.SenderDomainID) {
			if did != 0 {
				x := t.transferFigures(did, month)
				before[did] = x.InBytes + x.OutBytes
			}
		}
		for _, g := range groups {
			if did := g.Relay.DomainID; did != 0 {
				x := t.transferFigures(did, month)
				before[did] = x.InBytes + x.OutBytes
			}
		}
		for _, did := range inDomains {
			t.count(did, month, size, 0)
		}
		// Outbound: once per domain per message, the sender's and each
		// relay's that is not held.
		var outDomains []int64
		if d.SenderDomainID != 0 {
			outDomains = append(outDomains, d.SenderDomainID)
		}
		for _, g := range groups {
			did := g.Relay.DomainID
			if did != 0 && !held[did] && !containsID(outDomains, did) {
				outDomains = append(outDomains, did)
			}
		}
		for _, did := range outDomains {
			t.count(did, month, 0, size)
		}
		for did, was := range before {
			x := t.transferFigures(did, month)
			if x.InBytes+x.OutBytes == was {
				continue
			}
			dom, err := t.domain(did)
			if err != nil {
				return err
			}
			for _, typ := range mailstore.TransferCrossings(was, x.InBytes+x.OutBytes, dom.TransferMonthlyMB*mailstore.MB) {
				events = append(events, mailstore.NewTransferEvent(typ, *dom, x.Transfer, received))
			}
		}
		for i := range events {
			if err := addEventTx(tx, &events[i]); err != nil {
				return err
			}
		}
		return t.flush()
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	s.watch.Notify(res.Delivered...)
	return res, nil
}

// capUsed reports whether a domain has used its transfer cap for the
// month: inbound and outbound bytes together reach transfer_monthly_mb
// (a cap of 0 admits nothing, as a zero quota does). ErrDomainNotFound.
func (t *mailTx) capUsed(domainID int64, month string) (bool, error) {
	var d mailstore.Domain
	if dc, ok := t.dcache[domainID]; ok {
		d = *dc
	} else if !getJSON(t.domains, id8(domainID), &d) {
		return false, mailstore.ErrDomainNotFound
	}
	x := t.transferFigures(domainID, month)
	return d.TransferCapReached(x.Transfer), nil
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
func overQuota(mb *mailstore.Mailbox, size int64) bool {
	return !mb.Fits(size)
}

// Append implements Mail.
func (s *Store) Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (mailstore.Message, error) {
	if receivedAt.IsZero() {
		return mailstore.Message{}, fmt.Errorf("append: no received time: %w", mailstore.ErrInvalidArgument)
	}
	if err := mailstore.CheckKeywordLength(flags); err != nil {
		return mailstore.Message{}, fmt.Errorf("append: %w", err)
	}
	summary := mailstore.HeaderSummary(body)
	var out mailstore.Message
	err := s.update(ctx, func(tx *bolt.Tx) error {
		t := s.mailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		mb, err := t.mailbox(mailboxID)
		if err != nil {
			return err
		}
		if overQuota(mb, int64(len(body))) {
			return mailstore.ErrOverQuota
		}
		blobID, err := nextID(t.blobs)
		if err != nil {
			return err
		}
		if err := t.blobs.Put(id8(blobID), body); err != nil {
			return err
		}
		if err := t.putSummary(blobID, summary); err != nil {
			return err
		}
		t.rcache[blobID] = 1
		out, err = t.add(f, mailstore.Message{
			BlobID: blobID, Size: int64(len(body)), ReceivedAt: mailstore.UTC(receivedAt), Flags: mailstore.NormFlags(flags),
		})
		if err != nil {
			return err
		}
		return t.flush()
	})
	if err != nil {
		return mailstore.Message{}, fmt.Errorf("append to folder %d: %w", folderID, err)
	}
	s.watch.Notify(mailboxID)
	return out, nil
}

// RecordLogin implements Mail.
func (s *Store) RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bMailboxes)
		var m mailstore.Mailbox
		if !getJSON(b, id8(mailboxID), &m) {
			return mailstore.ErrMailboxNotFound
		}
		m.LastLogin = mailstore.UTC(now)
		return putJSON(b, id8(mailboxID), m)
	})
	if err != nil {
		return fmt.Errorf("record login of mailbox %d: %w", mailboxID, err)
	}
	return nil
}
