package storecopy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
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
	fillState(t, st, p1, p2, m1, m2)
	c, ok := st.(mailstore.Cluster)
	if !ok {
		t.Fatalf("%T is not a mailstore.Cluster", st)
	}
	if v, err := c.Setting(ctx, "shared_key", func() (string, error) { return "v1", nil }); err != nil || v != "v1" {
		t.Fatalf("Setting = %q, %v", v, err)
	}
}

// extras are the interfaces beside mailstore.Store whose state a copy
// carries; both stores implement them.
type extras interface {
	mailstore.Store
	mailstore.Webhooks
	mailstore.Audit
	mailstore.AutoReplies
	mailstore.SieveScripts
	mailstore.Certs
}

func extrasOf(t *testing.T, st mailstore.Store) extras {
	t.Helper()
	x, ok := st.(extras)
	if !ok {
		t.Fatalf("%T lacks webhooks, audit, auto-replies or certs", st)
	}
	return x
}

// fillState makes one of each kind of state kept beside the mail: a
// verified domain with its token and a spam filter setting, webhooks (one
// deleted, whose delivery bbolt keeps until a claim) with events and
// deliveries (one tried and failed), a quota_full mark, audit entries of
// two partners interleaved, an auto-reply with whom it answered, ACME
// blobs.
func fillState(t *testing.T, st mailstore.Store, p1, p2 mailstore.Partner, m1, m2 mailstore.Mailbox) {
	t.Helper()
	ctx := context.Background()
	x := extrasOf(t, st)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	w1, err := x.CreateWebhook(ctx, p1.ID, mailstore.Webhook{URL: "https://hooks.acme.example/mail",
		Events: []string{mailstore.EventDomainVerified, mailstore.EventQuotaFull, mailstore.EventMessageBounced}, Secret: "whsec-1"}, t0)
	must(err)
	w2, err := x.CreateWebhook(ctx, p1.ID, mailstore.Webhook{URL: "https://old.acme.example/", Events: []string{mailstore.EventDomainVerified}, Secret: "whsec-2"}, t0)
	must(err)
	_, err = x.CreateWebhook(ctx, p2.ID, mailstore.Webhook{URL: "https://globex.example/hook", Events: []string{mailstore.EventDomainSuspended}, Secret: "whsec-3"}, t0)
	must(err)
	_, err = x.EnsureVerifyToken(ctx, p1.ID, "a.example", "token-a")
	must(err)
	// p2 claims a.example too, with an address p1 has: p1's verification
	// ends p2's claim, which the copy keeps, ended, and not live.
	_, err = x.CreateDomain(ctx, p2.ID, mailstore.NewDomain{Name: "a.example", Plan: mailstore.Plan{Name: "p", QuotaMB: 1}}, t0)
	must(err)
	_, err = x.CreateMailbox(ctx, p2.ID, "a.example", "one@a.example", "$argon2id$other", t0)
	must(err)
	_, err = x.SetVerified(ctx, p1.ID, "a.example", true, t0.Add(3*time.Hour))
	must(err)
	must(x.DeleteWebhook(ctx, p1.ID, w2.ID))
	_, err = x.SetSpamFilter(ctx, p2.ID, "b.example", mailstore.SpamFilterJunk)
	must(err)
	_, err = x.AddEvent(ctx, mailstore.NewBounceEvent(m1, "a.example", 1, map[string]string{"x@remote.example": "550 no such user"}, t0.Add(4*time.Hour)))
	must(err)
	if ok, err := x.QuotaFull(ctx, m2.ID, t0.Add(4*time.Hour)); err != nil || !ok {
		t.Fatalf("QuotaFull = %v, %v", ok, err)
	}
	// The first delivery (domain.verified to w1) is tried and fails.
	ds, err := x.ClaimWebhookDeliveries(ctx, t0.Add(3*time.Hour), time.Minute, 1)
	must(err)
	if len(ds) != 1 || ds[0].Webhook.ID != w1.ID {
		t.Fatalf("ClaimWebhookDeliveries = %+v", ds)
	}
	must(x.RecordWebhookAttempt(ctx, ds[0].ID, false, t0.Add(5*time.Hour), "HTTP 502"))
	for i, e := range []mailstore.AuditEntry{
		{Time: t0, PartnerID: p1.ID, KeyPrefix: "mh_look1", Method: "POST", Route: "/domains", Object: "a.example", Status: 201},
		{Time: t0.Add(time.Minute), PartnerID: p2.ID, Method: "CLI", Route: "domain suspend", Object: "b.example", Status: 200},
		{Time: t0.Add(2 * time.Minute), PartnerID: p1.ID, KeyPrefix: "mh_look1", Method: "PUT", Route: "/users/{email}/autoreply", Object: "one@a.example", Status: 200},
	} {
		if _, err := x.AddAudit(ctx, e); err != nil {
			t.Fatalf("AddAudit %d: %v", i, err)
		}
	}
	must(x.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: m1.ID, Enabled: true, Subject: "Away", Body: "Back on Monday.\n",
		Start: t0, End: t0.Add(7 * 24 * time.Hour)}))
	must(x.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: m2.ID, Subject: "Off", Body: "not now"}))
	for _, sender := range []string{"zed@far.example", "amy@far.example"} {
		if ok, err := x.TakeAutoReply(ctx, m1.ID, sender, t0.Add(time.Hour), 24*time.Hour); err != nil || !ok {
			t.Fatalf("TakeAutoReply(%s) = %v, %v", sender, ok, err)
		}
	}
	must(x.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: m1.ID, Name: "rules", Script: "require \"fileinto\";\nfileinto \"Lists\";\n", Active: true, UpdatedAt: t0}))
	must(x.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: m1.ID, Name: "draft ü", Script: "keep;\n", UpdatedAt: t0.Add(time.Minute)}))
	must(x.PutCert(ctx, "acme_account+key", []byte("-----BEGIN EC PRIVATE KEY-----\naccount\n")))
	must(x.PutCert(ctx, "mail.a.example", bytes.Repeat([]byte{0, 1, 2, 255}, 300)))
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
	Verified  []mailstore.Domain
	// Live is what the mail plane sees of a.example: the live claim's
	// id and the id of its one@a.example.
	Live     [2]int64
	Webhooks map[int64][]mailstore.Webhook
	Audit    map[int64][]mailstore.AuditEntry
	Replies  map[int64]mailstore.AutoReply
	Sieve    map[int64][]mailstore.SieveScript
	Certs    map[string][]byte
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
	s.Verified, err = st.VerifiedDomains(ctx, "", 100)
	must(err)
	if d, err := st.DomainByName(ctx, "a.example"); err == nil {
		s.Live[0] = d.ID
	}
	if m, _, err := st.MailboxByEmail(ctx, "one@a.example"); err == nil {
		s.Live[1] = m.ID
	}
	x := extrasOf(t, st)
	s.Webhooks, s.Audit, s.Replies, s.Certs = map[int64][]mailstore.Webhook{}, map[int64][]mailstore.AuditEntry{},
		map[int64]mailstore.AutoReply{}, map[string][]byte{}
	s.Sieve = map[int64][]mailstore.SieveScript{}
	for _, p := range s.Partners {
		s.Webhooks[p.ID], _, err = x.Webhooks(ctx, p.ID, mailstore.Page{})
		must(err)
		s.Audit[p.ID], _, err = x.AuditEntries(ctx, p.ID, mailstore.Page{})
		must(err)
		for _, m := range s.Mailboxes[p.ID] {
			a, err := x.AutoReply(ctx, m.ID)
			if errors.Is(err, mailstore.ErrNotFound) {
				continue
			}
			must(err)
			s.Replies[m.ID] = a
		}
		for _, m := range s.Mailboxes[p.ID] {
			scripts, err := x.SieveScripts(ctx, m.ID)
			must(err)
			if len(scripts) > 0 {
				s.Sieve[m.ID] = scripts
			}
		}
	}
	for _, name := range []string{"acme_account+key", "mail.a.example"} {
		c, err := x.Cert(ctx, name)
		if errors.Is(err, mailstore.ErrNotFound) {
			continue
		}
		must(err)
		s.Certs[name] = c
	}
	return s
}

// memory is what a store remembers and answers only by acting on it: the
// deliveries a claim hands out (with their webhook, event, attempts and
// last error), whether an auto-reply may answer a sender again, whether
// a quota_full event is recorded again. Reading it changes the store.
type memory struct {
	Deliveries []mailstore.WebhookDelivery
	// MayReply is, per sender, whether TakeAutoReply answered true.
	MayReply map[string]bool
	// QuotaFullAgain is whether QuotaFull recorded another event.
	QuotaFullAgain bool
	// AuditPruned is how many entries PruneAudit deleted before the
	// third one's time (through bbolt's time index).
	AuditPruned int
}

func readMemory(t *testing.T, st mailstore.Store) memory {
	t.Helper()
	ctx := context.Background()
	x := extrasOf(t, st)
	var mem memory
	var m1, m2 int64
	ps, err := st.Partners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"one@a.example", "two@a.example"} {
		m, err := st.Mailbox(ctx, ps[0].ID, email)
		if err != nil {
			t.Fatal(err)
		}
		if m1 == 0 {
			m1 = m.ID
		} else {
			m2 = m.ID
		}
	}
	// Past every delivery's next attempt; ids and NextAttempt kept, the
	// event's data in one spelling.
	mem.Deliveries, err = x.ClaimWebhookDeliveries(ctx, t0.Add(48*time.Hour), time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mem.Deliveries {
		mem.Deliveries[i].Event.Data = canonicalJSON(mem.Deliveries[i].Event.Data)
	}
	// bbolt hands them out by next attempt, PostgreSQL by id.
	slices.SortFunc(mem.Deliveries, func(a, b mailstore.WebhookDelivery) int { return cmp.Compare(a.ID, b.ID) })
	mem.MayReply = map[string]bool{}
	for _, sender := range []string{"zed@far.example", "amy@far.example", "new@far.example"} {
		mem.MayReply[sender], err = x.TakeAutoReply(ctx, m1, sender, t0.Add(2*time.Hour), 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
	}
	mem.QuotaFullAgain, err = x.QuotaFull(ctx, m2, t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	mem.AuditPruned, err = x.PruneAudit(ctx, t0.Add(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// checkSummaries checks that every body of the bbolt store in dir has its
// header summary, made at load.
func checkSummaries(t *testing.T, dir string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		sums := tx.Bucket([]byte("blob_summaries"))
		if sums == nil {
			return errors.New("no blob_summaries bucket")
		}
		return tx.Bucket([]byte("blobs")).ForEach(func(k, body []byte) error {
			if got, want := sums.Get(k), mailstore.HeaderSummary(body); !bytes.Equal(got, want) {
				return fmt.Errorf("summary of blob %x = %q, want %q", k, got, want)
			}
			return nil
		})
	})
	if err != nil {
		t.Errorf("header summaries after the copy: %v", err)
	}
}

// checkMemory reads the memory of the source and of its copy (both
// changed by it) and compares them.
func checkMemory(t *testing.T, src, dst mailstore.Store) {
	t.Helper()
	want, got := readMemory(t, src), readMemory(t, dst)
	if !reflect.DeepEqual(want, got) {
		wj, _ := json.MarshalIndent(want, "", "  ")
		gj, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("copied store remembers otherwise:\nwant %s\ngot  %s", wj, gj)
	}
	// domain.verified (tried once), message.bounced, mailbox.quota_full
	// to the first webhook; the deleted webhook's delivery is gone.
	tried := 0
	for _, d := range want.Deliveries {
		if d.Attempts == 1 && d.LastError == "HTTP 502" && d.Event.Type == mailstore.EventDomainVerified {
			tried++
		}
	}
	if len(want.Deliveries) != 3 || tried != 1 {
		t.Errorf("source's deliveries %+v; want 3, the domain.verified one tried once (fill changed?)", want.Deliveries)
	}
	if want.MayReply["zed@far.example"] || !want.MayReply["new@far.example"] || want.QuotaFullAgain || want.AuditPruned != 2 {
		t.Errorf("source's memory %+v (fill changed?)", want)
	}
}

// dumpOf dumps the store at where, each kind's records in order, as JSON
// (bodies and blobs included; event data in one spelling), so that two
// dumps compare field by field.
func dumpOf(t *testing.T, where string) map[mailstore.Kind][]string {
	t.Helper()
	ctx := context.Background()
	st, err := open(ctx, where, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[mailstore.Kind][]string{}
	if err := st.Dump(ctx, func(r mailstore.Record) error {
		switch x := r.(type) {
		case mailstore.EventRecord:
			x.Data = canonicalJSON(x.Data)
			r = x
		case mailstore.OutboundRecord:
			// bbolt keeps no lease holder; PostgreSQL names the copy's.
			x.LeasedBy = ""
			r = x
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return err
		}
		k := mailstore.KindOf(r)
		out[k] = append(out[k], string(raw))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkDumps compares two dumps kind by kind, record by record; a
// sequence may be ahead in got.
func checkDumps(t *testing.T, what string, want, got map[mailstore.Kind][]string) {
	t.Helper()
	for _, k := range mailstore.Kinds() {
		if k == mailstore.KindSequence {
			continue
		}
		if len(want[k]) != len(got[k]) {
			t.Errorf("%s: %s: %d records, want %d", what, k, len(got[k]), len(want[k]))
			continue
		}
		for i := range want[k] {
			if want[k][i] != got[k][i] {
				t.Errorf("%s: %s record %d:\nwant %.1500s\ngot  %.1500s", what, k, i, want[k][i], got[k][i])
			}
		}
	}
	for i, w := range want[mailstore.KindSequence] {
		var ws, gs mailstore.SequenceRecord
		if i >= len(got[mailstore.KindSequence]) {
			t.Errorf("%s: sequence %s missing", what, w)
			continue
		}
		_ = json.Unmarshal([]byte(w), &ws)
		_ = json.Unmarshal([]byte(got[mailstore.KindSequence][i]), &gs)
		if gs.Name != ws.Name || gs.Value < ws.Value {
			t.Errorf("%s: sequence %+v, want %+v or ahead", what, gs, ws)
		}
	}
}

func openBolt(t *testing.T, dir string) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
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
	if err != nil || d.ID != 5 {
		t.Errorf("CreateDomain after copy = id %d, %v; want 5 (4 is beta's claim of a.example, 3 was deleted)", d.ID, err)
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
	checkDumps(t, "bbolt copy", dumpOf(t, src), dumpOf(t, dst))
	checkSummaries(t, dst)
	checkSame(t, want, stateOf(t, dst))
	checkAfterCopy(t, dst, want)
	srcStore, dstStore := openBolt(t, src), openBolt(t, dst)
	defer srcStore.Close()
	defer dstStore.Close()
	checkMemory(t, srcStore, dstStore)
}

func TestCopyBoltPostgresBolt(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	src, back := t.TempDir(), filepath.Join(t.TempDir(), "back")
	populate(t, src)
	want := stateOf(t, src)
	wantDump := dumpOf(t, src)
	// One of everything: a kind the fill leaves empty is not tested.
	for _, k := range mailstore.Kinds() {
		if len(wantDump[k]) == 0 {
			t.Errorf("the source holds no %s: fill one", k)
		}
	}
	if _, err := Copy(ctx, src, url, Options{}); err != nil {
		t.Fatalf("Copy to PostgreSQL: %v", err)
	}
	checkDumps(t, "PostgreSQL", wantDump, dumpOf(t, url))
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
			pg_sequence_last_value('uid_validity_seq')`).Scan(&last, &validity); err != nil || last != 4 || validity != 26 {
		t.Errorf("last domain id, UIDVALIDITY = %d, %d, %v; want 4 (beta's claim of a.example), 26", last, validity, err)
	}
	// The mark binaries before schema 9 read follows the subscriptions
	// loaded (pgstore migration 009).
	var subs, astray int
	if err := pg.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM subscriptions), (SELECT count(*) FROM folders f
			WHERE f.subscribed <> EXISTS (SELECT 1 FROM subscriptions s WHERE s.mailbox_id = f.mailbox_id AND s.name = f.name))`).
		Scan(&subs, &astray); err != nil || subs != 25 || astray != 0 {
		t.Errorf("subscriptions, folders marked otherwise = %d, %d, %v; want 25 (6 defaults of 4 accounts, +2, -1), 0", subs, astray, err)
	}
	// The keyword counts follow from the messages (pgstore's Load).
	var kwRows, kwN int64
	var kw string
	if err := pg.Pool().QueryRow(ctx, `SELECT count(*), coalesce(sum(n), 0), coalesce(max(keyword), '') FROM folder_keywords`).
		Scan(&kwRows, &kwN, &kw); err != nil || kwRows != 2 || kwN != 2 || kw != "$LABEL1" {
		t.Errorf("folder_keywords = %d rows, %d in all, %q, %v; want $Label1 in INBOX and Work", kwRows, kwN, kw, err)
	}
	var leased *string
	if err := pg.Pool().QueryRow(ctx, `SELECT leased_by FROM queue ORDER BY id LIMIT 1`).Scan(&leased); err != nil || leased != nil {
		t.Errorf("leased_by = %v, %v; want NULL (the attempt was recorded)", leased, err)
	}
	// Rebuilt rather than carried: the verified domains' names reversed,
	// every body's header summary.
	var revName string
	if err := pg.Pool().QueryRow(ctx, `SELECT rev_name FROM domains WHERE name = 'a.example'`).Scan(&revName); err != nil || revName != "example.a" {
		t.Errorf("rev_name of a.example = %q, %v; want example.a", revName, err)
	}
	rows, _ := pg.Pool().Query(ctx, `SELECT id, body, header FROM blobs ORDER BY id`)
	var id int64
	var body, header []byte
	if _, err := pgx.ForEachRow(rows, []any{&id, &body, &header}, func() error {
		if want := mailstore.HeaderSummary(body); !bytes.Equal(header, want) {
			t.Errorf("header summary of blob %d = %q, want %q", id, header, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkSame(t, want, readState(t, pg))
	pg.Close()
	rep, err := Copy(ctx, url, back, Options{})
	if err != nil {
		t.Fatalf("Copy back from PostgreSQL: %v", err)
	}
	if rep.Source.Counts[mailstore.KindBlob] != 3 || rep.Source.Counts[mailstore.KindMessage] != 4 {
		t.Errorf("counts %v", rep.Source.Counts)
	}
	checkDumps(t, "bbolt after PostgreSQL", wantDump, dumpOf(t, back))
	checkSummaries(t, back)
	checkSame(t, want, stateOf(t, back))
	checkAfterCopy(t, back, want)
	srcStore, backStore := openBolt(t, src), openBolt(t, back)
	defer srcStore.Close()
	defer backStore.Close()
	checkMemory(t, srcStore, backStore)
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
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, nil)
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
	checkDumps(t, "bbolt from PostgreSQL", dumpOf(t, url), dumpOf(t, dst))
	checkSame(t, want, stateOf(t, dst))
	checkAfterCopy(t, dst, want)
	pg, err = pgstore.Open(ctx, url, pgstore.Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	back := openBolt(t, dst)
	defer back.Close()
	checkMemory(t, pg, back)
}

// TestDigestSeesEachField changes one field of a record of each kind kept
// beside the mail, and expects the comparison to name that kind.
func TestDigestSeesEachField(t *testing.T) {
	at := t0
	reply := mailstore.AutoReply{MailboxID: 1, Enabled: true, Subject: "s", Body: "b", Start: at, End: at.Add(time.Hour)}
	hook := mailstore.Webhook{ID: 1, PartnerID: 1, URL: "https://x.example/", Events: []string{"a"}, Secret: "s", CreatedAt: at}
	event := mailstore.Event{ID: 1, Type: "t", PartnerID: 1, CreatedAt: at, Data: json.RawMessage(`{"a":1,"b":"x"}`)}
	delivery := mailstore.WebhookDeliveryRecord{ID: 1, WebhookID: 1, EventID: 1, Attempts: 1, NextAttempt: at, LastError: "e"}
	audit := mailstore.AuditEntry{ID: 1, Time: at, PartnerID: 1, KeyPrefix: "k", Method: "POST", Route: "/r", Object: "o", Status: 200}
	domain := mailstore.Domain{ID: 1, Name: "a.example", Verified: true, VerifiedAt: at, VerifyToken: "t", SpamFilter: "junk", ClaimEndedAt: at}
	cases := []struct {
		name      string
		base, alt mailstore.Record
		same      bool // a difference of spelling only
	}{
		{"domain verified", mailstore.DomainRecord{Domain: domain}, mailstore.DomainRecord{Domain: func() mailstore.Domain { d := domain; d.Verified = false; return d }()}, false},
		{"domain verified at", mailstore.DomainRecord{Domain: domain}, mailstore.DomainRecord{Domain: func() mailstore.Domain { d := domain; d.VerifiedAt = at.Add(time.Second); return d }()}, false},
		{"domain token", mailstore.DomainRecord{Domain: domain}, mailstore.DomainRecord{Domain: func() mailstore.Domain { d := domain; d.VerifyToken = "u"; return d }()}, false},
		{"domain spam filter", mailstore.DomainRecord{Domain: domain}, mailstore.DomainRecord{Domain: func() mailstore.Domain { d := domain; d.SpamFilter = ""; return d }()}, false},
		{"domain claim ended", mailstore.DomainRecord{Domain: domain}, mailstore.DomainRecord{Domain: func() mailstore.Domain { d := domain; d.ClaimEndedAt = time.Time{}; return d }()}, false},
		{"auto-reply body", mailstore.AutoReplyRecord{AutoReply: reply}, mailstore.AutoReplyRecord{AutoReply: func() mailstore.AutoReply { a := reply; a.Body = "c"; return a }()}, false},
		{"auto-reply end", mailstore.AutoReplyRecord{AutoReply: reply}, mailstore.AutoReplyRecord{AutoReply: func() mailstore.AutoReply { a := reply; a.End = time.Time{}; return a }()}, false},
		{"auto-reply sent", mailstore.AutoReplySentRecord{MailboxID: 1, Sender: "a@x", SentAt: at}, mailstore.AutoReplySentRecord{MailboxID: 1, Sender: "a@x", SentAt: at.Add(time.Second)}, false},
		{"webhook events", mailstore.WebhookRecord{Webhook: hook}, mailstore.WebhookRecord{Webhook: func() mailstore.Webhook { w := hook; w.Events = []string{"a", "b"}; return w }()}, false},
		{"webhook secret", mailstore.WebhookRecord{Webhook: hook}, mailstore.WebhookRecord{Webhook: func() mailstore.Webhook { w := hook; w.Secret = "t"; return w }()}, false},
		{"event data", mailstore.EventRecord{Event: event}, mailstore.EventRecord{Event: func() mailstore.Event { e := event; e.Data = json.RawMessage(`{"a":2,"b":"x"}`); return e }()}, false},
		{"event data spelling", mailstore.EventRecord{Event: event}, mailstore.EventRecord{Event: func() mailstore.Event { e := event; e.Data = json.RawMessage(`{"b": "x", "a": 1}`); return e }()}, true},
		{"delivery attempts", delivery, func() mailstore.Record { d := delivery; d.Attempts = 2; return d }(), false},
		{"delivery next attempt", delivery, func() mailstore.Record { d := delivery; d.NextAttempt = at.Add(time.Minute); return d }(), false},
		{"delivery error", delivery, func() mailstore.Record { d := delivery; d.LastError = ""; return d }(), false},
		{"event mark", mailstore.EventMarkRecord{Mark: "quota_full/1"}, mailstore.EventMarkRecord{Mark: "quota_full/2"}, false},
		{"audit status", mailstore.AuditRecord{AuditEntry: audit}, mailstore.AuditRecord{AuditEntry: func() mailstore.AuditEntry { e := audit; e.Status = 500; return e }()}, false},
		{"audit object", mailstore.AuditRecord{AuditEntry: audit}, mailstore.AuditRecord{AuditEntry: func() mailstore.AuditEntry { e := audit; e.Object = ""; return e }()}, false},
		{"cert data", mailstore.CertRecord{Name: "n", Data: []byte{1, 2}}, mailstore.CertRecord{Name: "n", Data: []byte{1, 3}}, false},
		{"cert name", mailstore.CertRecord{Name: "n", Data: []byte{1, 2}}, mailstore.CertRecord{Name: "m", Data: []byte{1, 2}}, false},
		{"subscription name", mailstore.SubscriptionRecord{MailboxID: 1, Name: "a"}, mailstore.SubscriptionRecord{MailboxID: 1, Name: "b"}, false},
		{"subscription mailbox", mailstore.SubscriptionRecord{MailboxID: 1, Name: "a"}, mailstore.SubscriptionRecord{MailboxID: 2, Name: "a"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newDigester(), newDigester()
			a.add(c.base)
			b.add(c.alt)
			diffs := compare(a.summary(), b.summary())
			kind := mailstore.KindOf(c.base).String()
			switch {
			case c.same && len(diffs) != 0:
				t.Errorf("compare = %q, want no difference", diffs)
			case !c.same && (len(diffs) != 1 || !strings.HasPrefix(diffs[0], kind+": checksums differ")):
				t.Errorf("compare = %q, want %q: checksums differ", diffs, kind)
			}
		})
	}
}

// boltBuckets are the buckets of a bbolt store and what a copy does with
// each. A bucket not listed fails TestCopyCoversBuckets: a change that
// adds one must say whether a copy carries it (Dump, Load, the digest,
// docs/operations.md's list) or why not.
var boltBuckets = map[string]string{
	"meta": "schema version, made by Open",
	// Carried.
	"partners": "copied", "keys": "copied", "domains": "copied", "dkim": "copied",
	"transfer": "copied", "mailboxes": "copied", "aliases": "copied", "folders": "copied",
	"blobs": "copied", "blob_refs": "copied", "messages": "copied", "queue": "copied",
	"sts": "copied", "cluster": "copied (settings; job slots left: one may run once more)",
	"autoreplies": "copied", "autoreply_sent": "copied", "webhooks": "copied",
	"sieve_scripts": "copied", "sieve_active": "copied (SieveScriptRecord.Active)",
	"sieve_version": "stamped anew by Load (SieveScript.Version, a cache's stamp)", "events": "copied",
	"webhook_deliveries": "copied", "event_marks": "copied",
	"audit": "copied", "certs": "copied", "subscriptions": "copied",
	"folder_counts": "copied (MailboxRecord.FolderCount)",
	// Rebuilt by Load.
	"partner_names": "index", "key_lookup": "index", "partner_keys": "index",
	"domain_names": "index", "partner_domains": "index", "addresses": "index (before schema 8)",
	"domain_claims": "index", "domain_addresses": "index",
	"partner_mailboxes": "index", "domain_mailboxes": "index", "partner_aliases": "index",
	"domain_aliases": "index", "mailbox_folders": "index", "retention": "index",
	"partner_counts": "counts of the partner indexes, kept as they are written",
	"queue_due":      "index", "queue_held": "index", "queue_domain": "index",
	"sts_expiry": "index", "domain_verified": "index", "partner_webhooks": "index",
	"webhook_due": "index", "audit_time": "index",
	"blob_summaries": "rebuilt: HeaderSummary of each body",
	// Left.
	"changes":         "the folders' change log: a copied folder starts with an empty one",
	"folder_keywords": "the folders' keyword counts: a copied folder's are counted from its messages on first use",
}

func TestCopyCoversBuckets(t *testing.T) {
	dir := t.TempDir()
	populate(t, dir)
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if _, ok := boltBuckets[string(name)]; !ok {
				t.Errorf("bucket %s is neither copied nor listed in boltBuckets with why", name)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}
