package boltstore

// Verify of the bbolt store: every counter recomputed from the records it
// counts, in one read transaction (one snapshot, so that a delivery
// committing meanwhile cannot show as drift). It holds a few integers per
// folder, mailbox, domain and body in memory, never a body.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// tally is what a folder, mailbox or domain holds, recomputed.
type tally struct {
	messages, unseen, size int64
	maxUID                 uint32
	mailboxes, aliases     int64
	folders                int64
}

// Verify implements Verifier.
func (s *Store) Verify(ctx context.Context) ([]mailstore.Drift, error) {
	var out []mailstore.Drift
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = verifyBolt(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", s.db.Path(), err)
	}
	return out, nil
}

// verifyBolt recounts in four steps, each adding the drifts it finds:
// the messages and queue entries (what folders and bodies should say),
// the folders, the mailboxes and domains, the bodies.
func verifyBolt(ctx context.Context, tx *bolt.Tx) ([]mailstore.Drift, error) {
	v := &verifier{tx: tx, perMailbox: map[int64]*tally{}, perDomain: map[int64]*tally{}}
	if err := v.countMessages(ctx); err != nil {
		return nil, err
	}
	v.checkFolders()
	if err := v.checkMailboxesAndDomains(); err != nil {
		return nil, err
	}
	v.checkPartnerCounts()
	if err := v.checkBodies(); err != nil {
		return nil, err
	}
	return v.out, nil
}

// verifier is one Verify's recount: the tallies each step leaves to the
// next, and the drifts found.
type verifier struct {
	tx        *bolt.Tx
	folders   map[int64]*mailstore.Folder
	perFolder map[int64]*tally
	// refs counts the references found per blob id.
	refs       map[int64]int64
	perMailbox map[int64]*tally
	perDomain  map[int64]*tally
	out        []mailstore.Drift
}

func (v *verifier) drift(object, field string, stored, recomputed int64) {
	if stored != recomputed {
		v.out = append(v.out, mailstore.Drift{Object: object, Field: field, Stored: stored, Recomputed: recomputed})
	}
}

// tallyOf answers m's tally of id, made on first use.
func tallyOf(m map[int64]*tally, id int64) *tally {
	t := m[id]
	if t == nil {
		t = new(tally)
		m[id] = t
	}
	return t
}

// countMessages tallies the messages per folder and the references to
// each body from messages and queue entries.
func (v *verifier) countMessages(ctx context.Context) error {
	v.folders = map[int64]*mailstore.Folder{}
	if err := eachJSON(v.tx, bFolders, func(_ []byte, f *mailstore.Folder) error {
		v.folders[f.ID] = f
		return nil
	}); err != nil {
		return err
	}
	v.perFolder = map[int64]*tally{}
	v.refs = map[int64]int64{}
	n := 0
	if err := v.tx.Bucket(bMessages).ForEach(func(k, val []byte) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m, err := decodeMessage(k, val)
		if err != nil {
			return fmt.Errorf("message %x: %w", k, err)
		}
		t := tallyOf(v.perFolder, m.FolderID)
		t.messages++
		t.unseen += unseen(m)
		t.size += m.Size
		t.maxUID = max(t.maxUID, m.UID)
		v.refs[m.BlobID]++
		return nil
	}); err != nil {
		return err
	}
	return eachJSON(v.tx, bQueue, func(_ []byte, o *mailstore.Outbound) error {
		v.refs[o.BlobID]++
		return nil
	})
}

// checkFolders compares each folder's counters with its messages, and
// adds them up per mailbox.
func (v *verifier) checkFolders() {
	for _, id := range sortedKeys(v.folders) {
		f := v.folders[id]
		t := v.perFolder[id]
		if t == nil {
			t = new(tally)
		}
		obj := fmt.Sprintf("folder %d (mailbox %d, %s)", f.ID, f.MailboxID, f.Name)
		v.drift(obj, "messages", f.Messages, t.messages)
		v.drift(obj, "unseen", f.Unseen, t.unseen)
		v.drift(obj, "size", f.Size, t.size)
		if t.messages > 0 && f.UIDNext <= t.maxUID {
			v.drift(obj, "uid_next", int64(f.UIDNext), int64(t.maxUID)+1)
		}
		mt := tallyOf(v.perMailbox, f.MailboxID)
		mt.messages += t.messages
		mt.size += t.size
		mt.folders++
	}
	for _, id := range sortedKeys(v.perFolder) {
		if _, ok := v.folders[id]; !ok {
			v.drift(fmt.Sprintf("folder %d (missing)", id), "messages", 0, v.perFolder[id].messages)
		}
	}
}

// checkMailboxesAndDomains compares each mailbox's counters with its
// folders, and each domain's with its mailboxes and aliases.
func (v *verifier) checkMailboxesAndDomains() error {
	tx := v.tx
	if err := eachJSON(tx, bMailboxes, func(_ []byte, m *mailstore.Mailbox) error {
		t := tallyOf(v.perMailbox, m.ID)
		obj := fmt.Sprintf("mailbox %d (%s)", m.ID, m.Email)
		v.drift(obj, "message_count", m.MessageCount, t.messages)
		v.drift(obj, "used_bytes", m.UsedBytes, t.size)
		v.drift(obj, "folder_count", int64(folderCount(tx, m.ID)), t.folders)
		dt := tallyOf(v.perDomain, m.DomainID)
		dt.mailboxes++
		dt.messages += t.messages
		dt.size += t.size
		return nil
	}); err != nil {
		return err
	}
	if err := eachJSON(tx, bAliases, func(_ []byte, a *mailstore.Alias) error {
		tallyOf(v.perDomain, a.DomainID).aliases++
		return nil
	}); err != nil {
		return err
	}
	return eachJSON(tx, bDomains, func(_ []byte, d *mailstore.Domain) error {
		t := tallyOf(v.perDomain, d.ID)
		obj := fmt.Sprintf("domain %d (%s)", d.ID, d.Name)
		v.drift(obj, "mailbox_count", d.MailboxCount, t.mailboxes)
		v.drift(obj, "alias_count", d.AliasCount, t.aliases)
		v.drift(obj, "message_count", d.MessageCount, t.messages)
		v.drift(obj, "used_bytes", d.UsedBytes, t.size)
		return nil
	})
}

// checkPartnerCounts compares partner_counts with the partner indexes'
// keys.
func (v *verifier) checkPartnerCounts() {
	want := countPartnerIndexes(v.tx)
	have := map[string]uint64{}
	v.tx.Bucket(bPartnerCounts).ForEach(func(k, val []byte) error {
		if len(val) == 8 {
			have[string(k)] = binary.BigEndian.Uint64(val)
		}
		return nil
	})
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range have {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		if len(k) < 8 {
			continue
		}
		field := map[string]string{"partner_domains": "domain_count", "partner_mailboxes": "mailbox_count", "partner_aliases": "alias_count"}[k[8:]]
		if field == "" {
			field = k[8:]
		}
		v.drift(fmt.Sprintf("partner %d", binary.BigEndian.Uint64([]byte(k[:8]))), field, int64(have[k]), int64(want[k]))
	}
}

// checkBodies compares each body's refcount with the references found,
// and checks there is a body for every reference and none without.
func (v *verifier) checkBodies() error {
	stored := map[int64]int64{}
	if err := v.tx.Bucket(bBlobRefs).ForEach(func(k, val []byte) error {
		if len(k) == 8 && len(val) == 8 {
			stored[int64(binary.BigEndian.Uint64(k))] = int64(binary.BigEndian.Uint64(val))
		}
		return nil
	}); err != nil {
		return err
	}
	bodies := v.tx.Bucket(bBlobs)
	if err := bodies.ForEach(func(k, _ []byte) error {
		if len(k) != 8 {
			return nil
		}
		id := int64(binary.BigEndian.Uint64(k))
		if _, ok := stored[id]; !ok {
			stored[id] = 0 // a body with no refcount: counted as 0
		}
		return nil
	}); err != nil {
		return err
	}
	ids := sortedKeys(stored)
	for id := range v.refs {
		if _, ok := stored[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		obj := fmt.Sprintf("blob %d", id)
		v.drift(obj, "refs", stored[id], v.refs[id])
		// A body is there if and only if something names it.
		v.drift(obj, "body present", b2i(bodies.Get(id8(id)) != nil), b2i(v.refs[id] > 0))
	}
	return nil
}

func sortedKeys[V any](m map[int64]V) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
