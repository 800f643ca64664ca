package storecopy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

const srsSecret = "0123456789abcdef0123456789abcdef"

// populate fills a bbolt store in dir with one of everything a copy must
// carry, through the Store interface, and closes it.
func populate(t *testing.T, dir string) {
	t.Helper()
	st := openBolt(t, dir)
	defer st.Close()
	fill(t, st)
	if err := os.WriteFile(filepath.Join(dir, mailstore.SRSKeyFile), []byte(srsSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fill makes one of everything through the Store interface.
func fill(t *testing.T, st mailstore.Store) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p1, err := st.CreatePartner(ctx, "acme", t0)
	must(err)
	p2, err := st.CreatePartner(ctx, "globex", t0.Add(time.Minute))
	must(err)
	five := int64(5)
	_, err = st.SetPartnerLimits(ctx, p2.ID, mailstore.PartnerLimits{MaxDomains: &five})
	must(err)
	k1, err := st.AddAPIKey(ctx, p1.ID, mailstore.APIKey{Lookup: "look1", Prefix: "mh_look1", SecretHash: []byte{1, 2, 3, 0, 255}, CreatedAt: t0})
	must(err)
	_, err = st.AddAPIKey(ctx, p2.ID, mailstore.APIKey{Lookup: "look2", Prefix: "mh_look2", SecretHash: []byte("hash2"), CreatedAt: t0})
	must(err)
	_, err = st.RevokeAPIKey(ctx, k1.ID, t0.Add(time.Hour))
	must(err)
	plan := mailstore.Plan{Name: "pro", QuotaMB: 100, RetentionDays: 30, TransferMonthlyMB: 1000}
	keys := []mailstore.DKIMKey{
		{Selector: "ed1", Algorithm: "ed25519", Private: []byte{1, 2, 3}, CreatedAt: t0},
		{Selector: "rsa1", Algorithm: "rsa", Private: bytes.Repeat([]byte{9}, 1200), CreatedAt: t0},
	}
	da, err := st.CreateDomain(ctx, p1.ID, mailstore.NewDomain{Name: "a.example", Plan: plan, MaxMailboxes: 10, MaxAliases: 10, DKIMKeys: keys}, t0)
	must(err)
	db, err := st.CreateDomain(ctx, p2.ID, mailstore.NewDomain{Name: "b.example", Plan: plan}, t0)
	must(err)
	_, err = st.SetSuspended(ctx, p2.ID, "b.example", true)
	must(err)
	// A deleted domain leaves a gap in the ids and a sequence ahead of them.
	_, err = st.CreateDomain(ctx, p2.ID, mailstore.NewDomain{Name: "gone.example", Plan: plan}, t0)
	must(err)
	must(st.DeleteDomain(ctx, p2.ID, "gone.example", false))

	m1, err := st.CreateMailbox(ctx, p1.ID, "a.example", "one@a.example", "$argon2id$one", t0)
	must(err)
	m2, err := st.CreateMailbox(ctx, p1.ID, "a.example", "two@a.example", "$argon2id$two", t0)
	must(err)
	_, err = st.CreateMailbox(ctx, p2.ID, "b.example", "three@b.example", "$argon2id$three", t0)
	must(err)
	must(st.RecordLogin(ctx, m1.ID, t0.Add(2*time.Hour)))
	_, err = st.SetQuota(ctx, p1.ID, "two@a.example", 7)
	must(err)
	_, err = st.CreateAlias(ctx, p1.ID, "a.example", "info@a.example", "one@a.example", t0)
	must(err)
	_, err = st.CreateAlias(ctx, p1.ID, "a.example", "@a.example", "two@a.example", t0)
	must(err)
	work, err := st.CreateFolder(ctx, m1.ID, "Work/Projects")
	must(err)
	// Subscriptions: one of a folder, one of no folder, one unsubscribed.
	must(st.Subscribe(ctx, m1.ID, "Work/Projects"))
	must(st.Subscribe(ctx, m1.ID, "Gone/But/Subscribed"))
	must(st.Unsubscribe(ctx, m2.ID, "Junk"))
	// A folder made and deleted: its UIDVALIDITY must not come back.
	_, err = st.CreateFolder(ctx, m2.ID, "Tmp")
	must(err)
	must(st.DeleteFolder(ctx, m2.ID, "Tmp"))

	// One body for two recipients and a queue entry.
	res, err := st.Deliver(ctx, mailstore.Delivery{
		Body: []byte("Subject: shared\r\n\r\nhello both\r\n"), ReceivedAt: t0,
		MailboxIDs: []int64{m1.ID, m2.ID}, SenderDomainID: da.ID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: da.ID, From: "one@a.example", To: []string{"x@remote.example"}}},
	})
	must(err)
	if len(res.Delivered) != 2 || len(res.Queued) != 1 {
		t.Fatalf("Deliver = %+v", res)
	}
	_, err = st.Deliver(ctx, mailstore.Delivery{Body: []byte("second"), ReceivedAt: t0.Add(time.Minute), MailboxIDs: []int64{m1.ID}})
	must(err)
	_, err = st.Deliver(ctx, mailstore.Delivery{Body: []byte("bounce"), ReceivedAt: t0.Add(time.Minute),
		Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"y@far.example"}}}})
	must(err)
	inbox, err := st.Folder(ctx, m1.ID, "INBOX")
	must(err)
	_, err = st.SetFlags(ctx, m1.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`, "$Label1"})
	must(err)
	_, err = st.Copy(ctx, m1.ID, inbox.ID, []uint32{1}, work.ID)
	must(err)
	_, err = st.Append(ctx, m1.ID, work.ID, []byte("appended"), []string{`\Draft`}, t0.Add(time.Hour))
	must(err)
	// An expunge leaves UIDNEXT above the UIDs that remain.
	_, err = st.Expunge(ctx, m1.ID, work.ID, []uint32{2})
	must(err)
	claimed, err := st.ClaimOutbound(ctx, t0.Add(time.Hour), time.Minute, 1, mailstore.ClaimOptions{})
	must(err)
	if len(claimed) != 1 {
		t.Fatalf("ClaimOutbound = %d entries", len(claimed))
	}
	_, err = st.RecordAttempt(ctx, claimed[0].ID, mailstore.Attempt{Now: t0.Add(time.Hour), Deferred: "451 try later", NextAttempt: t0.Add(2 * time.Hour)})
	must(err)
	must(st.PutSTSPolicy(ctx, mailstore.STSPolicy{Domain: "remote.example", ID: "20260314", Mode: "enforce",
		MX: []string{"mx1.remote.example", "*.remote.example"}, MaxAge: 86400 * time.Second, Expires: t0.Add(24 * time.Hour)}, t0))
	_ = db
	c, ok := st.(mailstore.Cluster)
	if !ok {
		t.Fatalf("%T is not a mailstore.Cluster", st)
	}
	if v, err := c.Setting(ctx, "shared_key", func() (string, error) { return "v1", nil }); err != nil || v != "v1" {
		t.Fatalf("Setting = %q, %v", v, err)
	}
}

// state is everything a store answers through the Store interface.
type state struct {
	Partners  []mailstore.Partner
	Keys      map[int64][]mailstore.APIKey
	Domains   map[int64][]mailstore.Domain
	DKIM      map[int64][]mailstore.DKIMKey
	Transfer  map[int64]mailstore.Transfer
	Mailboxes map[int64][]mailstore.Mailbox
	Aliases   map[int64][]mailstore.Alias
	Folders   map[int64][]mailstore.Folder
	Messages  map[int64][]mailstore.Message
	Bodies    map[string]string
	Queue     []mailstore.Outbound
	QBodies   map[int64]string
	STS       mailstore.STSPolicy
}

func readState(t *testing.T, st mailstore.Store) state {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s := state{Keys: map[int64][]mailstore.APIKey{}, Domains: map[int64][]mailstore.Domain{}, DKIM: map[int64][]mailstore.DKIMKey{},
		Transfer: map[int64]mailstore.Transfer{}, Mailboxes: map[int64][]mailstore.Mailbox{}, Aliases: map[int64][]mailstore.Alias{},
		Folders: map[int64][]mailstore.Folder{}, Messages: map[int64][]mailstore.Message{}, Bodies: map[string]string{}, QBodies: map[int64]string{}}
	var err error
	s.Partners, err = st.Partners(ctx)
	must(err)
	for _, p := range s.Partners {
		s.Keys[p.ID], err = st.APIKeys(ctx, p.ID)
		must(err)
		s.Domains[p.ID], _, err = st.Domains(ctx, p.ID, mailstore.Page{})
		must(err)
		for _, d := range s.Domains[p.ID] {
			s.DKIM[d.ID], err = st.DKIMKeys(ctx, d.ID)
			must(err)
			s.Transfer[d.ID], err = st.Transfer(ctx, d.ID, mailstore.Month(t0))
			must(err)
		}
		entries, _, err := st.Mailboxes(ctx, p.ID, 0, mailstore.Page{})
		must(err)
		for _, e := range entries {
			m, err := st.Mailbox(ctx, p.ID, e.Email)
			must(err)
			s.Mailboxes[p.ID] = append(s.Mailboxes[p.ID], m)
			fs, err := st.Folders(ctx, m.ID)
			must(err)
			s.Folders[m.ID] = fs
			for _, f := range fs {
				ms, err := st.Messages(ctx, m.ID, f.ID)
				must(err)
				s.Messages[f.ID] = ms
				for _, msg := range ms {
					b, err := st.Body(ctx, m.ID, f.ID, msg.UID)
					must(err)
					s.Bodies[fmt.Sprintf("%s/%s/%d", m.Email, f.Name, msg.UID)] = string(b)
				}
			}
		}
		s.Aliases[p.ID], _, err = st.Aliases(ctx, p.ID, 0, mailstore.Page{})
		must(err)
	}
	s.Queue, _, err = st.OutboundEntries(ctx, mailstore.Page{})
	must(err)
	for _, o := range s.Queue {
		b, err := st.OutboundBody(ctx, o.ID)
		must(err)
		s.QBodies[o.ID] = string(b)
	}
	s.STS, err = st.STSPolicy(ctx, "remote.example", t0)
	if !errors.Is(err, mailstore.ErrSTSPolicyNotFound) {
		must(err)
	}
	return s
}

func openBolt(t *testing.T, dir string) *mailstore.Bolt {
	t.Helper()
	st, err := mailstore.Open(context.Background(), dir, mailstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func stateOf(t *testing.T, dir string) state {
	t.Helper()
	st := openBolt(t, dir)
	defer st.Close()
	return readState(t, st)
}

func checkSame(t *testing.T, want, got state) {
	t.Helper()
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range w.NumField() {
		if !reflect.DeepEqual(w.Field(i).Interface(), g.Field(i).Interface()) {
			wj, _ := json.Marshal(w.Field(i).Interface())
			gj, _ := json.Marshal(g.Field(i).Interface())
			t.Errorf("copied store differs in %s:\nwant %.2000s\ngot  %.2000s", w.Type().Field(i).Name, wj, gj)
		}
	}
}

// checkAfterCopy checks what the copy must keep beyond the answers of the
// Store interface: shared bodies, the SRS secret, clean counters, and
// sequences past the source's ids.
func checkAfterCopy(t *testing.T, dir string, want state) {
	t.Helper()
	ctx := context.Background()
	secret, err := os.ReadFile(filepath.Join(dir, mailstore.SRSKeyFile))
	if err != nil || strings.TrimSpace(string(secret)) != srsSecret {
		t.Errorf("srs.key = %q, %v; want the source's", secret, err)
	}
	st := openBolt(t, dir)
	defer st.Close()
	// The shared body: the two INBOX copies and the queue entry name one blob.
	var m1, m2 mailstore.Mailbox
	for _, m := range want.Mailboxes[want.Partners[0].ID] {
		switch m.Email {
		case "one@a.example":
			m1 = m
		case "two@a.example":
			m2 = m
		}
	}
	first := func(m mailstore.Mailbox) mailstore.Message {
		for _, f := range want.Folders[m.ID] {
			if f.Name == "INBOX" {
				return want.Messages[f.ID][0]
			}
		}
		t.Fatalf("no INBOX for %s", m.Email)
		return mailstore.Message{}
	}
	shared := first(m1).BlobID
	if first(m2).BlobID != shared || want.Queue[0].BlobID != shared {
		t.Errorf("body not shared: %d, %d, queue %d", shared, first(m2).BlobID, want.Queue[0].BlobID)
	}
	if d, err := st.Verify(ctx); err != nil || len(d) != 0 {
		t.Errorf("Verify after copy = %v, %v; want no drift", d, err)
	}
	// The change log is not copied: a session synced before the copy
	// hears that its changes are gone, and re-reads the folder.
	for _, f := range want.Folders[m1.ID] {
		if f.Name != "INBOX" {
			continue
		}
		if f.HighestModSeq == 0 {
			t.Errorf("INBOX copied with HighestModSeq 0")
		}
		if _, _, err := st.Changes(ctx, m1.ID, f.ID, f.HighestModSeq-1); !errors.Is(err, mailstore.ErrChangesGone) {
			t.Errorf("Changes(since %d) after copy = %v, want ErrChangesGone", f.HighestModSeq-1, err)
		}
	}
	if v, err := st.Setting(ctx, "shared_key", func() (string, error) { return "made anew", nil }); err != nil || v != "v1" {
		t.Errorf("Setting(shared_key) after copy = %q, %v; want the source's v1", v, err)
	}
	// New objects get ids past every copied (and deleted) one.
	p, err := st.CreatePartner(ctx, "new", t0)
	if err != nil || p.ID != 3 {
		t.Errorf("CreatePartner after copy = %+v, %v; want id 3", p, err)
	}
	d, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "new.example", Plan: mailstore.Plan{Name: "x"}}, t0)
	if err != nil || d.ID != 4 {
		t.Errorf("CreateDomain after copy = id %d, %v; want 4 (3 was deleted)", d.ID, err)
	}
	f, err := st.CreateFolder(ctx, m2.ID, "Tmp")
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range want.Folders {
		for _, old := range fs {
			if old.ID >= f.ID || old.UIDValidity >= f.UIDValidity {
				t.Errorf("new folder %+v collides with copied %+v", f, old)
			}
		}
	}
	if f.UIDValidity <= 20 { // 18 default folders, Work/Projects, Tmp (deleted): 20 made
		t.Errorf("new folder's UIDVALIDITY %d reuses the deleted folder's", f.UIDValidity)
	}
}

func TestCopyBoltToBolt(t *testing.T) {
	ctx := context.Background()
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	populate(t, src)
	want := stateOf(t, src)
	var progress bytes.Buffer
	rep, err := Copy(ctx, src, dst, Options{Progress: &progress, Every: 1})
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if line := rep.String(); !strings.Contains(line, "2 settings, 2 partners") || !strings.Contains(line, "4 messages") ||
		!strings.Contains(line, "counts and checksums match") {
		t.Errorf("report %q", line)
	}
	if !strings.Contains(progress.String(), "copied 4 messages") {
		t.Errorf("progress:\n%s", progress.String())
	}
	checkSame(t, want, stateOf(t, dst))
	checkAfterCopy(t, dst, want)
}

func TestCopyBoltPostgresBolt(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	src, back := t.TempDir(), filepath.Join(t.TempDir(), "back")
	populate(t, src)
	want := stateOf(t, src)
	if _, err := Copy(ctx, src, url, Options{}); err != nil {
		t.Fatalf("Copy to PostgreSQL: %v", err)
	}
	pg, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := pg.Verify(ctx); err != nil || len(d) != 0 {
		t.Errorf("Verify on PostgreSQL = %v, %v; want no drift", d, err)
	}
	var secret string
	if err := pg.Pool().QueryRow(ctx, `SELECT value FROM settings WHERE name = 'srs_secret'`).Scan(&secret); err != nil || secret != srsSecret {
		t.Errorf("settings srs_secret = %q, %v", secret, err)
	}
	var last, validity int64
	if err := pg.Pool().QueryRow(ctx, `SELECT pg_sequence_last_value(pg_get_serial_sequence('domains', 'id')::regclass),
			pg_sequence_last_value('uid_validity_seq')`).Scan(&last, &validity); err != nil || last != 3 || validity != 20 {
		t.Errorf("last domain id, UIDVALIDITY = %d, %d, %v; want 3 (deleted), 20", last, validity, err)
	}
	// The mark binaries before schema 9 read follows the subscriptions
	// loaded (pgstore migration 009).
	var subs, astray int
	if err := pg.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM subscriptions), (SELECT count(*) FROM folders f
			WHERE f.subscribed <> EXISTS (SELECT 1 FROM subscriptions s WHERE s.mailbox_id = f.mailbox_id AND s.name = f.name))`).
		Scan(&subs, &astray); err != nil || subs != 19 || astray != 0 {
		t.Errorf("subscriptions, folders marked otherwise = %d, %d, %v; want 19 (6 defaults of 3 accounts, +2, -1), 0", subs, astray, err)
	}
	var leased *string
	if err := pg.Pool().QueryRow(ctx, `SELECT leased_by FROM queue ORDER BY id LIMIT 1`).Scan(&leased); err != nil || leased != nil {
		t.Errorf("leased_by = %v, %v; want NULL (the attempt was recorded)", leased, err)
	}
	pg.Close()
	rep, err := Copy(ctx, url, back, Options{})
	if err != nil {
		t.Fatalf("Copy back from PostgreSQL: %v", err)
	}
	if rep.Source.Counts[mailstore.KindBlob] != 3 || rep.Source.Counts[mailstore.KindMessage] != 4 {
		t.Errorf("counts %v", rep.Source.Counts)
	}
	checkSame(t, want, stateOf(t, back))
	checkAfterCopy(t, back, want)
}

func TestCopyRefusesNonEmpty(t *testing.T) {
	ctx := context.Background()
	src, dst := t.TempDir(), t.TempDir()
	populate(t, src)
	st := openBolt(t, dst)
	if _, err := st.CreatePartner(ctx, "there", t0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Copy(ctx, src, dst, Options{}); !errors.Is(err, mailstore.ErrNotEmpty) {
		t.Errorf("Copy into a store with a partner = %v, want ErrNotEmpty", err)
	}
	// Another SRS secret in an otherwise empty directory is refused too.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, mailstore.SRSKeyFile), []byte(strings.Repeat("x", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, src, other, Options{}); !errors.Is(err, mailstore.ErrNotEmpty) {
		t.Errorf("Copy into a directory with another srs.key = %v, want ErrNotEmpty", err)
	}
}

func TestCopyRefusesNonEmptyPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	src := t.TempDir()
	populate(t, src)
	if _, err := Copy(ctx, src, url, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, src, url, Options{}); !errors.Is(err, mailstore.ErrNotEmpty) || !strings.Contains(err.Error(), "empty store") {
		t.Errorf("second Copy = %v, want ErrNotEmpty", err)
	}
}

func TestCopyLockedSource(t *testing.T) {
	src := t.TempDir()
	populate(t, src)
	st := openBolt(t, src)
	defer st.Close()
	_, err := Copy(context.Background(), src, t.TempDir(), Options{})
	if !errors.Is(err, mailstore.ErrLocked) || !strings.Contains(err.Error(), "stop the server first") {
		t.Errorf("Copy from a store in use = %v", err)
	}
	if _, err := Copy(context.Background(), filepath.Join(src, "nothing"), t.TempDir(), Options{}); err == nil {
		t.Error("Copy from a directory without a store succeeded")
	}
}

func TestVerifyBolt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	populate(t, dir)
	if d, err := Verify(ctx, dir); err != nil || len(d) != 0 {
		t.Fatalf("Verify(clean) = %v, %v; want none", d, err)
	}
	// Corrupt counters directly in the file.
	db, err := bolt.Open(filepath.Join(dir, mailstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("domains"))
		k := make([]byte, 8)
		k[7] = 1
		var d mailstore.Domain
		if err := json.Unmarshal(b.Get(k), &d); err != nil {
			return err
		}
		d.MessageCount += 2
		raw, _ := json.Marshal(d)
		if err := b.Put(k, raw); err != nil {
			return err
		}
		refs := tx.Bucket([]byte("blob_refs"))
		rk, rv := refs.Cursor().First()
		v := bytes.Clone(rv)
		v[7]++
		return refs.Put(bytes.Clone(rk), v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Verify(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []mailstore.Drift{
		{Object: "domain 1 (a.example)", Field: "message_count", Stored: 6, Recomputed: 4},
		{Object: "blob 1", Field: "refs", Stored: 5, Recomputed: 4},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Verify(corrupt) = %v, want %v", d, want)
	}
}

func TestVerifyPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	src := t.TempDir()
	populate(t, src)
	if _, err := Copy(ctx, src, url, Options{}); err != nil {
		t.Fatal(err)
	}
	if d, err := Verify(ctx, url); err != nil || len(d) != 0 {
		t.Fatalf("Verify(clean) = %v, %v; want none", d, err)
	}
	pg, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for _, q := range []string{
		`UPDATE folders SET unseen = unseen + 5, uid_next = 1 WHERE id = (SELECT folder_id FROM messages ORDER BY folder_id LIMIT 1)`,
		`UPDATE partners SET domain_count = 9 WHERE id = 1`,
		`UPDATE mailboxes SET used_bytes = 0 WHERE id = 1`,
		`UPDATE blobs SET refs = 1 WHERE id = 1`,
	} {
		if _, err := pg.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	d, err := Verify(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(d))
	for i, x := range d {
		got[i] = x.String()
	}
	want := []string{
		"partner 1 (acme): domain_count stored 9, recomputed 1",
		"folder 1 (mailbox 1, INBOX): unseen stored 6, recomputed 1",
		"folder 1 (mailbox 1, INBOX): uid_next stored 1, recomputed 3",
		"mailbox 1 (one@a.example): used_bytes stored 0, recomputed 68",
		"blob 1: refs stored 1, recomputed 4",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Verify(corrupt) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCopyManyBatches copies a store larger than one load batch, with a
// leased queue entry, between bbolt stores; ...Postgres to PostgreSQL and
// back.
func TestCopyManyBatches(t *testing.T) {
	copyManyBatches(t, filepath.Join(t.TempDir(), "via"))
}

func TestCopyManyBatchesPostgres(t *testing.T) {
	copyManyBatches(t, pgtest.URL(t))
}

func copyManyBatches(t *testing.T, via string) {
	ctx := context.Background()
	src := t.TempDir()
	st := openBolt(t, src)
	p, err := st.CreatePartner(ctx, "many", t0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "many.example", Plan: mailstore.Plan{Name: "x", QuotaMB: 10}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 100 {
		m, err := st.CreateMailbox(ctx, p.ID, d.Name, fmt.Sprintf("u%d@many.example", i), "h", t0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for i := range 15 {
		body := bytes.Repeat([]byte{byte('a' + i)}, 1000+i)
		if _, err := st.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: t0.Add(time.Duration(i) * time.Second), MailboxIDs: ids,
			Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"x@far.example"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A claimed entry keeps its lease through the copies.
	if c, err := st.ClaimOutbound(ctx, t0.Add(time.Hour), time.Hour, 1, mailstore.ClaimOptions{}); err != nil || len(c) != 1 {
		t.Fatalf("ClaimOutbound = %v, %v", c, err)
	}
	want := readState(t, st)
	st.Close()

	if _, err := Copy(ctx, src, via, Options{}); err != nil {
		t.Fatalf("Copy to %s: %v", Display(via), err)
	}
	back := filepath.Join(t.TempDir(), "back")
	rep, err := Copy(ctx, via, back, Options{})
	if err != nil {
		t.Fatalf("Copy back: %v", err)
	}
	if n := rep.Destination.Counts[mailstore.KindMessage]; n != 1500 {
		t.Errorf("copied %d messages, want 1500", n)
	}
	got := stateOf(t, back)
	checkSame(t, want, got)
	if !got.Queue[0].Leased || got.Queue[1].Leased {
		t.Errorf("leases after the copies: %v, %v; want the first entry leased", got.Queue[0].Leased, got.Queue[1].Leased)
	}
}

func TestCopyHidesPassword(t *testing.T) {
	src := t.TempDir()
	populate(t, src)
	_, err := Copy(context.Background(), src, "postgres://mh:s3cret@127.0.0.1:1/none?sslmode=disable", Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("Copy to an unreachable database = %v; want an error naming it without its password", err)
	}
}

// TestCopyPostgresWrittenToBolt copies a PostgreSQL store filled through
// its own Store methods into bbolt, and compares the two through the
// Store interface.
func TestCopyPostgresWrittenToBolt(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	pg, err := pgstore.Open(ctx, url, pgstore.Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, pg)
	if _, err := pg.Pool().Exec(ctx, `INSERT INTO settings (name, value) VALUES ('srs_secret', $1)`, srsSecret); err != nil {
		t.Fatal(err)
	}
	if d, err := pg.Verify(ctx); err != nil || len(d) != 0 {
		t.Errorf("Verify of the filled PostgreSQL store = %v, %v; want no drift", d, err)
	}
	want := readState(t, pg)
	pg.Close()
	dst := filepath.Join(t.TempDir(), "bolt")
	if _, err := Copy(ctx, url, dst, Options{}); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	checkSame(t, want, stateOf(t, dst))
	checkAfterCopy(t, dst, want)
}
