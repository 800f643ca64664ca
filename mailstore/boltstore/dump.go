package boltstore

// Dump and Load of the bbolt store (dump.go). Dump reads the buckets
// directly in one read transaction: the store is not in use while it is
// copied (the file lock says so), so holding one transaction costs no
// writer anything, and it is the one consistent snapshot. Load writes in
// batches of loadBatchRecords records or loadBatchBytes bytes per write
// transaction, so that a copy of many gigabytes neither holds its bodies
// in memory nor makes one huge commit.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	_ mailstore.Dumper   = (*Store)(nil)
	_ mailstore.Loader   = (*Store)(nil)
	_ mailstore.Verifier = (*Store)(nil)
)

// Batch bounds of Load: a write transaction commits after this many
// records or bytes of bodies, whichever comes first.
const (
	loadBatchRecords = 1000
	loadBatchBytes   = 32 << 20
)

// dataDir is the directory that holds the store's file (and srs.key).
func (s *Store) dataDir() string { return filepath.Dir(s.db.Path()) }

// readSRSKey answers the SRS secret kept in the data directory, "" when
// there is none.
func readSRSKey(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, mailstore.SRSKeyFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read SRS secret: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// Dump implements Dumper.
func (s *Store) Dump(ctx context.Context, fn func(mailstore.Record) error) error {
	secret, err := readSRSKey(s.dataDir())
	if err != nil {
		return err
	}
	return s.view(ctx, func(tx *bolt.Tx) error {
		// Settings: the Cluster ones (cluster.go), and the SRS
		// secret from its file, in name order.
		var settings []mailstore.SettingRecord
		if b := tx.Bucket(bCluster); b != nil {
			prefix := clusterSettingKey("")
			c := b.Cursor()
			for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
				settings = append(settings, mailstore.SettingRecord{Name: string(k[len(prefix):]), Value: string(v)})
			}
		}
		if secret != "" && !slices.ContainsFunc(settings, func(r mailstore.SettingRecord) bool { return r.Name == mailstore.SettingSRSSecret }) {
			settings = append(settings, mailstore.SettingRecord{Name: mailstore.SettingSRSSecret, Value: secret})
			slices.SortFunc(settings, func(a, b mailstore.SettingRecord) int { return strings.Compare(a.Name, b.Name) })
		}
		for _, r := range settings {
			if err := fn(r); err != nil {
				return err
			}
		}
		d := boltDumper{tx: tx, ctx: ctx, fn: fn}
		return d.dump()
	})
}

type boltDumper struct {
	tx  *bolt.Tx
	ctx context.Context
	fn  func(mailstore.Record) error
	// n counts records, to check ctx now and then rather than per record.
	n int
}

func (d *boltDumper) emit(r mailstore.Record) error {
	if d.n++; d.n%1024 == 0 {
		if err := d.ctx.Err(); err != nil {
			return err
		}
	}
	return d.fn(r)
}

// eachJSON decodes every value of a bucket into a new T, in key order. A
// bucket made lazily and not yet made reads as empty.
func eachJSON[T any](tx *bolt.Tx, bucket []byte, fn func(k []byte, v *T) error) error {
	b := tx.Bucket(bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, raw []byte) error {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%s %x: %w", bucket, k, err)
		}
		return fn(k, v)
	})
}

func (d *boltDumper) dump() error {
	tx := d.tx
	if err := eachJSON(tx, bPartners, func(_ []byte, p *mailstore.Partner) error {
		return d.emit(mailstore.PartnerRecord{Partner: *p, DomainCount: partnerDomainCount(tx, p.ID)})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bKeys, func(_ []byte, k *mailstore.APIKey) error {
		return d.emit(mailstore.APIKeyRecord{APIKey: *k})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bDomains, func(_ []byte, v *mailstore.Domain) error {
		return d.emit(mailstore.DomainRecord{Domain: *v})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bDKIM, func(k []byte, keys *[]mailstore.DKIMKey) error {
		return d.emit(mailstore.DKIMRecord{DomainID: int64(binary.BigEndian.Uint64(k)), Keys: *keys})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bTransfer, func(k []byte, t *mailstore.Transfer) error {
		if len(k) < 8 {
			return fmt.Errorf("transfer key %x: too short", k)
		}
		t.Month = string(k[8:])
		return d.emit(mailstore.TransferRecord{DomainID: int64(binary.BigEndian.Uint64(k)), Transfer: *t})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bMailboxes, func(_ []byte, m *mailstore.Mailbox) error {
		return d.emit(mailstore.MailboxRecord{Mailbox: *m, FolderCount: int64(folderCount(tx, m.ID))})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bAliases, func(_ []byte, a *mailstore.Alias) error {
		return d.emit(mailstore.AliasRecord{Alias: *a})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bFolders, func(_ []byte, f *mailstore.Folder) error {
		return d.emit(mailstore.FolderRecord{Folder: *f})
	}); err != nil {
		return err
	}
	if err := tx.Bucket(bSubscriptions).ForEach(func(k, _ []byte) error {
		return d.emit(mailstore.SubscriptionRecord{MailboxID: int64(binary.BigEndian.Uint64(k[:8])), Name: string(k[8:])})
	}); err != nil {
		return err
	}
	refs := tx.Bucket(bBlobRefs)
	if err := tx.Bucket(bBlobs).ForEach(func(k, body []byte) error {
		var n int64
		if v := refs.Get(k); len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
		return d.emit(mailstore.BlobRecord{ID: int64(binary.BigEndian.Uint64(k)), Refs: n, Body: body})
	}); err != nil {
		return err
	}
	if err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
		m, err := decodeMessage(k, v)
		if err != nil {
			return fmt.Errorf("message %x: %w", k, err)
		}
		return d.emit(mailstore.MessageRecord{Message: m})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bQueue, func(_ []byte, o *mailstore.Outbound) error {
		return d.emit(mailstore.OutboundRecord{Outbound: *o})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bSTS, func(k []byte, r *stsRecord) error {
		return d.emit(mailstore.STSRecord{STSPolicy: mailstore.STSPolicy{
			Domain: string(k), ID: r.ID, Mode: r.Mode, MX: r.MX,
			MaxAge: time.Duration(r.MaxAge) * time.Second, Expires: r.Expires,
		}})
	}); err != nil {
		return err
	}
	if err := d.dumpState(); err != nil {
		return err
	}
	for _, sq := range boltSequences {
		var v uint64
		if b := tx.Bucket(sq.bucket); b != nil {
			v = b.Sequence()
		}
		if err := d.emit(mailstore.SequenceRecord{Name: sq.name, Value: int64(v)}); err != nil {
			return err
		}
	}
	return nil
}

// eachRaw walks a bucket in key order; a bucket made lazily and not yet made
// reads as empty.
func eachRaw(tx *bolt.Tx, bucket []byte, fn func(k, v []byte) error) error {
	b := tx.Bucket(bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(fn)
}

// dumpState dumps what the buckets made lazily hold: auto-replies,
// webhooks and their outbox, event marks, the audit log, ACME blobs.
func (d *boltDumper) dumpState() error {
	tx := d.tx
	mailboxes := tx.Bucket(bMailboxes)
	// An auto-reply and its memory go with their mailbox; TakeAutoReply
	// does not check that the mailbox exists, so a memory of a mailbox
	// deleted meanwhile may remain, which no mailbox can use.
	if err := eachJSON(tx, bAutoReplies, func(k []byte, a *mailstore.AutoReply) error {
		if mailboxes.Get(k) == nil {
			return nil
		}
		return d.emit(mailstore.AutoReplyRecord{AutoReply: *a})
	}); err != nil {
		return err
	}
	if err := eachRaw(tx, bAutoReplySent, func(k, v []byte) error {
		if len(k) < 8 || len(v) != 8 {
			return fmt.Errorf("auto-reply sender %x: malformed", k)
		}
		if mailboxes.Get(k[:8]) == nil {
			return nil
		}
		return d.emit(mailstore.AutoReplySentRecord{
			MailboxID: int64(binary.BigEndian.Uint64(k)),
			Sender:    string(k[8:]),
			SentAt:    time.Unix(int64(binary.BigEndian.Uint64(v)), 0).UTC(),
		})
	}); err != nil {
		return err
	}
	// Scripts in key order: by mailbox, then name in byte order, the
	// canonical order.
	if err := eachRaw(tx, bSieveScripts, func(k, v []byte) error {
		if len(k) < 8 {
			return fmt.Errorf("sieve script %x: malformed", k)
		}
		if mailboxes.Get(k[:8]) == nil {
			return nil
		}
		var r sieveRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("sieve script %x: %w", k, err)
		}
		id := int64(binary.BigEndian.Uint64(k))
		name := string(k[8:])
		return d.emit(mailstore.SieveScriptRecord{SieveScript: mailstore.SieveScript{MailboxID: id, Name: name, Script: r.Script,
			UpdatedAt: r.UpdatedAt.UTC(), Active: sieveActiveName(tx, id) == name}})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bWebhooks, func(_ []byte, w *mailstore.Webhook) error {
		return d.emit(mailstore.WebhookRecord{Webhook: *w})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bEvents, func(_ []byte, e *mailstore.Event) error {
		return d.emit(mailstore.EventRecord{Event: *e})
	}); err != nil {
		return err
	}
	// A deleted webhook leaves its deliveries, which the next claim drops:
	// they are not state to carry.
	hooks, events := tx.Bucket(bWebhooks), tx.Bucket(bEvents)
	if err := eachJSON(tx, bWebhookDeliveries, func(k []byte, x *boltDelivery) error {
		if hooks == nil || hooks.Get(id8(x.WebhookID)) == nil || events == nil || events.Get(id8(x.EventID)) == nil {
			return nil
		}
		return d.emit(mailstore.WebhookDeliveryRecord{
			ID: int64(binary.BigEndian.Uint64(k)), WebhookID: x.WebhookID, EventID: x.EventID,
			Attempts: x.Attempts, NextAttempt: x.NextAttempt.UTC(), LastError: x.LastError,
		})
	}); err != nil {
		return err
	}
	if err := eachRaw(tx, bEventMarks, func(k, _ []byte) error {
		return d.emit(mailstore.EventMarkRecord{Mark: string(k)})
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bAudit, func(_ []byte, e *mailstore.AuditEntry) error {
		return d.emit(mailstore.AuditRecord{AuditEntry: *e})
	}); err != nil {
		return err
	}
	return eachRaw(tx, bCerts, func(k, v []byte) error {
		return d.emit(mailstore.CertRecord{Name: string(k), Data: v})
	})
}

// boltSequences are the buckets whose sequences hand out ids, by the
// name the dump gives them. The folders' sequence also hands out
// UIDVALIDITY (a new folder's is its id).
var boltSequences = []struct {
	name   string
	bucket []byte
}{
	{mailstore.SeqPartners, bPartners},
	{mailstore.SeqAPIKeys, bKeys},
	{mailstore.SeqDomains, bDomains},
	{mailstore.SeqMailboxes, bMailboxes},
	{mailstore.SeqAliases, bAliases},
	{mailstore.SeqFolders, bFolders},
	{mailstore.SeqUIDValidity, bFolders},
	{mailstore.SeqBlobs, bBlobs},
	{mailstore.SeqQueue, bQueue},
	{mailstore.SeqWebhooks, bWebhooks},
	{mailstore.SeqEvents, bEvents},
	{mailstore.SeqDeliveries, bWebhookDeliveries},
	{mailstore.SeqAudit, bAudit},
}

// dataBuckets are the buckets that hold objects (the others are indexes
// of these, or meta): a store with none of them filled is empty. Those
// made lazily may be missing.
var dataBuckets = [][]byte{
	bPartners, bKeys, bDomains, bDKIM, bTransfer, bMailboxes, bAliases,
	bFolders, bSubscriptions, bBlobs, bMessages, bQueue, bSTS, bAutoReplies, bAutoReplySent,
	bSieveScripts, bWebhooks, bEvents, bWebhookDeliveries, bEventMarks, bAudit, bCerts,
}

// Load implements Loader.
func (s *Store) Load(ctx context.Context, src func(put func(mailstore.Record) error) error) error {
	if err := s.view(ctx, func(tx *bolt.Tx) error {
		for _, b := range dataBuckets {
			bucket := tx.Bucket(b)
			if bucket == nil {
				continue
			}
			if k, _ := bucket.Cursor().First(); k != nil {
				return fmt.Errorf("%s: bucket %s has data: %w", s.db.Path(), b, mailstore.ErrNotEmpty)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	l := &boltLoader{
		s: s, ctx: ctx,
		folderMailbox: map[int64]int64{},
		mailboxDomain: map[int64]int64{},
		seq:           map[string]uint64{},
	}
	defer l.rollback()
	if err := src(l.put); err != nil {
		return err
	}
	if err := l.begin(); err != nil {
		return err
	}
	for _, sq := range boltSequences {
		v := l.seq[sq.name]
		if v == 0 {
			continue
		}
		b, err := l.tx.CreateBucketIfNotExists(sq.bucket)
		if err != nil {
			return err
		}
		if v > b.Sequence() {
			if err := b.SetSequence(v); err != nil {
				return fmt.Errorf("set sequence of %s: %w", sq.bucket, err)
			}
		}
	}
	return l.commit()
}

// boltLoader is one Load: the write transaction of the current batch
// and what later records need from earlier ones.
type boltLoader struct {
	s     *Store
	ctx   context.Context
	tx    *bolt.Tx
	n     int // records in the current batch
	bytes int // body bytes in the current batch

	// folderMailbox and mailboxDomain file a message's retention key
	// (domain, received, folder, uid -> mailbox).
	folderMailbox map[int64]int64
	mailboxDomain map[int64]int64
	// seq is, per sequence name, the highest of the source's sequence and
	// the ids loaded.
	seq map[string]uint64
}

func (l *boltLoader) begin() error {
	if l.tx != nil {
		return nil
	}
	if err := l.ctx.Err(); err != nil {
		return err
	}
	tx, err := l.s.db.Begin(true)
	if err != nil {
		return fmt.Errorf("begin load batch: %w", err)
	}
	l.tx, l.n, l.bytes = tx, 0, 0
	return nil
}

func (l *boltLoader) commit() error {
	if l.tx == nil {
		return nil
	}
	tx := l.tx
	l.tx = nil
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit load batch: %w", err)
	}
	return nil
}

func (l *boltLoader) rollback() {
	if l.tx != nil {
		_ = l.tx.Rollback()
		l.tx = nil
	}
}

// saw raises a sequence to an id loaded.
func (l *boltLoader) saw(name string, id int64) {
	if id > 0 && uint64(id) > l.seq[name] {
		l.seq[name] = uint64(id)
	}
}

func (l *boltLoader) put(r mailstore.Record) error {
	if err := l.begin(); err != nil {
		return err
	}
	if err := l.write(l.tx, r); err != nil {
		return fmt.Errorf("load %T: %w", r, err)
	}
	l.n++
	if l.n >= loadBatchRecords || l.bytes >= loadBatchBytes {
		return l.commit()
	}
	return nil
}

// write files one record and rebuilds its index keys, as the Store
// methods that make such objects do.
func (l *boltLoader) write(tx *bolt.Tx, r mailstore.Record) error {
	for _, w := range []func(*bolt.Tx, mailstore.Record) (bool, error){l.writeControl, l.writeMail, l.writeSide} {
		if done, err := w(tx, r); done {
			return err
		}
	}
	return fmt.Errorf("unknown record %T", r)
}

// writeControl files a record of the control plane (settings, partners,
// keys, domains, mailboxes, aliases); false when r is not one.
func (l *boltLoader) writeControl(tx *bolt.Tx, r mailstore.Record) (bool, error) {
	switch r := r.(type) {
	case mailstore.SettingRecord:
		if r.Name == mailstore.SettingSRSSecret {
			// Where package service reads it.
			return true, writeSRSKey(l.s.dataDir(), r.Value)
		}
		b, err := tx.CreateBucketIfNotExists(bCluster)
		if err != nil {
			return true, err
		}
		k := clusterSettingKey(r.Name)
		if have := b.Get(k); have != nil {
			if string(have) != r.Value {
				return true, fmt.Errorf("setting %s has another value: %w", r.Name, mailstore.ErrNotEmpty)
			}
			return true, nil
		}
		return true, b.Put(k, []byte(r.Value))
	case mailstore.PartnerRecord:
		p := r.Partner
		l.saw(mailstore.SeqPartners, p.ID)
		if err := tx.Bucket(bPartnerNames).Put([]byte(p.Name), id8(p.ID)); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bPartners), id8(p.ID), p)
	case mailstore.APIKeyRecord:
		k := r.APIKey
		l.saw(mailstore.SeqAPIKeys, k.ID)
		if err := tx.Bucket(bKeyLookup).Put([]byte(k.Lookup), id8(k.ID)); err != nil {
			return true, err
		}
		if err := tx.Bucket(bPartnerKeys).Put(pair(k.PartnerID, k.ID), nil); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bKeys), id8(k.ID), k)
	case mailstore.DomainRecord:
		d := r.Domain
		l.saw(mailstore.SeqDomains, d.ID)
		if err := tx.Bucket(bDomainClaims).Put(claimKey(d.Name, d.PartnerID), id8(d.ID)); err != nil {
			return true, err
		}
		if err := partnerIndexPut(tx, bPartnerDomains, d.PartnerID, d.ID, nil); err != nil {
			return true, err
		}
		if d.Verified {
			idx, err := tx.CreateBucketIfNotExists(bDomainVerified)
			if err != nil {
				return true, err
			}
			if err := idx.Put([]byte(mailstore.ReversedName(d.Name)), id8(d.ID)); err != nil {
				return true, err
			}
		}
		if err := putDomain(tx, d); err != nil {
			return true, err
		}
		// The live claim by the rule, from the claims loaded so far
		// (earlier batches' are committed, this batch's in tx).
		return true, relive(tx, d.Name)
	case mailstore.DKIMRecord:
		return true, putJSON(tx.Bucket(bDKIM), id8(r.DomainID), r.Keys)
	case mailstore.TransferRecord:
		t := r.Transfer
		return true, putJSON(tx.Bucket(bTransfer), transferKey(r.DomainID, t.Month), t)
	case mailstore.MailboxRecord:
		m := r.Mailbox
		l.saw(mailstore.SeqMailboxes, m.ID)
		l.mailboxDomain[m.ID] = m.DomainID
		if err := tx.Bucket(bDomainAddresses).Put(addrKey(m.DomainID, m.Email), addrValue(addrMailbox, m.ID)); err != nil {
			return true, err
		}
		entry := entryValue(m)
		if err := partnerIndexPut(tx, bPartnerMailboxes, m.PartnerID, m.ID, entry); err != nil {
			return true, err
		}
		if err := tx.Bucket(bDomainMailboxes).Put(pair(m.DomainID, m.ID), entry); err != nil {
			return true, err
		}
		if err := tx.Bucket(bFolderCounts).Put(id8(m.ID), u64(uint64(r.FolderCount))); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bMailboxes), id8(m.ID), m)
	case mailstore.AliasRecord:
		a := r.Alias
		l.saw(mailstore.SeqAliases, a.ID)
		if err := tx.Bucket(bDomainAddresses).Put(addrKey(a.DomainID, a.Source), addrValue(addrAlias, a.ID)); err != nil {
			return true, err
		}
		if err := partnerIndexPut(tx, bPartnerAliases, a.PartnerID, a.ID, nil); err != nil {
			return true, err
		}
		if err := tx.Bucket(bDomainAliases).Put(pair(a.DomainID, a.ID), nil); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bAliases), id8(a.ID), a)
	}
	return false, nil
}

// writeMail files a record of the mail plane (folders, subscriptions,
// bodies, messages, the queue, MTA-STS policies); false when r is not one.
func (l *boltLoader) writeMail(tx *bolt.Tx, r mailstore.Record) (bool, error) {
	switch r := r.(type) {
	case mailstore.FolderRecord:
		f := r.Folder
		l.saw(mailstore.SeqFolders, f.ID)
		l.saw(mailstore.SeqFolders, int64(f.UIDValidity))
		l.folderMailbox[f.ID] = f.MailboxID
		if err := tx.Bucket(bMailboxFolders).Put(folderNameKey(f.MailboxID, f.Name), id8(f.ID)); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bFolders), id8(f.ID), f)
	case mailstore.SubscriptionRecord:
		return true, tx.Bucket(bSubscriptions).Put(folderNameKey(r.MailboxID, r.Name), nil)
	case mailstore.BlobRecord:
		l.saw(mailstore.SeqBlobs, r.ID)
		l.bytes += len(r.Body)
		// bbolt keeps a value by reference until the commit, and the
		// body is only the dumper's until this call returns.
		if err := tx.Bucket(bBlobs).Put(id8(r.ID), bytes.Clone(r.Body)); err != nil {
			return true, err
		}
		// The summary Deliver would have stored, made now rather than
		// by the first Summaries that finds it missing.
		sums, err := tx.CreateBucketIfNotExists(bSummaries)
		if err != nil {
			return true, err
		}
		if err := sums.Put(id8(r.ID), mailstore.HeaderSummary(r.Body)); err != nil {
			return true, err
		}
		if r.Refs == 0 {
			return true, nil
		}
		return true, tx.Bucket(bBlobRefs).Put(id8(r.ID), u64(uint64(r.Refs)))
	case mailstore.MessageRecord:
		m := r.Message
		mailboxID, ok := l.folderMailbox[m.FolderID]
		if !ok {
			return true, fmt.Errorf("message %d/%d: folder not loaded", m.FolderID, m.UID)
		}
		domainID := l.mailboxDomain[mailboxID]
		if err := tx.Bucket(bMessages).Put(msgKey(m.FolderID, m.UID), encodeMessage(m)); err != nil {
			return true, err
		}
		return true, tx.Bucket(bRetention).Put(retentionKey(domainID, m.ReceivedAt, m.FolderID, m.UID), id8(mailboxID))
	case mailstore.OutboundRecord:
		o := r.Outbound
		l.saw(mailstore.SeqQueue, o.ID)
		o.Leased = o.Leased || r.LeasedBy != ""
		return true, newQueueTx(tx).put(o)
	case mailstore.STSRecord:
		p := r.STSPolicy
		domain := stsDomain(p.Domain)
		rec := stsRecord{ID: p.ID, Mode: p.Mode, MX: p.MX, MaxAge: int64(p.MaxAge / time.Second), Expires: mailstore.UTC(p.Expires)}
		if err := tx.Bucket(bSTSExpiry).Put(stsExpiryKey(rec.Expires, domain), nil); err != nil {
			return true, err
		}
		return true, putJSON(tx.Bucket(bSTS), []byte(domain), rec)
	}
	return false, nil
}

// writeSide files the records of the lazily made buckets (auto-replies,
// Sieve, webhooks, events, audit, certificates) and the sequences; false
// when r is not one.
func (l *boltLoader) writeSide(tx *bolt.Tx, r mailstore.Record) (bool, error) {
	switch r := r.(type) {
	case mailstore.AutoReplyRecord:
		b, err := tx.CreateBucketIfNotExists(bAutoReplies)
		if err != nil {
			return true, err
		}
		return true, putJSON(b, id8(r.MailboxID), r.AutoReply)
	case mailstore.AutoReplySentRecord:
		b, err := tx.CreateBucketIfNotExists(bAutoReplySent)
		if err != nil {
			return true, err
		}
		return true, b.Put(append(id8(r.MailboxID), r.Sender...), u64(uint64(r.SentAt.Unix())))
	case mailstore.SieveScriptRecord:
		b, err := tx.CreateBucketIfNotExists(bSieveScripts)
		if err != nil {
			return true, err
		}
		if err := putJSON(b, sieveKey(r.MailboxID, r.Name), sieveRecord{Script: r.Script, UpdatedAt: mailstore.UTC(r.UpdatedAt)}); err != nil {
			return true, err
		}
		if r.Active {
			return true, setSieveActive(tx, r.MailboxID, r.Name)
		}
		return true, nil
	case mailstore.WebhookRecord:
		w := r.Webhook
		l.saw(mailstore.SeqWebhooks, w.ID)
		bs, err := buckets(tx, bWebhooks, bPartnerWebhooks)
		if err != nil {
			return true, err
		}
		if err := bs[1].Put(pair(w.PartnerID, w.ID), nil); err != nil {
			return true, err
		}
		return true, putJSON(bs[0], id8(w.ID), w)
	case mailstore.EventRecord:
		l.saw(mailstore.SeqEvents, r.ID)
		b, err := tx.CreateBucketIfNotExists(bEvents)
		if err != nil {
			return true, err
		}
		return true, putJSON(b, id8(r.ID), r.Event)
	case mailstore.WebhookDeliveryRecord:
		l.saw(mailstore.SeqDeliveries, r.ID)
		bs, err := buckets(tx, bWebhookDeliveries, bWebhookDue)
		if err != nil {
			return true, err
		}
		x := boltDelivery{WebhookID: r.WebhookID, EventID: r.EventID, Attempts: r.Attempts, NextAttempt: mailstore.UTC(r.NextAttempt), LastError: r.LastError}
		if err := bs[1].Put(dueKey(x.NextAttempt, r.ID), nil); err != nil {
			return true, err
		}
		return true, putJSON(bs[0], id8(r.ID), x)
	case mailstore.EventMarkRecord:
		b, err := tx.CreateBucketIfNotExists(bEventMarks)
		if err != nil {
			return true, err
		}
		return true, b.Put([]byte(r.Mark), nil)
	case mailstore.AuditRecord:
		e := r.AuditEntry
		l.saw(mailstore.SeqAudit, e.ID)
		bs, err := buckets(tx, bAudit, bAuditTime)
		if err != nil {
			return true, err
		}
		if err := bs[1].Put(auditTimeKey(e.Time, e.PartnerID, e.ID), nil); err != nil {
			return true, err
		}
		return true, putJSON(bs[0], pair(e.PartnerID, e.ID), e)
	case mailstore.CertRecord:
		l.bytes += len(r.Data)
		b, err := tx.CreateBucketIfNotExists(bCerts)
		if err != nil {
			return true, err
		}
		return true, b.Put([]byte(r.Name), bytes.Clone(r.Data))
	case mailstore.SequenceRecord:
		name := r.Name
		if name == mailstore.SeqUIDValidity {
			// bbolt takes a new folder's UIDVALIDITY from the folders'
			// sequence: it must pass the source's UIDVALIDITY too.
			name = mailstore.SeqFolders
		}
		l.saw(name, r.Value)
		return true, nil
	}
	return false, nil
}

// writeSRSKey keeps the SRS secret where package service reads it. A
// secret there already must be the same one: replacing it would break
// the addresses that directory's server rewrote with it.
func writeSRSKey(dir, secret string) error {
	have, err := readSRSKey(dir)
	if err != nil {
		return err
	}
	if have != "" {
		if have != secret {
			return fmt.Errorf("%s holds another SRS secret: %w", filepath.Join(dir, mailstore.SRSKeyFile), mailstore.ErrNotEmpty)
		}
		return nil
	}
	path := filepath.Join(dir, mailstore.SRSKeyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write SRS secret: %w", err)
	}
	_, werr := f.WriteString(secret + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("write SRS secret %s: %w", path, err)
	}
	return nil
}
