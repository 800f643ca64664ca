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

func verifyBolt(ctx context.Context, tx *bolt.Tx) ([]mailstore.Drift, error) {
	folders := map[int64]*mailstore.Folder{}
	if err := eachJSON(tx, bFolders, func(_ []byte, f *mailstore.Folder) error {
		folders[f.ID] = f
		return nil
	}); err != nil {
		return nil, err
	}
	perFolder := map[int64]*tally{}
	refs := map[int64]int64{} // blob id -> references found
	n := 0
	if err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m, err := decodeMessage(k, v)
		if err != nil {
			return fmt.Errorf("message %x: %w", k, err)
		}
		t := perFolder[m.FolderID]
		if t == nil {
			t = new(tally)
			perFolder[m.FolderID] = t
		}
		t.messages++
		t.unseen += unseen(m)
		t.size += m.Size
		t.maxUID = max(t.maxUID, m.UID)
		refs[m.BlobID]++
		return nil
	}); err != nil {
		return nil, err
	}
	if err := eachJSON(tx, bQueue, func(_ []byte, o *mailstore.Outbound) error {
		refs[o.BlobID]++
		return nil
	}); err != nil {
		return nil, err
	}

	var out []mailstore.Drift
	drift := func(object, field string, stored, recomputed int64) {
		if stored != recomputed {
			out = append(out, mailstore.Drift{Object: object, Field: field, Stored: stored, Recomputed: recomputed})
		}
	}

	// Folders, and what they add up to per mailbox.
	perMailbox := map[int64]*tally{}
	mailboxTally := func(id int64) *tally {
		t := perMailbox[id]
		if t == nil {
			t = new(tally)
			perMailbox[id] = t
		}
		return t
	}
	for _, id := range sortedKeys(folders) {
		f := folders[id]
		t := perFolder[id]
		if t == nil {
			t = new(tally)
		}
		obj := fmt.Sprintf("folder %d (mailbox %d, %s)", f.ID, f.MailboxID, f.Name)
		drift(obj, "messages", f.Messages, t.messages)
		drift(obj, "unseen", f.Unseen, t.unseen)
		drift(obj, "size", f.Size, t.size)
		if t.messages > 0 && f.UIDNext <= t.maxUID {
			drift(obj, "uid_next", int64(f.UIDNext), int64(t.maxUID)+1)
		}
		mt := mailboxTally(f.MailboxID)
		mt.messages += t.messages
		mt.size += t.size
		mt.folders++
	}
	for _, id := range sortedKeys(perFolder) {
		if _, ok := folders[id]; !ok {
			drift(fmt.Sprintf("folder %d (missing)", id), "messages", 0, perFolder[id].messages)
		}
	}

	// Mailboxes, and what they add up to per domain.
	perDomain := map[int64]*tally{}
	domainTally := func(id int64) *tally {
		t := perDomain[id]
		if t == nil {
			t = new(tally)
			perDomain[id] = t
		}
		return t
	}
	if err := eachJSON(tx, bMailboxes, func(_ []byte, m *mailstore.Mailbox) error {
		t := mailboxTally(m.ID)
		obj := fmt.Sprintf("mailbox %d (%s)", m.ID, m.Email)
		drift(obj, "message_count", m.MessageCount, t.messages)
		drift(obj, "used_bytes", m.UsedBytes, t.size)
		drift(obj, "folder_count", int64(folderCount(tx, m.ID)), t.folders)
		dt := domainTally(m.DomainID)
		dt.mailboxes++
		dt.messages += t.messages
		dt.size += t.size
		return nil
	}); err != nil {
		return nil, err
	}
	if err := eachJSON(tx, bAliases, func(_ []byte, a *mailstore.Alias) error {
		domainTally(a.DomainID).aliases++
		return nil
	}); err != nil {
		return nil, err
	}
	if err := eachJSON(tx, bDomains, func(_ []byte, d *mailstore.Domain) error {
		t := domainTally(d.ID)
		obj := fmt.Sprintf("domain %d (%s)", d.ID, d.Name)
		drift(obj, "mailbox_count", d.MailboxCount, t.mailboxes)
		drift(obj, "alias_count", d.AliasCount, t.aliases)
		drift(obj, "message_count", d.MessageCount, t.messages)
		drift(obj, "used_bytes", d.UsedBytes, t.size)
		return nil
	}); err != nil {
		return nil, err
	}

	// Bodies: the refcount against the references, and a body for every
	// reference.
	stored := map[int64]int64{}
	if err := tx.Bucket(bBlobRefs).ForEach(func(k, v []byte) error {
		if len(k) == 8 && len(v) == 8 {
			stored[int64(binary.BigEndian.Uint64(k))] = int64(binary.BigEndian.Uint64(v))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	bodies := tx.Bucket(bBlobs)
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
		return nil, err
	}
	ids := sortedKeys(stored)
	for id := range refs {
		if _, ok := stored[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		obj := fmt.Sprintf("blob %d", id)
		drift(obj, "refs", stored[id], refs[id])
		// A body is there if and only if something names it.
		drift(obj, "body present", b2i(bodies.Get(id8(id)) != nil), b2i(refs[id] > 0))
	}
	return out, nil
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
