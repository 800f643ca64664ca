package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// rawSTS checks, in a closed store's file, that every MTA-STS policy has
// exactly one sts_expiry key, under its expiry, and that no key is left
// without its policy; it answers the domains stored.
func rawSTS(t *testing.T, dir string) []string {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("bolt.Open() = %v", err)
	}
	defer db.Close()
	var domains []string
	err = db.View(func(tx *bolt.Tx) error {
		keys := map[string][]byte{} // domain -> its expiry key
		if err := tx.Bucket([]byte("sts_expiry")).ForEach(func(k, _ []byte) error {
			d := string(k[8:])
			if _, ok := keys[d]; ok {
				t.Errorf("sts_expiry has two keys for %s", d)
			}
			keys[d] = bytes.Clone(k)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("sts")).ForEach(func(k, v []byte) error {
			domains = append(domains, string(k))
			var r struct{ Expires time.Time }
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			want := make([]byte, 8, 8+len(k))
			binary.BigEndian.PutUint64(want, uint64(r.Expires.UnixNano()))
			want = append(want, k...)
			if !bytes.Equal(keys[string(k)], want) {
				t.Errorf("policy of %s expires %v; its sts_expiry key is %x, want %x", k, r.Expires, keys[string(k)], want)
			}
			delete(keys, string(k))
			return nil
		}); err != nil {
			return err
		}
		for d := range keys {
			t.Errorf("sts_expiry names %s, which has no policy", d)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read sts buckets: %v", err)
	}
	return domains
}

// TestBoltSTSIndex: replacing a policy moves its sts_expiry key, pruning
// deletes both the policy and its key, and policies survive a restart.
func TestBoltSTSIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	policy := func(domain, id string, maxAge time.Duration) mailstore.STSPolicy {
		return mailstore.STSPolicy{Domain: domain, ID: id, Mode: "enforce", MX: []string{"mx." + domain},
			MaxAge: maxAge, Expires: now.Add(maxAge)}
	}
	for _, st := range []struct {
		name  string
		puts  []mailstore.STSPolicy
		at    time.Time
		want  []string
		valid map[string]string // domain -> id STSPolicy answers at `at`
	}{
		{"first policies", []mailstore.STSPolicy{policy("a.example", "1", time.Hour), policy("b.example", "1", 2*time.Hour)}, now,
			[]string{"a.example", "b.example"}, map[string]string{"a.example": "1", "b.example": "1"}},
		{"replaced, expiring later", []mailstore.STSPolicy{policy("a.example", "2", 3*time.Hour)}, now,
			[]string{"a.example", "b.example"}, map[string]string{"a.example": "2"}},
		{"replaced, expiring sooner", []mailstore.STSPolicy{policy("b.example", "2", 30*time.Minute)}, now,
			[]string{"a.example", "b.example"}, map[string]string{"b.example": "2"}},
		{"b.example pruned", []mailstore.STSPolicy{policy("c.example", "1", 4*time.Hour)}, now.Add(time.Hour),
			[]string{"a.example", "c.example"}, map[string]string{"a.example": "2", "c.example": "1"}},
	} {
		s := openBolt(t, dir)
		for _, p := range st.puts {
			if err := s.PutSTSPolicy(ctx, p, st.at); err != nil {
				t.Fatalf("%s: PutSTSPolicy(%s) = %v", st.name, p.Domain, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := rawSTS(t, dir); !slices.Equal(got, st.want) {
			t.Errorf("%s: policies stored %q, want %q", st.name, got, st.want)
		}
		s = openBolt(t, dir)
		for d, id := range st.valid {
			if p, err := s.STSPolicy(ctx, d, st.at); err != nil || p.ID != id {
				t.Errorf("%s: after a restart STSPolicy(%s) = %+v, %v; want id %s", st.name, d, p, err, id)
			}
		}
		s.Close()
	}
}

// TestBoltUpgradeSchema3: a schema 3 file (the store before MTA-STS
// policies were kept) opens, gains the policy buckets, keeps its queue,
// and stores policies.
func TestBoltUpgradeSchema3(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("queued"), ReceivedAt: at, SenderDomainID: u.DomainID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: u.DomainID, From: u.Email, To: []string{"x@r.example"}}}})
	if err != nil || len(res.Queued) != 1 {
		t.Fatalf("Deliver() = %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	asSchema(t, dir, 3, "sts", "sts_expiry", "folder_counts", "changes", "subscriptions")
	upgrade(t, dir)
	s = openBolt(t, dir)
	defer s.Close()
	if got, err := s.ClaimOutbound(ctx, at, time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 || got[0].ID != res.Queued[0] {
		t.Errorf("ClaimOutbound() after upgrade = %+v, %v; want the entry queued under schema 3", got, err)
	}
	if _, err := s.STSPolicy(ctx, "r.example", at); !errors.Is(err, mailstore.ErrSTSPolicyNotFound) {
		t.Errorf("STSPolicy() after upgrade = %v, want ErrSTSPolicyNotFound", err)
	}
	p := mailstore.STSPolicy{Domain: "r.example", ID: "1", Mode: "enforce", MX: []string{"mx.r.example"},
		MaxAge: time.Hour, Expires: at.Add(time.Hour)}
	if err := s.PutSTSPolicy(ctx, p, at); err != nil {
		t.Fatalf("PutSTSPolicy() after upgrade = %v", err)
	}
	if got, err := s.STSPolicy(ctx, "r.example", at); err != nil || got.ID != "1" {
		t.Errorf("STSPolicy() after a put = %+v, %v; want id 1", got, err)
	}
}

// TestBoltUpgradeSchema4: a schema 4 file (before folders were counted)
// gains folder_counts with each account's number of folders.
func TestBoltUpgradeSchema4(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	for _, name := range []string{"a", "a/b", "c"} {
		if _, err := s.CreateFolder(ctx, u.ID, name); err != nil {
			t.Fatalf("CreateFolder(%q) = %v", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	asSchema(t, dir, 4, "folder_counts", "changes", "subscriptions")
	upgrade(t, dir)
	var got uint64
	rawUpdate(t, dir, "read folder_counts", func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("folder_counts"))
		if b == nil {
			return errors.New("no folder_counts bucket")
		}
		if v := b.Get(binary.BigEndian.AppendUint64(nil, uint64(u.ID))); len(v) == 8 {
			got = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if want := uint64(len(mailstore.DefaultFolders) + 3); got != want {
		t.Errorf("folder count after upgrade = %d, want %d", got, want)
	}
}
