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
//
// A delivery goes in the four steps pgstore's batch has, by the same
// names: lock, decide and write in the transaction (deliveryTx), notify
// after the commit.
func (s *Store) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	c, err := mailstore.CheckDelivery(d)
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	if c.Empty() {
		return mailstore.DeliveryResult{}, ctx.Err()
	}
	var x *deliveryTx
	err = s.batch(ctx, func(tx *bolt.Tx) error {
		x = &deliveryTx{tx: tx, t: s.mailTx(tx), c: &c}
		if err := x.lock(); err != nil {
			return err
		}
		if err := x.decide(); err != nil || x.refused != nil {
			return err
		}
		return x.write()
	})
	if err == nil {
		err = x.refused
	}
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	s.notify(x.res.Delivered...)
	return x.res, nil
}

// deliveryTx is one delivery's work in a batch's transaction, and what
// came of it. Each run of the batch's function makes a new one.
type deliveryTx struct {
	tx *bolt.Tx
	t  *mailTx
	c  *mailstore.CheckedDelivery
	// mailboxes are the recipients that exist, by id (lock).
	mailboxes map[int64]*mailstore.Mailbox
	// held are the relay domains decided on, true for those whose cap
	// is used (decide).
	held map[int64]bool
	// folders are where each delivered copy goes (decide).
	folders map[int64]*mailstore.Folder
	// full are the recipients of res.OverQuota, for their local retries.
	full []mailstore.Mailbox
	res  mailstore.DeliveryResult
	// refused is the delivery's refusal: nothing of it is written, and
	// Deliver answers it once the batch has committed.
	refused error
}

// lock reads the rows the decisions stand on: the recipients' mailboxes.
// bbolt has one writer and the batch's transaction is it, so nothing
// lock reads changes before the commit but by this batch, as pgstore's
// lock has its rows locked.
func (x *deliveryTx) lock() error {
	x.mailboxes = make(map[int64]*mailstore.Mailbox, len(x.c.IDs))
	for _, id := range x.c.IDs {
		mb, err := x.t.mailbox(id)
		if errors.Is(err, mailstore.ErrMailboxNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		x.mailboxes[id] = mb
	}
	return nil
}

// decide takes every decision before anything is written, on the
// month's figures as they stand before this delivery: the caps
// (mailstore.DecideCaps), then for each recipient whether it is gone
// (Skipped), full (OverQuota) or which folder its copy goes to, and the
// refusal when every recipient is full (mailstore.RefuseAllFull).
func (x *deliveryTx) decide() error {
	c := x.c
	held, err := mailstore.DecideCaps(c.SenderDomainID, c.Groups, func(did int64) (bool, error) {
		return x.t.capUsed(did, c.Month)
	})
	if err != nil {
		x.refused = err
		return nil
	}
	x.held = held
	x.folders = make(map[int64]*mailstore.Folder, len(c.IDs))
	for _, id := range c.IDs {
		mb, ok := x.mailboxes[id]
		if !ok {
			x.res.Skipped = append(x.res.Skipped, id)
			continue
		}
		if !c.IgnoreQuota && mb.Full() {
			x.res.OverQuota = append(x.res.OverQuota, id)
			x.full = append(x.full, *mb)
			continue
		}
		f, err := x.folder(id)
		if err != nil {
			return err
		}
		x.folders[id] = f
		x.res.Delivered = append(x.res.Delivered, id)
	}
	x.refused = mailstore.RefuseAllFull(x.res)
	return nil
}

// folder is the folder mailbox id's copy goes to: the one its placement
// names if the mailbox has it, else its \Junk folder if the delivery
// says so and it has one, else INBOX.
func (x *deliveryTx) folder(id int64) (*mailstore.Folder, error) {
	inbox, err := x.t.folderByName(id, "INBOX")
	if err != nil {
		return nil, fmt.Errorf("mailbox %d: INBOX: %w", id, err)
	}
	if x.c.ToJunk(id) {
		if junk, err := x.t.specialFolder(id, `\Junk`); err == nil {
			inbox = junk
		} else if !errors.Is(err, mailstore.ErrFolderNotFound) {
			return nil, fmt.Errorf("mailbox %d: Junk: %w", id, err)
		}
	}
	if pl := x.c.Places[id]; pl.Folder != "" {
		f, err := x.t.folderByName(id, pl.Folder)
		if errors.Is(err, mailstore.ErrFolderNotFound) {
			return x.t.folderByName(id, "INBOX")
		}
		if err != nil {
			return nil, fmt.Errorf("mailbox %d: %s: %w", id, pl.Folder, err)
		}
		return f, nil
	}
	return inbox, nil
}

// write stores what decide decided: the messages, the queue entries, the
// body once for all of them, the transfer counters, and the events of
// the thresholds crossed, then flushes the counters.
func (x *deliveryTx) write() error {
	t := x.t
	blobID, err := nextID(t.blobs)
	if err != nil {
		return err
	}
	events, err := x.writeMessages(blobID)
	if err != nil {
		return err
	}
	if err := x.writeQueue(blobID); err != nil {
		return err
	}
	refs := len(x.res.Delivered) + len(x.res.Queued)
	if refs == 0 {
		return nil
	}
	if err := t.blobs.Put(id8(blobID), x.c.Body); err != nil {
		return err
	}
	if len(x.res.Delivered) > 0 {
		if err := t.putSummary(blobID, x.c.Summary); err != nil {
			return err
		}
	}
	t.rcache[blobID] = uint64(refs)
	crossed, err := x.writeTransfer()
	if err != nil {
		return err
	}
	events = append(events, crossed...)
	for i := range events {
		if err := addEventTx(x.tx, &events[i]); err != nil {
			return err
		}
	}
	return t.flush()
}

// writeMessages adds a message to each delivered copy's folder, and
// answers the quota warnings it crossed.
func (x *deliveryTx) writeMessages(blobID int64) ([]mailstore.Event, error) {
	t, c := x.t, x.c
	var events []mailstore.Event
	marks := x.tx.Bucket(bEventMarks)
	for _, id := range x.res.Delivered {
		mb := x.mailboxes[id]
		before := mb.UsedBytes
		if _, err := t.add(x.folders[id], mailstore.Message{BlobID: blobID, Size: c.Size, ReceivedAt: c.Received, Flags: c.Places[id].Flags}); err != nil {
			return nil, err
		}
		if mailstore.QuotaCrossed(before, mb.UsedBytes, mb.QuotaBytes()) {
			dom, err := t.domain(mb.DomainID)
			if err != nil {
				return nil, err
			}
			events = append(events, mailstore.NewQuotaEvent(mailstore.EventQuotaWarning, *mb, dom.Name, c.Received))
		}
		// Accepted: the mailbox was not full, so its next refusal is a
		// new filling (Webhooks.QuotaFull).
		if marks != nil {
			if err := marks.Delete([]byte(mailstore.QuotaFullMark(id))); err != nil {
				return nil, err
			}
		}
	}
	return events, nil
}

// writeQueue queues an entry for each relay group, then a local retry
// for each full recipient: neither counted nor held, the recipient's
// domain counts the message when the queue delivers it.
func (x *deliveryTx) writeQueue(blobID int64) error {
	c := x.c
	entries := make([]mailstore.Outbound, 0, len(c.Groups)+len(x.full))
	for _, g := range c.Groups {
		entries = append(entries, mailstore.RelayEntry(g, blobID, c.Size, c.Received, x.held[g.Relay.DomainID]))
	}
	for _, mb := range x.full {
		entries = append(entries, mailstore.RelayEntry(mailstore.LocalRetry(mb, c.From), blobID, c.Size, c.Received, false))
	}
	q := newQueueTx(x.tx)
	for _, o := range entries {
		var err error
		if o.ID, err = nextID(q.entries); err != nil {
			return err
		}
		if err := q.put(o); err != nil {
			return err
		}
		x.res.Queued = append(x.res.Queued, o.ID)
	}
	return nil
}

// writeTransfer counts the message in the transfer of the recipients'
// domains (in) and of mailstore.OutboundDomains (out), and answers the
// events of the thresholds it crossed.
func (x *deliveryTx) writeTransfer() ([]mailstore.Event, error) {
	t, c := x.t, x.c
	var inDomains []int64
	for _, id := range x.res.Delivered {
		if did := x.mailboxes[id].DomainID; !containsID(inDomains, did) {
			inDomains = append(inDomains, did)
		}
	}
	// The transfer figures before the counting, for the crossings.
	before := map[int64]int64{}
	for _, did := range append(inDomains, c.SenderDomainID) {
		if did != 0 {
			f := t.transferFigures(did, c.Month)
			before[did] = f.InBytes + f.OutBytes
		}
	}
	for _, g := range c.Groups {
		if did := g.Relay.DomainID; did != 0 {
			f := t.transferFigures(did, c.Month)
			before[did] = f.InBytes + f.OutBytes
		}
	}
	for _, did := range inDomains {
		t.count(did, c.Month, c.Size, 0)
	}
	for _, did := range mailstore.OutboundDomains(c.SenderDomainID, c.Groups, x.held) {
		t.count(did, c.Month, 0, c.Size)
	}
	var events []mailstore.Event
	for did, was := range before {
		f := t.transferFigures(did, c.Month)
		if f.InBytes+f.OutBytes == was {
			continue
		}
		dom, err := t.domain(did)
		if err != nil {
			return nil, err
		}
		for _, typ := range mailstore.TransferCrossings(was, f.InBytes+f.OutBytes, dom.TransferMonthlyMB*mailstore.MB) {
			events = append(events, mailstore.NewTransferEvent(typ, *dom, f.Transfer, c.Received))
		}
	}
	return events, nil
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
	out, err := s.AppendMany(ctx, mailboxID, folderID, []mailstore.AppendMessage{{Body: body, Flags: flags, ReceivedAt: receivedAt}})
	if err != nil {
		return mailstore.Message{}, err
	}
	return out[0], nil
}

// AppendMany implements Mail.
func (s *Store) AppendMany(ctx context.Context, mailboxID, folderID int64, msgs []mailstore.AppendMessage) ([]mailstore.Message, error) {
	var total int64
	summaries := make([][]byte, len(msgs))
	for i, m := range msgs {
		if m.ReceivedAt.IsZero() {
			return nil, fmt.Errorf("append: no received time: %w", mailstore.ErrInvalidArgument)
		}
		if err := mailstore.CheckKeywordLength(m.Flags); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		total += int64(len(m.Body))
		summaries[i] = mailstore.HeaderSummary(m.Body)
	}
	var out []mailstore.Message
	err := s.update(ctx, func(tx *bolt.Tx) error {
		out = make([]mailstore.Message, 0, len(msgs))
		t := s.mailTx(tx)
		f, err := t.folder(mailboxID, folderID)
		if err != nil {
			return err
		}
		mb, err := t.mailbox(mailboxID)
		if err != nil {
			return err
		}
		if overQuota(mb, total) {
			return mailstore.ErrOverQuota
		}
		for i, m := range msgs {
			blobID, err := nextID(t.blobs)
			if err != nil {
				return err
			}
			if err := t.blobs.Put(id8(blobID), m.Body); err != nil {
				return err
			}
			if err := t.putSummary(blobID, summaries[i]); err != nil {
				return err
			}
			t.rcache[blobID] = 1
			added, err := t.add(f, mailstore.Message{
				BlobID: blobID, Size: int64(len(m.Body)), ReceivedAt: mailstore.UTC(m.ReceivedAt), Flags: mailstore.NormFlags(m.Flags),
			})
			if err != nil {
				return err
			}
			out = append(out, added)
		}
		return t.flush()
	})
	if err != nil {
		return nil, fmt.Errorf("append to folder %d: %w", folderID, err)
	}
	s.notify(mailboxID)
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
