package boltstore

// The mail plane of the bbolt store. STORAGE.md explains the choices; in
// short, bodies live in the same file as everything else, refcounted, so
// that one commit (one fsync) makes body and metadata durable together and
// a crash can leave no orphan.
//
// Buckets (schema 1):
//
//	folders          folderID -> Folder (JSON)
//	mailbox_folders  mailboxID|name -> folderID
//	messages         folderID|uid(4, big-endian) -> message record (binary,
//	                 see encodeMessage)
//	blobs            blobID -> body
//	blob_refs        blobID -> refcount (uint64)
//	retention        domainID|receivedUnix(8)|folderID|uid(4) -> mailboxID
//
// and, from schema 5, folder_counts (mailboxID -> uint64), the number of
// mailbox_folders keys under each mailboxID, kept by createFolderTx,
// DeleteFolder and deleteMailboxMessages.
//
// and, from schema 7, subscriptions (mailboxID|name -> empty), an
// account's subscribed names, which need not be folders' (mail_subscriptions.go).
//
// and blob_summaries (blobID -> HeaderSummary of the body), created by
// the first write that needs it (mail_summaries.go).
//
// and folder_keywords (each folder's keyword counts), created by the
// first write that changes a keyword (mail_keywords.go).
//
// and, from schema 2, the outbound queue (queue.go), whose entries
// also hold blob references.
//
// Invariants, kept by every writer within one transaction:
//
//   - a message record exists if and only if its retention entry does;
//   - a blob's refcount is the number of message records and outbound
//     queue entries naming it, and a blob with no reference is deleted;
//   - Folder.Messages/Unseen/Size, Mailbox.MessageCount/UsedBytes and
//     Domain.MessageCount/UsedBytes are the counts and sums over the
//     message records (UsedBytes counts each message's Size, even when its
//     body is shared);
//   - every change to a folder's messages (a message added, its flags
//     changed, removed) is a record of the folder's change log with the
//     folder's next HighestModSeq (mail_changes.go);
//   - the Folder's UIDNext is above every UID in it, and UIDs are never
//     reused within a folder (a folder's UIDValidity is its id, from a
//     store-wide sequence, so a folder made again under an old name has a
//     new one).
//
// Writers go through mailTx, which caches the records a transaction
// changes and writes each once at the end (flush).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bFolders        = []byte("folders")
	bMailboxFolders = []byte("mailbox_folders")
	bMessages       = []byte("messages")
	bBlobs          = []byte("blobs")
	bBlobRefs       = []byte("blob_refs")
	bRetention      = []byte("retention")
	bFolderCounts   = []byte("folder_counts")
)

var mailBuckets = [][]byte{bFolders, bMailboxFolders, bMessages, bBlobs, bBlobRefs, bRetention}

// createMailBuckets creates the mail plane's buckets of schema 1
// (folder_counts comes with its own migration, which counts).
func createMailBuckets(tx *bolt.Tx) error {
	for _, b := range mailBuckets {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// createMailboxFolders makes a new mailbox's folders, subscribed: clients
// that show only subscribed folders (Thunderbird's default) would
// otherwise show none.
func createMailboxFolders(tx *bolt.Tx, m mailstore.Mailbox) error {
	for _, df := range mailstore.DefaultFolders {
		if _, err := createFolderTx(tx, m.ID, df[0], df[1]); err != nil {
			return err
		}
		if err := tx.Bucket(bSubscriptions).Put(folderNameKey(m.ID, df[0]), nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteMailboxMessages removes all of a mailbox's folders and messages and
// returns how many messages and bytes it freed. The caller deletes the
// mailbox record and takes the figures off the domain; watchers of the
// mailbox are told once the transaction commits.
func (s *Store) deleteMailboxMessages(tx *bolt.Tx, m mailstore.Mailbox) (msgs, bytes int64, err error) {
	t := s.mailTx(tx)
	var folderIDs []int64
	prefix := id8(m.ID)
	c := t.names.Cursor()
	for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		if len(v) == 8 {
			folderIDs = append(folderIDs, int64(binary.BigEndian.Uint64(v)))
		}
	}
	for _, fid := range folderIDs {
		var gone []mailstore.Message
		if err := t.eachMessage(fid, func(msg mailstore.Message) error {
			gone = append(gone, msg)
			return nil
		}); err != nil {
			return 0, 0, err
		}
		for _, msg := range gone {
			if err := t.drop(m.DomainID, msg, true); err != nil {
				return 0, 0, err
			}
			msgs++
			bytes += msg.Size
		}
		if err := t.folders.Delete(id8(fid)); err != nil {
			return 0, 0, err
		}
		if err := t.dropKeywords(fid); err != nil {
			return 0, 0, err
		}
		if err := t.deleteLog(fid); err != nil {
			return 0, 0, err
		}
	}
	for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return 0, 0, err
		}
	}
	if err := tx.Bucket(bFolderCounts).Delete(id8(m.ID)); err != nil {
		return 0, 0, err
	}
	if err := deleteSubscriptionsTx(tx, m.ID); err != nil {
		return 0, 0, err
	}
	if err := t.flushRefs(); err != nil {
		return 0, 0, err
	}
	tx.OnCommit(func() { s.notify(m.ID) })
	return msgs, bytes, nil
}

func hasPrefix(k, prefix []byte) bool { return bytes.HasPrefix(k, prefix) }

// Keys.

func folderNameKey(mailboxID int64, name string) []byte {
	return append(id8(mailboxID), name...)
}

func msgKey(folderID int64, uid uint32) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, uint64(folderID))
	binary.BigEndian.PutUint32(k[8:], uid)
	return k
}

// retentionKey orders a domain's messages by received time. Times before
// 1970 are filed at 1970.
func retentionKey(domainID int64, received time.Time, folderID int64, uid uint32) []byte {
	k := make([]byte, 28)
	binary.BigEndian.PutUint64(k, uint64(domainID))
	binary.BigEndian.PutUint64(k[8:], unixKey(received))
	binary.BigEndian.PutUint64(k[16:], uint64(folderID))
	binary.BigEndian.PutUint32(k[24:], uid)
	return k
}

func unixKey(t time.Time) uint64 {
	if u := t.Unix(); u > 0 {
		return uint64(u)
	}
	return 0
}

// Message records: version 1, then uvarints blobID, size, received unix
// seconds (zig-zag varint), flag count, each flag as length + bytes, and
// the ModSeq as a uvarint when it is not 0. Records written before the
// ModSeq was kept end after the flags and decode with ModSeq 0; the next
// change to the message writes it (no rewrite of old records).
// Folder and UID are the key. About 15 bytes plus the flags, against ~120
// for JSON, and no reflection on the hot paths (listing, purge).

const msgRecordV1 = 1

func encodeMessage(m mailstore.Message) []byte {
	b := make([]byte, 0, 24+8*len(m.Flags))
	b = append(b, msgRecordV1)
	b = binary.AppendUvarint(b, uint64(m.BlobID))
	b = binary.AppendUvarint(b, uint64(m.Size))
	b = binary.AppendVarint(b, m.ReceivedAt.Unix())
	b = binary.AppendUvarint(b, uint64(len(m.Flags)))
	for _, f := range m.Flags {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	if m.ModSeq != 0 {
		b = binary.AppendUvarint(b, m.ModSeq)
	}
	return b
}

var errBadRecord = errors.New("corrupt message record")

func decodeMessage(k, v []byte) (mailstore.Message, error) {
	if len(k) != 12 || len(v) == 0 || v[0] != msgRecordV1 {
		return mailstore.Message{}, errBadRecord
	}
	m := mailstore.Message{
		FolderID: int64(binary.BigEndian.Uint64(k)),
		UID:      binary.BigEndian.Uint32(k[8:]),
	}
	p := v[1:]
	next := func() uint64 {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			p = nil
			return 0
		}
		p = p[n:]
		return x
	}
	blob := next()
	size := next()
	unix, n := binary.Varint(p)
	if n <= 0 {
		return mailstore.Message{}, errBadRecord
	}
	p = p[n:]
	nflags := next()
	if p == nil || nflags > uint64(len(p)) {
		return mailstore.Message{}, errBadRecord
	}
	m.BlobID, m.Size, m.ReceivedAt = int64(blob), int64(size), time.Unix(unix, 0).UTC()
	if nflags > 0 {
		m.Flags = make([]string, 0, nflags)
	}
	for range nflags {
		l := next()
		if p == nil || l > uint64(len(p)) {
			return mailstore.Message{}, errBadRecord
		}
		m.Flags = append(m.Flags, string(p[:l]))
		p = p[l:]
	}
	if len(p) > 0 {
		if m.ModSeq = next(); p == nil {
			return mailstore.Message{}, errBadRecord
		}
	}
	return m, nil
}

func unseen(m mailstore.Message) int64 {
	if mailstore.HasFlag(m.Flags, mailstore.FlagSeen) {
		return 0
	}
	return 1
}

// Folder names.

// createFolderTx adds a folder; ErrFolderExists, ErrTooManyFolders.
func createFolderTx(tx *bolt.Tx, mailboxID int64, name, specialUse string) (mailstore.Folder, error) {
	names := tx.Bucket(bMailboxFolders)
	key := folderNameKey(mailboxID, name)
	if names.Get(key) != nil {
		return mailstore.Folder{}, mailstore.ErrFolderExists
	}
	n := folderCount(tx, mailboxID)
	if n >= mailstore.MaxFolders {
		return mailstore.Folder{}, mailstore.ErrTooManyFolders
	}
	if err := tx.Bucket(bFolderCounts).Put(id8(mailboxID), u64(n+1)); err != nil {
		return mailstore.Folder{}, err
	}
	b := tx.Bucket(bFolders)
	id, err := nextID(b)
	if err != nil {
		return mailstore.Folder{}, err
	}
	f := mailstore.Folder{
		ID: id, MailboxID: mailboxID, Name: name, SpecialUse: specialUse,
		UIDValidity: uint32(id), UIDNext: 1,
	}
	if err := names.Put(key, id8(id)); err != nil {
		return mailstore.Folder{}, err
	}
	return f, putJSON(b, id8(id), f)
}

// folderCount is the number of an account's folders, from folder_counts.
func folderCount(tx *bolt.Tx, mailboxID int64) uint64 {
	if v := tx.Bucket(bFolderCounts).Get(id8(mailboxID)); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// mailTx is one write transaction of the mail plane. It caches the
// folders, mailboxes, domains and blob refcounts it changes and writes
// each once, in flush.
type mailTx struct {
	tx                                      *bolt.Tx
	folders, names, messages, blobs, refs   *bolt.Bucket
	retention, mailboxes, domains, transfer *bolt.Bucket

	fcache map[int64]*mailstore.Folder
	mcache map[int64]*mailstore.Mailbox
	dcache map[int64]*mailstore.Domain
	rcache map[int64]uint64         // blobID -> refcount
	xcache map[string]*monthFigures // transferKey -> a domain's month
	// touched are the accounts changed, to notify after commit.
	touched map[int64]struct{}
	// changes are the folder changes logged, in ModSeq order within each
	// folder, written by flush (mail_changes.go); keep is how many
	// records a folder's log keeps.
	changes []mailstore.Change
	keep    uint64
	// kcache are the keyword counts of the folders whose keywords the
	// transaction changes, kdropped the folders it deletes, keywords
	// their bucket once used, and maxKeywords the limit of each folder's
	// distinct keywords (mail_keywords.go).
	kcache      map[int64]*folderKeywords
	kdropped    map[int64]bool
	keywords    *bolt.Bucket
	maxKeywords int
}

// mailTx is newMailTx with the store's change log length.
func (s *Store) mailTx(tx *bolt.Tx) *mailTx {
	t := newMailTx(tx)
	t.keep = s.changeLogKeep
	t.maxKeywords = s.maxKeywords
	return t
}

func newMailTx(tx *bolt.Tx) *mailTx {
	return &mailTx{
		tx:        tx,
		folders:   tx.Bucket(bFolders),
		names:     tx.Bucket(bMailboxFolders),
		messages:  tx.Bucket(bMessages),
		blobs:     tx.Bucket(bBlobs),
		refs:      tx.Bucket(bBlobRefs),
		retention: tx.Bucket(bRetention),
		mailboxes: tx.Bucket(bMailboxes),
		domains:   tx.Bucket(bDomains),
		transfer:  tx.Bucket(bTransfer),
		fcache:    map[int64]*mailstore.Folder{},
		mcache:    map[int64]*mailstore.Mailbox{},
		dcache:    map[int64]*mailstore.Domain{},
		rcache:    map[int64]uint64{},
		xcache:    map[string]*monthFigures{},
		touched:   map[int64]struct{}{},
		keep:      mailstore.ChangeLogKeep,
		kcache:    map[int64]*folderKeywords{},
		kdropped:  map[int64]bool{},

		maxKeywords: mailstore.DefaultMaxKeywords,
	}
}

func (t *mailTx) mailbox(id int64) (*mailstore.Mailbox, error) {
	if m, ok := t.mcache[id]; ok {
		return m, nil
	}
	m := new(mailstore.Mailbox)
	if !getJSON(t.mailboxes, id8(id), m) {
		return nil, mailstore.ErrMailboxNotFound
	}
	t.mcache[id] = m
	return m, nil
}

func (t *mailTx) domain(id int64) (*mailstore.Domain, error) {
	if d, ok := t.dcache[id]; ok {
		return d, nil
	}
	d := new(mailstore.Domain)
	if !getJSON(t.domains, id8(id), d) {
		return nil, fmt.Errorf("domain %d: %w", id, mailstore.ErrDomainNotFound)
	}
	t.dcache[id] = d
	return d, nil
}

// monthFigures is a domain's transfer for a month as a transaction sees
// it; changed ones are written by flush.
type monthFigures struct {
	mailstore.Transfer
	changed bool
}

// transferFigures is a domain's transfer for a month, with this
// transaction's changes.
func (t *mailTx) transferFigures(domainID int64, month string) *monthFigures {
	key := string(transferKey(domainID, month))
	if x, ok := t.xcache[key]; ok {
		return x
	}
	x := &monthFigures{Transfer: mailstore.Transfer{Month: month}}
	getJSON(t.transfer, []byte(key), &x.Transfer)
	t.xcache[key] = x
	return x
}

// count adds to a domain's transfer for a month.
func (t *mailTx) count(domainID int64, month string, in, out int64) {
	x := t.transferFigures(domainID, month)
	x.InBytes += in
	x.OutBytes += out
	x.changed = true
}

// folder loads an account's folder by id; another account's folder is
// ErrFolderNotFound.
func (t *mailTx) folder(mailboxID, folderID int64) (*mailstore.Folder, error) {
	if f, ok := t.fcache[folderID]; ok {
		if f.MailboxID != mailboxID {
			return nil, mailstore.ErrFolderNotFound
		}
		return f, nil
	}
	f := new(mailstore.Folder)
	if !getJSON(t.folders, id8(folderID), f) || f.MailboxID != mailboxID {
		return nil, mailstore.ErrFolderNotFound
	}
	t.fcache[folderID] = f
	return f, nil
}

// specialFolder is an account's folder with special use use (RFC 6154),
// the first by id if there are several; ErrFolderNotFound if none.
func (t *mailTx) specialFolder(mailboxID int64, use string) (*mailstore.Folder, error) {
	var found *mailstore.Folder
	prefix := id8(mailboxID)
	c := t.names.Cursor()
	for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		if len(v) != 8 {
			continue
		}
		f, err := t.folder(mailboxID, int64(binary.BigEndian.Uint64(v)))
		if err != nil {
			return nil, err
		}
		if f.SpecialUse == use && (found == nil || f.ID < found.ID) {
			found = f
		}
	}
	if found == nil {
		return nil, mailstore.ErrFolderNotFound
	}
	return found, nil
}

func (t *mailTx) folderByName(mailboxID int64, name string) (*mailstore.Folder, error) {
	v := t.names.Get(folderNameKey(mailboxID, mailstore.CanonFolder(name)))
	if len(v) != 8 {
		return nil, mailstore.ErrFolderNotFound
	}
	return t.folder(mailboxID, int64(binary.BigEndian.Uint64(v)))
}

func (t *mailTx) message(folderID int64, uid uint32) (mailstore.Message, bool, error) {
	k := msgKey(folderID, uid)
	v := t.messages.Get(k)
	if v == nil {
		return mailstore.Message{}, false, nil
	}
	m, err := decodeMessage(k, v)
	return m, err == nil, err
}

// eachMessage calls fn for the folder's messages in UID order. fn must
// not change the messages bucket.
func (t *mailTx) eachMessage(folderID int64, fn func(mailstore.Message) error) error {
	return eachMessage(t.messages, folderID, fn)
}

func eachMessage(b *bolt.Bucket, folderID int64, fn func(mailstore.Message) error) error {
	prefix := id8(folderID)
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		m, err := decodeMessage(k, v)
		if err != nil {
			return fmt.Errorf("folder %d: %w", folderID, err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// ref changes a blob's refcount by delta.
func (t *mailTx) ref(blobID int64, delta int64) {
	n, ok := t.rcache[blobID]
	if !ok {
		if v := t.refs.Get(id8(blobID)); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
	}
	t.rcache[blobID] = uint64(int64(n) + delta)
}

// add files m (BlobID, Size, ReceivedAt, Flags) in f under the next UID
// and counts it on the folder, mailbox and domain. The caller takes the
// blob reference.
func (t *mailTx) add(f *mailstore.Folder, m mailstore.Message) (mailstore.Message, error) {
	mb, err := t.mailbox(f.MailboxID)
	if err != nil {
		return mailstore.Message{}, err
	}
	d, err := t.domain(mb.DomainID)
	if err != nil {
		return mailstore.Message{}, err
	}
	if err := t.reflag(f.ID, nil, m.Flags); err != nil {
		return mailstore.Message{}, err
	}
	m.FolderID, m.UID = f.ID, f.UIDNext
	m.ModSeq = f.HighestModSeq + 1 // what logChange gives the change
	f.UIDNext++
	if err := t.messages.Put(msgKey(f.ID, m.UID), encodeMessage(m)); err != nil {
		return mailstore.Message{}, err
	}
	if err := t.retention.Put(retentionKey(d.ID, m.ReceivedAt, f.ID, m.UID), id8(mb.ID)); err != nil {
		return mailstore.Message{}, err
	}
	f.Messages++
	f.Unseen += unseen(m)
	f.Size += m.Size
	mb.MessageCount++
	mb.UsedBytes += m.Size
	d.MessageCount++
	d.UsedBytes += m.Size
	t.touched[mb.ID] = struct{}{}
	t.logChange(f, mailstore.ChangeAdd, m)
	return m, nil
}

// remove deletes m from f and takes it off the counters; with free it
// also drops its blob reference (Move keeps it for the new message).
func (t *mailTx) remove(f *mailstore.Folder, m mailstore.Message, free bool) error {
	mb, err := t.mailbox(f.MailboxID)
	if err != nil {
		return err
	}
	d, err := t.domain(mb.DomainID)
	if err != nil {
		return err
	}
	if err := t.reflag(f.ID, m.Flags, nil); err != nil {
		return err
	}
	if err := t.drop(d.ID, m, free); err != nil {
		return err
	}
	f.Messages--
	f.Unseen -= unseen(m)
	f.Size -= m.Size
	mb.MessageCount--
	mb.UsedBytes -= m.Size
	d.MessageCount--
	d.UsedBytes -= m.Size
	t.touched[mb.ID] = struct{}{}
	t.logChange(f, mailstore.ChangeExpunge, m)
	return nil
}

// drop deletes a message record and its retention entry, and with free
// its blob reference; it changes no counter.
func (t *mailTx) drop(domainID int64, m mailstore.Message, free bool) error {
	if err := t.messages.Delete(msgKey(m.FolderID, m.UID)); err != nil {
		return err
	}
	if err := t.retention.Delete(retentionKey(domainID, m.ReceivedAt, m.FolderID, m.UID)); err != nil {
		return err
	}
	if free {
		t.ref(m.BlobID, -1)
	}
	return nil
}

// flush writes what the transaction changed.
func (t *mailTx) flush() error {
	if err := t.flushKeywords(); err != nil {
		return err
	}
	for id, f := range t.fcache {
		if err := putJSON(t.folders, id8(id), f); err != nil {
			return err
		}
	}
	for id, m := range t.mcache {
		if err := putJSON(t.mailboxes, id8(id), m); err != nil {
			return err
		}
	}
	for id, d := range t.dcache {
		if err := putJSON(t.domains, id8(id), d); err != nil {
			return err
		}
	}
	for key, x := range t.xcache {
		if !x.changed {
			continue
		}
		if err := putJSON(t.transfer, []byte(key), x.Transfer); err != nil {
			return err
		}
	}
	if err := t.flushChanges(); err != nil {
		return err
	}
	return t.flushRefs()
}

// flushRefs writes the changed refcounts and deletes the blobs no message
// names any more.
func (t *mailTx) flushRefs() error {
	for id, n := range t.rcache {
		if int64(n) <= 0 {
			if err := t.refs.Delete(id8(id)); err != nil {
				return err
			}
			if err := t.blobs.Delete(id8(id)); err != nil {
				return err
			}
			if err := t.deleteSummary(id); err != nil {
				return err
			}
			continue
		}
		if err := t.refs.Put(id8(id), u64(n)); err != nil {
			return err
		}
	}
	return nil
}

// touchedIDs lists the accounts changed.
func (t *mailTx) touchedIDs() []int64 {
	ids := make([]int64, 0, len(t.touched))
	for id := range t.touched {
		ids = append(ids, id)
	}
	return ids
}
