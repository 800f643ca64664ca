package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// rawQueue opens the closed store's file and checks the queue's indexes
// against its entries: each entry has exactly one index key, in queue_held
// under its domain when held, else in queue_due under its NextAttempt. It
// answers the entries, the blobs and the sum of the blob refcounts.
func rawQueue(t *testing.T, dir string) (entries, blobs, refs int) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("bolt.Open() = %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		due, held := map[int64]bool{}, map[int64]bool{}
		tx.Bucket([]byte("queue_due")).ForEach(func(k, _ []byte) error {
			due[int64(binary.BigEndian.Uint64(k[8:]))] = true
			return nil
		})
		tx.Bucket([]byte("queue_held")).ForEach(func(k, _ []byte) error {
			held[int64(binary.BigEndian.Uint64(k[8:]))] = true
			return nil
		})
		if err := tx.Bucket([]byte("queue")).ForEach(func(k, v []byte) error {
			entries++
			var o mailstore.Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return err
			}
			switch {
			case o.Held && (!held[o.ID] || due[o.ID]):
				t.Errorf("held entry %d: in queue_held %v, in queue_due %v; want only held", o.ID, held[o.ID], due[o.ID])
			case !o.Held && (held[o.ID] || !due[o.ID]):
				t.Errorf("entry %d: in queue_held %v, in queue_due %v; want only due", o.ID, held[o.ID], due[o.ID])
			}
			if !o.Held {
				key := make([]byte, 16)
				binary.BigEndian.PutUint64(key, uint64(o.NextAttempt.UnixNano()))
				binary.BigEndian.PutUint64(key[8:], uint64(o.ID))
				if tx.Bucket([]byte("queue_due")).Get(key) == nil {
					t.Errorf("entry %d: no queue_due key for its NextAttempt %v", o.ID, o.NextAttempt)
				}
			}
			if tx.Bucket([]byte("blobs")).Get(binary.BigEndian.AppendUint64(nil, uint64(o.BlobID))) == nil {
				t.Errorf("entry %d: blob %d missing", o.ID, o.BlobID)
			}
			return nil
		}); err != nil {
			return err
		}
		if len(due)+len(held) != entries {
			t.Errorf("queue indexes hold %d + %d keys for %d entries", len(due), len(held), entries)
		}
		blobs = tx.Bucket([]byte("blobs")).Stats().KeyN
		return tx.Bucket([]byte("blob_refs")).ForEach(func(k, v []byte) error {
			refs += int(binary.BigEndian.Uint64(v))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries, blobs, refs
}

// TestBoltQueueBlobRefs: a body is referenced by its local copies and its
// queue entries alike, and goes with the last of them.
func TestBoltQueueBlobRefs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	d, err := s.DomainByName(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("out"), ReceivedAt: at, MailboxIDs: []int64{u.ID},
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: d.ID, To: []string{"x@r1.example", "y@r2.example"}}}})
	if err != nil || len(res.Queued) != 2 {
		t.Fatalf("Deliver() = %+v, %v", res, err)
	}
	steps := []struct {
		name                 string
		do                   func() error
		entries, blobs, refs int
	}{
		{"delivered", func() error { return nil }, 2, 1, 3},
		{"local copy expunged", func() error {
			inbox, err := s.Folder(ctx, u.ID, "INBOX")
			if err != nil {
				return err
			}
			_, err = s.Expunge(ctx, u.ID, inbox.ID, []uint32{1})
			return err
		}, 2, 1, 2},
		{"one entry deferred", func() error {
			_, err := s.RecordAttempt(ctx, res.Queued[0], mailstore.Attempt{Now: at, Deferred: "421", NextAttempt: at.Add(time.Hour)})
			return err
		}, 2, 1, 2},
		{"one entry done", func() error {
			_, err := s.RecordAttempt(ctx, res.Queued[1], mailstore.Attempt{Now: at, Delivered: []string{"y@r2.example"}})
			return err
		}, 1, 1, 1},
		{"last entry failed", func() error {
			_, err := s.RecordAttempt(ctx, res.Queued[0], mailstore.Attempt{Now: at, Failed: map[string]string{"x@r1.example": "550"}})
			return err
		}, 0, 0, 0},
	}
	for _, st := range steps {
		if s == nil {
			s = openBolt(t, dir)
		}
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = nil
		if e, b, r := rawQueue(t, dir); e != st.entries || b != st.blobs || r != st.refs {
			t.Errorf("%s: raw = %d entries, %d blobs, %d refs; want %d, %d, %d", st.name, e, b, r, st.entries, st.blobs, st.refs)
		}
	}
}

// rawUpdate changes a closed store's file directly, in one bbolt
// transaction: the tests make it look as an earlier version wrote it.
func rawUpdate(t *testing.T, dir, what string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatalf("%s: %v, %v", what, err, cerr)
	}
}

// asSchema makes a closed store's file look as schema v wrote it: without
// the buckets later schemas added, and version v.
func asSchema(t *testing.T, dir string, v uint64, laterBuckets ...string) {
	t.Helper()
	rawUpdate(t, dir, fmt.Sprintf("make a schema %d file", v), func(tx *bolt.Tx) error {
		for _, b := range laterBuckets {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	writeSchema(t, filepath.Join(dir, boltstore.FileName), v)
}

// upgrade opens and closes the store in dir, which migrates it, and
// checks that the file is then at the latest schema.
func upgrade(t *testing.T, dir string) {
	t.Helper()
	openBolt(t, dir).Close()
	if got := readSchema(t, filepath.Join(dir, boltstore.FileName)); got != 9 {
		t.Errorf("schema after upgrade = %d, want 9", got)
	}
}

// emptyValues sets every value of the buckets to empty, as before they
// held anything.
func emptyValues(tx *bolt.Tx, buckets ...string) error {
	for _, name := range buckets {
		b := tx.Bucket([]byte(name))
		var keys [][]byte
		b.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
		for _, k := range keys {
			if err := b.Put(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestBoltQueueRestart: the queue, held entries, leases, transfer figures
// and DKIM keys survive a restart, and work on from where they were.
func TestBoltQueueRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, pid, u, _ := boltMailFixture(t, dir)
	d, err := s.DomainByName(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	keys := []mailstore.DKIMKey{{Selector: "s1", Algorithm: "ed25519", Private: []byte{1, 2}, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := s.EnsureDKIMKeys(ctx, d.ID, keys); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	deliver := func(body string, to ...string) int64 {
		t.Helper()
		res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: now, MailboxIDs: []int64{u.ID}, SenderDomainID: d.ID,
			Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, From: u.Email, To: to}}})
		if err != nil || len(res.Queued) != 1 {
			t.Fatalf("Deliver(%s) = %+v, %v", body, res, err)
		}
		return res.Queued[0]
	}
	leased := deliver("leased", "a@r.example", "b@r.example")
	if got, err := s.ClaimOutbound(ctx, now, 10*time.Minute, 1, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != leased {
		t.Fatalf("ClaimOutbound() = %+v, %v", got, err)
	}
	if _, err := s.RecordAttempt(ctx, leased, mailstore.Attempt{Now: now, Delivered: []string{"a@r.example"}, Deferred: "451", NextAttempt: now.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	due := deliver("due", "c@r.example")
	// A cap of 0: the next forward is held.
	if _, err := s.SetTransferCap(ctx, pid, "example.com", 0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("held"), ReceivedAt: now,
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: d.ID, To: []string{"h@r.example"}}}})
	if err != nil || len(res.Queued) != 1 {
		t.Fatalf("Deliver(held) = %+v, %v", res, err)
	}
	held := res.Queued[0]
	before, _, err := s.OutboundEntries(ctx, mailstore.Page{})
	if err != nil {
		t.Fatal(err)
	}
	xBefore, err := s.Transfer(ctx, d.ID, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if e, b, r := rawQueue(t, dir); e != 3 || b != 3 || r != 5 {
		t.Errorf("raw = %d entries, %d blobs, %d refs; want 3, 3, 5", e, b, r)
	}

	s = openBolt(t, dir)
	defer s.Close()
	after, n, err := s.OutboundEntries(ctx, mailstore.Page{})
	if err != nil || n != 3 {
		t.Fatalf("OutboundEntries() after restart = %d, %v; want 3", n, err)
	}
	if a, b := jsonOf(t, after), jsonOf(t, before); a != b {
		t.Errorf("OutboundEntries() after restart = %s, want %s", a, b)
	}
	if x, err := s.Transfer(ctx, d.ID, "2026-11"); err != nil || x != xBefore {
		t.Errorf("Transfer() after restart = %+v, %v; want %+v", x, err, xBefore)
	}
	if got, err := s.DKIMKeys(ctx, d.ID); err != nil || len(got) != 1 || got[0].Selector != "s1" {
		t.Errorf("DKIMKeys() after restart = %+v, %v", got, err)
	}
	if got, err := s.ClaimOutbound(ctx, now.Add(time.Minute), time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != due {
		t.Errorf("ClaimOutbound() after restart = %+v, %v; want only %d (the other waits, one is held)", got, err, due)
	}
	if _, err := s.RecordAttempt(ctx, due, mailstore.Attempt{Now: now, Delivered: []string{"c@r.example"}}); err != nil {
		t.Errorf("RecordAttempt(%d) after restart = %v", due, err)
	}
	if got, err := s.ClaimOutbound(ctx, now.Add(10*time.Minute), time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != leased ||
		!slices.Equal(got[0].Pending(), []string{"b@r.example"}) {
		t.Errorf("ClaimOutbound(at its next attempt) = %+v, %v; want %d with b pending", got, err, leased)
	}
	if _, err := s.SetTransferCap(ctx, pid, "example.com", 10); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ReleaseHeld(ctx, now.Add(time.Hour)); err != nil || n != 1 {
		t.Errorf("ReleaseHeld() after restart = %d, %v; want 1", n, err)
	}
	if b, err := s.OutboundBody(ctx, held); err != nil || string(b) != "held" {
		t.Errorf("OutboundBody(held) after restart = %q, %v", b, err)
	}
	// Ids go on.
	if id := deliver("next", "d@r.example"); id <= held {
		t.Errorf("queue id after restart = %d, want above %d", id, held)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBoltUpgradeSchema1: a schema 1 file (the store before the queue)
// opens, gains the queue and DKIM buckets, keeps its data, and queues.
func TestBoltUpgradeSchema1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("from v1"), ReceivedAt: at, MailboxIDs: []int64{u.ID}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it the file schema 1 wrote: the same buckets but those of the
	// queue and DKIM keys, and version 1.
	asSchema(t, dir, 1, "queue", "queue_due", "queue_held", "dkim", "queue_domain", "sts", "sts_expiry", "folder_counts", "changes", "subscriptions")
	upgrade(t, dir)
	s = openBolt(t, dir)
	defer s.Close()
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Body(ctx, u.ID, inbox.ID, 1); err != nil || string(b) != "from v1" {
		t.Errorf("Body() after upgrade = %q, %v; want the message of schema 1", b, err)
	}
	d, err := s.DomainByName(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	if x, err := s.Transfer(ctx, d.ID, "2026-11"); err != nil || x.InBytes != int64(len("from v1")) {
		t.Errorf("Transfer() after upgrade = %+v, %v; want the inbound bytes of schema 1", x, err)
	}
	if keys, err := s.DKIMKeys(ctx, d.ID); err != nil || len(keys) != 0 {
		t.Errorf("DKIMKeys() after upgrade = %+v, %v; want none", keys, err)
	}
	keys := []mailstore.DKIMKey{{Selector: "s1", Algorithm: "ed25519", Private: []byte{1}, CreatedAt: at}}
	if got, err := s.EnsureDKIMKeys(ctx, d.ID, keys); err != nil || len(got) != 1 {
		t.Errorf("EnsureDKIMKeys() after upgrade = %+v, %v; want the key", got, err)
	}
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("to v2"), ReceivedAt: at, SenderDomainID: d.ID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, To: []string{"x@r.example"}}}})
	if err != nil || len(res.Queued) != 1 {
		t.Fatalf("Deliver(relay) after upgrade = %+v, %v", res, err)
	}
	if got, err := s.ClaimOutbound(ctx, at, time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != res.Queued[0] {
		t.Errorf("ClaimOutbound() after upgrade = %+v, %v", got, err)
	}
}

// TestBoltClaimSpreadOldIndex: queue_due values written before they named
// the destination (nil) are read from the entry, so ClaimOptions still
// apply to mail queued by an earlier version.
func TestBoltClaimSpreadOldIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	d, err := s.DomainByName(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []int64
	for i, to := range []string{"a@slow.example", "b@slow.example", "c@fast.example"} {
		res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("m"), ReceivedAt: now.Add(time.Duration(i) * time.Second), SenderDomainID: d.ID,
			Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, From: u.Email, To: []string{to}}}})
		if err != nil || len(res.Queued) != 1 {
			t.Fatalf("Deliver(%s) = %+v, %v", to, res, err)
		}
		ids = append(ids, res.Queued[0])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, dir, "rewriting queue_due", func(tx *bolt.Tx) error {
		tx.Bucket([]byte("queue_due")).ForEach(func(k, v []byte) error {
			if len(v) == 0 {
				t.Errorf("queue_due value of %x is empty, want the destination", k)
			}
			return nil
		})
		return emptyValues(tx, "queue_due")
	})
	s = openBolt(t, dir)
	defer s.Close()
	got, err := s.ClaimOutbound(ctx, now.Add(time.Minute), time.Minute, 10, mailstore.ClaimOptions{Skip: []string{"slow.example"}})
	if err != nil || len(got) != 1 || got[0].ID != ids[2] {
		t.Errorf("ClaimOutbound(Skip slow.example) over old index values = %+v, %v; want only %d", got, err, ids[2])
	}
}

// TestBoltMailboxesOldIndex: mailbox index keys written before they held
// the list entry (empty values) are listed from the mailbox records.
func TestBoltMailboxesOldIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, pid, u, v := boltMailFixture(t, dir)
	want, n, err := s.Mailboxes(ctx, pid, 0, mailstore.Page{})
	if err != nil || n != 2 || len(want) != 2 || want[0] != u.Entry() || want[1] != v.Entry() {
		t.Fatalf("Mailboxes() = %+v, %d, %v; want the entries of %s and %s", want, n, err, u.Email, v.Email)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, dir, "emptying the index values", func(tx *bolt.Tx) error {
		return emptyValues(tx, "partner_mailboxes", "domain_mailboxes")
	})
	s = openBolt(t, dir)
	defer s.Close()
	for _, domainID := range []int64{0, u.DomainID} {
		got, n, err := s.Mailboxes(ctx, pid, domainID, mailstore.Page{})
		if err != nil || n != 2 || jsonOf(t, got) != jsonOf(t, want) {
			t.Errorf("Mailboxes(domain %d) over old index values = %+v, %d, %v; want %+v", domainID, got, n, err, want)
		}
	}
}

// TestBoltDeleteOutboundFreesBody: deleting the last entry that names a
// body drops the body.
func TestBoltDeleteOutboundFreesBody(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("gone"), ReceivedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), SenderDomainID: u.DomainID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: u.DomainID, From: u.Email, To: []string{"a@r.example", "b@s.example"}}}})
	if err != nil || len(res.Queued) != 2 {
		t.Fatalf("Deliver() = %+v, %v", res, err)
	}
	for _, id := range res.Queued {
		if _, err := s.DeleteOutbound(ctx, id); err != nil {
			t.Fatalf("DeleteOutbound(%d) = %v", id, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if e, b, r := rawQueue(t, dir); e != 0 || b != 0 || r != 0 {
		t.Errorf("raw after deleting both entries = %d entries, %d blobs, %d refs; want none", e, b, r)
	}
}

// TestBoltUpgradeSchema2: a schema 2 file with queued mail gains the
// queue's index by domain, filled from the entries it holds, so that a
// resume finds the domain's deferred mail.
func TestBoltUpgradeSchema2(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("deferred"), ReceivedAt: at, SenderDomainID: u.DomainID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: u.DomainID, From: u.Email, To: []string{"x@r.example"}}}})
	if err != nil || len(res.Queued) != 1 {
		t.Fatalf("Deliver() = %+v, %v", res, err)
	}
	id := res.Queued[0]
	if _, err := s.RecordAttempt(ctx, id, mailstore.Attempt{Now: at, Deferred: "451 suspended", NextAttempt: at.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	asSchema(t, dir, 2, "queue_domain", "sts", "sts_expiry", "folder_counts", "changes", "subscriptions")
	upgrade(t, dir)
	s = openBolt(t, dir)
	defer s.Close()
	if n, err := s.FlushOutboundDomain(ctx, u.DomainID, at); err != nil || n != 1 {
		t.Errorf("FlushOutboundDomain() after upgrade = %d, %v; want the entry queued under schema 2", n, err)
	}
	if got, err := s.ClaimOutbound(ctx, at, time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != id {
		t.Errorf("ClaimOutbound() after the flush = %+v, %v; want entry %d", got, err, id)
	}
}
