package pgstore

import (
	"context"
	"sync"
	"testing"

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

	t.Run("another node: within the TTL", func(t *testing.T) {
		s, _, clock := recipientFixture(t)
		if q := quotaOf(t, s, a); q != big {
			t.Fatalf("quota = %d, want %d", q, big)
		}
		behind(t, s, `UPDATE mailboxes SET quota_mb = 5000 WHERE email = $1`, a)
		if q := quotaOf(t, s, a); q != big {
			t.Errorf("quota within the TTL = %d, want the cached %d", q, big)
		}
		if m, _, err := s.MailboxByEmail(ctx, a); err != nil || m.QuotaMB != 5000 {
			t.Errorf("MailboxByEmail = %d, %v; want 5000 (never cached)", m.QuotaMB, err)
		}
		clock.Add(defaultRecipientTTL)
		if q := quotaOf(t, s, a); q != 5000 {
			t.Errorf("quota after the TTL = %d, want 5000", q)
		}
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

func partnerOf(t *testing.T, s *Store, mailboxID int64) int64 {
	t.Helper()
	var p int64
	if err := s.pool.QueryRow(context.Background(), `SELECT partner_id FROM mailboxes WHERE id = $1`, mailboxID).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}
