package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// subsFixture is an account on a store, for the migration tests.
type subsFixture struct {
	t   *testing.T
	ctx context.Context
	url string
	st  *pgstore.Store
	mb  mailstore.Mailbox
}

func newSubsFixture(t *testing.T) *subsFixture {
	t.Helper()
	f := &subsFixture{t: t, ctx: context.Background(), url: pgtest.URL(t)}
	f.reopen()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p, err := f.st.CreatePartner(f.ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "small", QuotaMB: 1, RetentionDays: 30, TransferMonthlyMB: 100}
	if _, err := f.st.CreateDomain(f.ctx, p.ID, mailstore.NewDomain{Name: "a.example", Plan: plan}, now); err != nil {
		t.Fatal(err)
	}
	if f.mb, err = f.st.CreateMailbox(f.ctx, p.ID, "a.example", "u@a.example", "$argon2id$x", now); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *subsFixture) reopen() {
	f.t.Helper()
	if f.st != nil {
		f.st.Close()
	}
	st, err := pgstore.Open(f.ctx, f.url, pgstore.Options{Node: "test"})
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	f.st = st
	f.t.Cleanup(func() { st.Close() })
}

func (f *subsFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.st.Pool().Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

func (f *subsFixture) subscriptions() []string {
	f.t.Helper()
	got, err := f.st.Subscriptions(f.ctx, f.mb.ID)
	if err != nil {
		f.t.Fatalf("Subscriptions() = %v", err)
	}
	return got
}

// marked is the folders whose subscribed column is set, what binaries
// older than migration 009 read.
func (f *subsFixture) marked() []string {
	f.t.Helper()
	rows, err := f.st.Pool().Query(f.ctx, `SELECT name FROM folders WHERE mailbox_id = $1 AND subscribed ORDER BY name COLLATE "C"`, f.mb.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestMigrateSubscriptions: migration 009 makes subscriptions of the
// folders marked subscribed in a schema 8 database, and only of those.
func TestMigrateSubscriptions(t *testing.T) {
	f := newSubsFixture(t)
	if _, err := f.st.CreateFolder(f.ctx, f.mb.ID, "Work"); err != nil {
		t.Fatal(err)
	}
	// Back to schema 8: its only record of a subscription is the mark.
	f.exec(`DROP TABLE subscriptions`)
	f.exec(`DROP FUNCTION subscriptions_from_folder, folders_from_subscription CASCADE`)
	f.exec(`ALTER TABLE messages DROP COLUMN header`) // 010, applied again
	f.exec(`DROP TABLE folder_keywords`)              // 013, applied again
	f.exec(`DELETE FROM schema_migrations WHERE version >= 9`)
	f.exec(`UPDATE folders SET subscribed = name IN ('INBOX', 'Work') WHERE mailbox_id = $1`, f.mb.ID)
	f.reopen()
	if got, want := f.subscriptions(), []string{"INBOX", "Work"}; !slices.Equal(got, want) {
		t.Errorf("Subscriptions() after migration 009 = %q, want %q", got, want)
	}
}

// TestSubscriptionsOlderBinary: during a rolling upgrade, a node of
// schema 8 reads and writes folders.subscribed. What it subscribes
// reaches the subscriptions, and what a newer node subscribes reaches
// the mark it reads; deleting an account works with both in place.
func TestSubscriptionsOlderBinary(t *testing.T) {
	f := newSubsFixture(t)
	if got, want := f.marked(), f.subscriptions(); !slices.Equal(got, want) {
		t.Errorf("marked folders of a new account = %q, want its subscriptions %q", got, want)
	}
	// An older node's CREATE (the column's default subscribes) and
	// UNSUBSCRIBE, as its SQL does them.
	f.exec(`INSERT INTO folders (mailbox_id, name, uid_validity) VALUES ($1, 'Old', nextval('uid_validity_seq'))`, f.mb.ID)
	f.exec(`UPDATE mailboxes SET folder_count = folder_count + 1 WHERE id = $1`, f.mb.ID)
	f.exec(`UPDATE folders SET subscribed = false WHERE mailbox_id = $1 AND name = 'Drafts'`, f.mb.ID)
	got := f.subscriptions()
	if !slices.Contains(got, "Old") || slices.Contains(got, "Drafts") {
		t.Errorf("Subscriptions() after an older node's CREATE Old, UNSUBSCRIBE Drafts = %q", got)
	}
	// A newer node's SUBSCRIBE, UNSUBSCRIBE and CREATE.
	if err := f.st.Subscribe(f.ctx, f.mb.ID, "Drafts"); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Unsubscribe(f.ctx, f.mb.ID, "Sent"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.CreateFolder(f.ctx, f.mb.ID, "New"); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Subscribe(f.ctx, f.mb.ID, "Later"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.CreateFolder(f.ctx, f.mb.ID, "Later"); err != nil {
		t.Fatal(err)
	}
	want := []string{"Archive", "Drafts", "INBOX", "Junk", "Later", "Old", "Trash"}
	if got := f.marked(); !slices.Equal(got, want) {
		t.Errorf("marked folders = %q, want %q", got, want)
	}
	if got := f.subscriptions(); !slices.Equal(got, want) {
		t.Errorf("Subscriptions() = %q, want %q", got, want)
	}
	// A newer node's RENAME leaves the subscription, and the mark, behind.
	if err := f.st.RenameFolder(f.ctx, f.mb.ID, "Old", "Renamed"); err != nil {
		t.Fatal(err)
	}
	if got := f.marked(); slices.Contains(got, "Renamed") {
		t.Errorf("marked folders after RENAME Old Renamed = %q, want Renamed unmarked", got)
	}
	if err := f.st.DeleteMailbox(f.ctx, f.mb.PartnerID, f.mb.Email); err != nil {
		t.Fatalf("DeleteMailbox() = %v", err)
	}
	var n int
	if err := f.st.Pool().QueryRow(f.ctx, `SELECT count(*) FROM subscriptions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("subscriptions rows after DeleteMailbox = %d (%v), want 0", n, err)
	}
}
