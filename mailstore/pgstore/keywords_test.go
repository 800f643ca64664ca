package pgstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// TestMigrateKeywords: migration 013 counts the keywords the folders'
// messages hold (each key once per message, in any case), so that the
// limit holds for a folder filled before it; MaxKeywords sets the limit.
func TestMigrateKeywords(t *testing.T) {
	f := newSubsFixture(t)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for range 2 {
		if _, err := f.st.Deliver(f.ctx, mailstore.Delivery{Body: []byte("m"), ReceivedAt: at, MailboxIDs: []int64{f.mb.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := f.st.Folder(f.ctx, f.mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	kws := make([]string, 10)
	for i := range kws {
		kws[i] = fmt.Sprintf("kw%d", i)
	}
	if _, err := f.st.SetFlags(f.ctx, f.mb.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, append(kws, `\Seen`)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SetFlags(f.ctx, f.mb.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"KW1"}); err != nil {
		t.Fatal(err)
	}
	f.exec(`DROP TABLE folder_keywords`)
	f.exec(`DELETE FROM schema_migrations WHERE version >= 13`)
	f.st.Close()
	st, err := pgstore.Open(f.ctx, f.url, pgstore.Options{Node: "test", MaxKeywords: 10})
	if err != nil {
		t.Fatal(err)
	}
	f.st = st
	t.Cleanup(func() { st.Close() })
	var rows, n int64
	if err := st.Pool().QueryRow(f.ctx, `SELECT count(*), coalesce(sum(n), 0) FROM folder_keywords`).Scan(&rows, &n); err != nil {
		t.Fatal(err)
	}
	if rows != 10 || n != 11 {
		t.Errorf("folder_keywords after 013: %d rows, %d in all, want 10 and 11", rows, n)
	}
	if _, err := st.SetFlags(f.ctx, f.mb.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"new"}); !errors.Is(err, mailstore.ErrTooManyKeywords) {
		t.Errorf("SetFlags(an 11th keyword, limit 10) = %v, want ErrTooManyKeywords", err)
	}
	if _, err := st.SetFlags(f.ctx, f.mb.ID, inbox.ID, []uint32{1, 2}, mailstore.FlagsRemove, []string{"kw1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFlags(f.ctx, f.mb.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"new"}); err != nil {
		t.Errorf("SetFlags(a 10th keyword after kw1 left both messages) = %v, want nil", err)
	}
}
