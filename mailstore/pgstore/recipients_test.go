package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/internal/testclock"
	"github.com/mailhost/mailhost/mailstore"
)

// recipientFixture is a store with two mailboxes (quota 1 TiB) and a
// clock of the test's for its recipient cache.
func recipientFixture(t *testing.T) (*Store, []int64, *testclock.Clock) {
	t.Helper()
	s, ids, _ := mailFixtureURL(t, 2)
	clock := testclock.New(benchMailNow)
	s.recipients.now = clock.Now
	return s, ids, clock
}

// behind changes a mailbox's row as another node would: past this
// store, so that its cache does not hear of it.
func behind(t *testing.T, s *Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func quotaOf(t *testing.T, s *Store, email string) int64 {
	t.Helper()
	m, _, err := s.RecipientByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("RecipientByEmail(%s) = %v", email, err)
	}
	if m.PasswordHash != "" {
		t.Errorf("RecipientByEmail(%s) answered the password hash", email)
	}
	return m.QuotaMB
}

// TestRecipientCache: what the MX's cached look-up sees of a change made
// through another node (after the TTL), through this one (at once), of a
// mailbox near its quota (at once), and of this node's deliveries (their
// bytes, at once).
func TestRecipientCache(t *testing.T) {
	ctx := context.Background()
	const a = "u0@bench.example"
	const big = int64(1 << 20)

	t.Run("another node: at its commit", func(t *testing.T) {
		s, _, _ := recipientFixture(t)
		if q := quotaOf(t, s, a); q != big {
			t.Fatalf("quota = %d, want %d", q, big)
		}
		// The clock stands still: only the database's announcement can
		// void the answer.
		behind(t, s, `UPDATE mailboxes SET quota_mb = 5000 WHERE email = $1`, a)
		if m, _, err := s.MailboxByEmail(ctx, a); err != nil || m.QuotaMB != 5000 {
			t.Errorf("MailboxByEmail = %d, %v; want 5000 (never cached)", m.QuotaMB, err)
		}
		waitQuota(t, s, a, 5000)
		_, d, _ := s.RecipientByEmail(ctx, a)
		behind(t, s, `UPDATE domains SET suspended = true WHERE id = $1`, d.ID)
		waitFor(t, "the domain suspended through another node", func() bool {
			_, d, _ := s.RecipientByEmail(ctx, a)
			return d.Suspended
		})
		behind(t, s, `INSERT INTO sieve_scripts (mailbox_id, name, script, active, updated_at) SELECT id, 'x', 'keep;', true, now() FROM mailboxes WHERE email = $1`, a)
		waitFor(t, "a Sieve script activated through another node", func() bool {
			m, _, _ := s.RecipientByEmail(ctx, a)
			return m.HasSieve
		})
		behind(t, s, `DELETE FROM sieve_scripts`)
		behind(t, s, `DELETE FROM mailboxes WHERE email = $1`, a)
		waitFor(t, "the mailbox deleted through another node", func() bool {
			_, _, err := s.RecipientByEmail(ctx, a)
			return errors.Is(err, mailstore.ErrMailboxNotFound)
		})
	})

	t.Run("another node's deliveries: within the TTL", func(t *testing.T) {
		s, _, clock := recipientFixture(t)
		before, _, err := s.RecipientByEmail(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		// A delivery's counters fire no trigger: the answer stays.
		behind(t, s, `UPDATE mailboxes SET used_bytes = used_bytes + 1000, message_count = message_count + 1, last_login = now() WHERE email = $1`, a)
		time.Sleep(100 * time.Millisecond) // an announcement, if one came, has arrived
		if m, _, _ := s.RecipientByEmail(ctx, a); m.UsedBytes != before.UsedBytes {
			t.Errorf("used bytes within the TTL = %d, want the cached %d", m.UsedBytes, before.UsedBytes)
		}
		clock.Add(defaultRecipientTTL)
		if m, _, _ := s.RecipientByEmail(ctx, a); m.UsedBytes != before.UsedBytes+1000 {
			t.Errorf("used bytes after the TTL = %d, want %d", m.UsedBytes, before.UsedBytes+1000)
		}
	})

	t.Run("not listening: nothing kept", func(t *testing.T) {
		s, _, _ := recipientFixture(t)
		s.recipients.listen(false)
		quotaOf(t, s, a)
		behind(t, s, `UPDATE mailboxes SET used_bytes = 12345 WHERE email = $1`, a)
		if m, _, _ := s.RecipientByEmail(ctx, a); m.UsedBytes != 12345 {
			t.Errorf("used bytes while not listening = %d, want 12345 read afresh", m.UsedBytes)
		}
		s.recipients.listen(true)
	})

	t.Run("this node: at once", func(t *testing.T) {
		s, ids, _ := recipientFixture(t)
		quotaOf(t, s, a)
		m, err := s.SetQuota(ctx, partnerOf(t, s, ids[0]), a, 7000)
		if err != nil {
			t.Fatalf("SetQuota() = %v", err)
		}
		if q := quotaOf(t, s, a); q != m.QuotaMB || q != 7000 {
			t.Errorf("quota after SetQuota through this store = %d, want 7000", q)
		}
		// A suspended domain too, since the domain comes with the answer.
		_, d, _ := s.RecipientByEmail(ctx, a)
		if _, err := s.SetSuspended(ctx, d.PartnerID, d.Name, true); err != nil {
			t.Fatalf("SetSuspended() = %v", err)
		}
		if _, d, _ := s.RecipientByEmail(ctx, a); !d.Suspended {
			t.Error("domain not suspended in the answer right after SetSuspended through this store")
		}
	})

	t.Run("near its quota: always read", func(t *testing.T) {
		s, _, _ := recipientFixture(t)
		// 1 MB quota, 0.95 MB used: within a tenth of it.
		behind(t, s, `UPDATE mailboxes SET quota_mb = 1, used_bytes = $2 WHERE email = $1`, a, int64(mailstore.MB*95/100))
		quotaOf(t, s, a)
		behind(t, s, `UPDATE mailboxes SET used_bytes = $2 WHERE email = $1`, a, int64(mailstore.MB))
		m, _, err := s.RecipientByEmail(ctx, a)
		if err != nil || m.UsedBytes != mailstore.MB || m.Fits(0) {
			t.Errorf("RecipientByEmail near the quota = used %d, fits %v, %v; want the full %d read afresh", m.UsedBytes, m.Fits(0), err, mailstore.MB)
		}
	})

	t.Run("this node's deliveries", func(t *testing.T) {
		s, ids, _ := recipientFixture(t)
		before, _, err := s.RecipientByEmail(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		// Another node's change the batch does not read stays unseen: the
		// answer is the cached one, its bytes brought up to date.
		behind(t, s, `UPDATE mailboxes SET message_count = message_count + 100 WHERE email = $1`, a)
		body := []byte("Subject: x\r\n\r\nhello\r\n")
		for range 3 {
			if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: ids[:1]}); err != nil {
				t.Fatalf("Deliver() = %v", err)
			}
		}
		after, _, err := s.RecipientByEmail(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if want := before.UsedBytes + 3*int64(len(body)); after.UsedBytes != want {
			t.Errorf("used bytes after 3 deliveries = %d, want %d", after.UsedBytes, want)
		}
		if after.MessageCount != before.MessageCount {
			t.Errorf("message count = %d, want the cached %d (the answer was read again)", after.MessageCount, before.MessageCount)
		}
	})

	t.Run("unknown address: not cached", func(t *testing.T) {
		s, ids, _ := recipientFixture(t)
		const c = "new@bench.example"
		if _, _, err := s.RecipientByEmail(ctx, c); err == nil {
			t.Fatal("RecipientByEmail of an unknown address: no error")
		}
		behind(t, s, `UPDATE mailboxes SET email = $2 WHERE id = $1`, ids[1], c)
		behind(t, s, `UPDATE addresses SET address = $2 WHERE target_id = $1 AND kind = 'm'`, ids[1], c)
		if m, _, err := s.RecipientByEmail(ctx, c); err != nil || m.ID != ids[1] {
			t.Errorf("RecipientByEmail after the mailbox came = %d, %v; want %d", m.ID, err, ids[1])
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		// Look-ups, deliveries and quota changes at once (for -race); once
		// they are over, the answer is the database's.
		s, ids, _ := recipientFixture(t)
		partner := partnerOf(t, s, ids[0])
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					switch g {
					case 0:
						if _, err := s.SetQuota(ctx, partner, a, int64(2000+i)); err != nil {
							t.Error(err)
						}
					case 1:
						if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: c\r\n\r\nc\r\n"), ReceivedAt: benchMailNow, MailboxIDs: ids[:1]}); err != nil {
							t.Error(err)
						}
					default:
						if _, _, err := s.RecipientByEmail(ctx, a); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
		got, _, err := s.RecipientByEmail(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := s.MailboxByEmail(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if got.QuotaMB != want.QuotaMB || got.UsedBytes != want.UsedBytes {
			t.Errorf("after the writes: quota %d, used %d; the database has %d, %d", got.QuotaMB, got.UsedBytes, want.QuotaMB, want.UsedBytes)
		}
	})

	t.Run("off", func(t *testing.T) {
		_, _, u := mailFixtureURL(t, 1)
		s, err := Open(ctx, u, Options{Node: "nocache", RecipientTTL: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		quotaOf(t, s, a)
		behind(t, s, `UPDATE mailboxes SET quota_mb = 5000 WHERE email = $1`, a)
		if q := quotaOf(t, s, a); q != 5000 {
			t.Errorf("quota without a cache = %d, want 5000", q)
		}
	})
}

// waitQuota waits for the answer's quota to be want: a change through
// another node arrives with the database's announcement.
func waitQuota(t *testing.T, s *Store, email string, want int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("quota %d", want), func() bool { return quotaOf(t, s, email) == want })
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen by the recipient cache within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRecipientTriggersCoverColumns: the triggers that announce changes to
// the recipient cache (017_recipient_changes.sql) name every column of
// domains and mailboxes but the counters that deliveries and creates
// update, so that a column added later is not left out by mistake.
func TestRecipientTriggersCoverColumns(t *testing.T) {
	s, _, _ := mailFixtureURL(t, 1)
	counters := map[string][]string{
		"domains":   {"id", "mailbox_count", "alias_count", "message_count", "used_bytes"},
		"mailboxes": {"id", "password_hash", "used_bytes", "message_count", "folder_count", "last_login", "password_changed_at"},
	}
	for table, skip := range counters {
		rows, err := s.pool.Query(context.Background(), `
			SELECT c.column_name FROM information_schema.columns c
			WHERE c.table_schema = current_schema() AND c.table_name = $1
			AND NOT EXISTS (
				SELECT 1 FROM pg_trigger g JOIN pg_attribute a ON a.attrelid = g.tgrelid AND a.attnum = ANY(g.tgattr)
				WHERE g.tgrelid = (quote_ident(current_schema()) || '.' || $1)::regclass
				AND g.tgname = 'recipients_changed' AND a.attname = c.column_name)
			AND c.column_name <> ALL($2)`, table, skip)
		if err != nil {
			t.Fatal(err)
		}
		missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) > 0 {
			t.Errorf("%s: columns no recipients_changed trigger names: %v (name them in a migration, or list them here as counters)", table, missing)
		}
	}
}

// TestRecipientCacheKeptByMail: a delivery, a login and the node's jobs
// leave the recipient answers kept; a control-plane write voids them.
func TestRecipientCacheKeptByMail(t *testing.T) {
	ctx := context.Background()
	s, ids, _ := recipientFixture(t)
	const a = "u0@bench.example"
	gen := func() uint64 {
		s.recipients.mu.Lock()
		defer s.recipients.mu.Unlock()
		return s.recipients.gen
	}
	quotaOf(t, s, a)
	g := gen()
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: k\r\n\r\nk\r\n"), ReceivedAt: benchMailNow, MailboxIDs: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLogin(ctx, ids[0], benchMailNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Heartbeat(ctx, "n1", benchMailNow, time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // an announcement, if one came, has arrived
	if got := gen(); got != g {
		t.Errorf("a delivery, a login and a heartbeat voided the recipient answers (gen %d -> %d)", g, got)
	}
	if _, err := s.SetQuota(ctx, partnerOf(t, s, ids[0]), a, 4000); err != nil {
		t.Fatal(err)
	}
	if got := gen(); got == g {
		t.Error("SetQuota through this node left the recipient answers kept")
	}
}

func partnerOf(t *testing.T, s *Store, mailboxID int64) int64 {
	t.Helper()
	var p int64
	if err := s.pool.QueryRow(context.Background(), `SELECT partner_id FROM mailboxes WHERE id = $1`, mailboxID).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecipientChangesLongSchema: on a schema whose name makes the shared
// channel's name longer than PostgreSQL's 63 bytes, the triggers' NOTIFY
// and the listener agree on the cut name, and a write that fires them is
// not refused.
func TestRecipientChangesLongSchema(t *testing.T) {
	ctx := context.Background()
	base := pgtest.URL(t) // skips or fails as the other tests do without a database
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path") + "_" + strings.Repeat("x", 50)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) })
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String(), Options{Node: "long"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.CreatePartner(ctx, "p", benchMailNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "long.example", Plan: mailstore.Plan{Name: "basic", QuotaMB: 100}}, benchMailNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateMailbox(ctx, p.ID, "long.example", "a@long.example", "x", benchMailNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetQuota(ctx, p.ID, "a@long.example", 200); err != nil {
		t.Fatalf("SetQuota, whose update fires the trigger: %v", err)
	}
	quotaOf(t, s, "a@long.example")
	behind(t, s, `UPDATE mailboxes SET quota_mb = 300 WHERE email = 'a@long.example'`)
	waitQuota(t, s, "a@long.example", 300)
}

// TestRecipientCacheListenerLost: when the notifier's listening session
// ends, announcements sent before it listens again are lost; the cache
// voids what it held when the notifier finds the session gone, and keeps
// nothing until it listens again, so that a change made through another
// node meanwhile is seen within milliseconds, not after the TTL (the
// clock stands still), and changes are heard again once it listens.
func TestRecipientCacheListenerLost(t *testing.T) {
	ctx := context.Background()
	admin, _, u := mailFixtureURL(t, 1)
	s, app := openNamed(t, u, "mhlisten", Options{Node: "listen"})
	s.recipients.now = testclock.New(benchMailNow).Now
	const a = "u0@bench.example"
	listening := func() bool {
		s.recipients.mu.Lock()
		defer s.recipients.mu.Unlock()
		return s.recipients.listening
	}
	for round := range 3 {
		waitFor(t, "the notifier listening", listening)
		quotaOf(t, s, a) // kept
		var ended int
		waitFor(t, "the listening session to end", func() bool {
			err := admin.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app).Scan(&ended)
			return err == nil && ended == 1
		})
		// Changed at once: its announcement is lost with the session.
		want := int64(3000 + round)
		behind(t, admin, `UPDATE mailboxes SET quota_mb = $2 WHERE email = $1`, a, want)
		waitQuota(t, s, a, want)
		// Listening again, answers are kept and changes heard.
		waitFor(t, "the notifier listening again", listening)
		if q := quotaOf(t, s, a); q != want {
			t.Errorf("round %d: quota once listening again = %d, want %d (an answer from before the loss kept)", round, q, want)
		}
		behind(t, admin, `UPDATE mailboxes SET quota_mb = $2 WHERE email = $1`, a, want+100)
		waitQuota(t, s, a, want+100)
	}
}
