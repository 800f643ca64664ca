package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/sieve"
)

// sieveTx delivers msg from someone@sender.example to rcpts, with
// scripts (address -> script text) active, and answers the commit's
// result and error.
func sieveTx(t *testing.T, f *fixture, scripts map[string]string, msg string, rcpts ...string) (Result, error) {
	t.Helper()
	ctx := context.Background()
	for addr, text := range scripts {
		if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: f.mailbox(addr).ID, Name: "s", Script: text, Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	a := New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})
	tx := a.StartMX("someone@sender.example", 0)
	for _, r := range rcpts {
		if err := tx.AddRecipient(ctx, r, ""); err != nil {
			t.Fatalf("AddRecipient(%s) = %v", r, err)
		}
	}
	return tx.Commit(ctx, []byte(msg), testNow)
}

// inFolder counts the messages of a mailbox's folder.
func (f *fixture) inFolder(addr, folder string) int {
	f.t.Helper()
	mb := f.mailbox(addr)
	fo, err := f.st.Folder(context.Background(), mb.ID, folder)
	if err != nil {
		f.t.Fatalf("folder %s of %s: %v", folder, addr, err)
	}
	return int(fo.Messages)
}

// TestSieveErrorsKeep: a script that does not parse, or fails at run
// time (its step budget, before its discard), keeps the message in
// INBOX.
func TestSieveErrorsKeep(t *testing.T) {
	f := newFixture(t)
	scripts := map[string]string{
		"bob@a.test": `if header :contains "subject" "x" { discard; `, // unterminated
		// 14 tests of 4 fields × 1,000 keys: over the step budget of
		// 50,000 (with one test, the discard runs).
		"carol@a.test": strings.Repeat(`if header :contains ["subject", "subject", "subject", "subject"] [`+strings.Repeat(`"k",`, 999)+`"k"] { stop; }`+"\n", 14) + `discard;`,
	}
	res, err := sieveTx(t, f, scripts, "Subject: x\r\n\r\nbody\r\n", "bob@a.test", "carol@a.test")
	if err != nil {
		t.Fatalf("Commit = %v", err)
	}
	if len(res.Delivered) != 2 || f.inFolder("bob@a.test", "INBOX") != 1 || f.inFolder("carol@a.test", "INBOX") != 1 {
		t.Errorf("delivered %v, INBOX of bob %d, carol %d; want both kept", res.Delivered, f.inFolder("bob@a.test", "INBOX"), f.inFolder("carol@a.test", "INBOX"))
	}
}

// TestSieveRedirectLoop: a message that carries this mailbox's redirect
// mark is kept, not redirected again; another mailbox's mark does not
// stop a redirect, queued as a forward of the mailbox's domain with an
// SRS sender.
func TestSieveRedirectLoop(t *testing.T) {
	f := newFixture(t)
	scripts := map[string]string{"bob@a.test": `redirect "someone@remote.test";`}
	res, err := sieveTx(t, f, scripts, RedirectHeader+": bob@a.test\r\nSubject: back\r\n\r\nbody\r\n", "bob@a.test")
	if err != nil || len(res.Queued) != 0 || f.inFolder("bob@a.test", "INBOX") != 1 {
		t.Errorf("marked message: %+v, %v; INBOX %d; want kept, nothing queued", res, err, f.inFolder("bob@a.test", "INBOX"))
	}
	res, err = sieveTx(t, f, nil, RedirectHeader+": carol@a.test\r\nSubject: other\r\n\r\nbody\r\n", "bob@a.test")
	if err != nil || len(res.Queued) != 1 || f.inFolder("bob@a.test", "INBOX") != 1 {
		t.Errorf("another's mark: %+v, %v; want redirected", res, err)
	}
	entries, _, err := f.st.OutboundEntries(context.Background(), mailstore.Page{})
	if err != nil || len(entries) != 1 {
		t.Fatalf("queue: %v, %v", entries, err)
	}
	if e := entries[0]; e.Kind != mailstore.KindForward || e.DomainID != f.domains["a.test"].ID || e.From != srsFrom("someone@sender.example", "a.test") {
		t.Errorf("queued %+v, want a forward of a.test with an SRS sender", e)
	}
}

// TestSieveRedirectLimit: a script with more redirects than the
// interpreter allows (sieve.DefaultMaxRedirects) fails its run: none of
// its actions is taken, and the message is kept.
func TestSieveRedirectLimit(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := range 7 {
		fmt.Fprintf(&b, "redirect \"r%d@remote.test\";\n", i)
	}
	res, err := sieveTx(t, f, map[string]string{"bob@a.test": b.String()}, "Subject: many\r\n\r\nbody\r\n", "bob@a.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Queued) != 0 || f.inFolder("bob@a.test", "INBOX") != 1 {
		t.Errorf("7 redirects: queued %v, INBOX %d; want the message kept", res.Queued, f.inFolder("bob@a.test", "INBOX"))
	}
}

// TestSieveRejectSeveralRecipients: reject alone is ErrSieveReject with
// the reason, permanent; with another recipient the rejecting mailbox
// stores nothing and the sender gets a rejection DSN (RFC 5429 section
// 2.1.2) through the queue, from <>; a message the spam filter sent to
// Junk, or from <>, gets none and is kept.
func TestSieveRejectSeveralRecipients(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	scripts := map[string]string{"bob@a.test": `require "reject"; reject "no thanks";`}
	_, err := sieveTx(t, f, scripts, "Subject: r\r\n\r\nbody\r\n", "bob@a.test")
	var rej *SieveRejectError
	if !errors.Is(err, ErrSieveReject) || !errors.As(err, &rej) || rej.Reason != "no thanks" || Temporary(err) {
		t.Errorf("alone: %v, want ErrSieveReject with the reason, permanent", err)
	}
	if _, err := sieveTx(t, f, nil, "Subject: r\r\nMessage-ID: <r1@sender.example>\r\n\r\nbody\r\n", "bob@a.test", "carol@a.test"); err != nil {
		t.Errorf("with carol: %v, want delivered", err)
	}
	if in, c := f.inFolder("bob@a.test", "INBOX"), f.inFolder("carol@a.test", "INBOX"); in != 0 || c != 1 {
		t.Errorf("bob's INBOX %d, carol's %d; want 0 (rejected) and 1", in, c)
	}
	entries, _, err := f.st.OutboundEntries(ctx, mailstore.Page{})
	if err != nil || len(entries) != 1 {
		t.Fatalf("queue: %v, %v; want one DSN", entries, err)
	}
	e := entries[0]
	if e.Kind != mailstore.KindBounce || e.From != "" || len(e.Pending()) != 1 || e.Pending()[0] != "someone@sender.example" {
		t.Errorf("queued %+v, want a bounce from <> to someone@sender.example", e)
	}
	dsn, err := f.st.OutboundBody(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"report-type=delivery-status", "Final-Recipient: rfc822; bob@a.test", "Action: failed",
		"Status: 5.7.1", "no thanks", "Message-ID: <r1@sender.example>", "Auto-Submitted: auto-replied"} {
		if !strings.Contains(string(dsn), want) {
			t.Errorf("DSN lacks %q:\n%s", want, dsn)
		}
	}

	// From <>: nothing to send a DSN to; kept.
	a := New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})
	tx := a.StartMX("", 0)
	for _, r := range []string{"bob@a.test", "carol@a.test"} {
		if err := tx.AddRecipient(ctx, r, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Commit(ctx, []byte("Subject: bounce\r\n\r\nbody\r\n"), testNow); err != nil {
		t.Fatal(err)
	}
	if in := f.inFolder("bob@a.test", "INBOX"); in != 1 {
		t.Errorf("bob's INBOX %d after a reject of mail from <>, want 1 (kept)", in)
	}
	if entries, _, _ := f.st.OutboundEntries(ctx, mailstore.Page{}); len(entries) != 1 {
		t.Errorf("%d queue entries, want still the one DSN", len(entries))
	}

	// Quarantined (the spam filter's or DMARC's Junk): no DSN to a
	// likely forged sender; kept in Junk.
	tx = a.StartMX("forged@sender.example", 0)
	for _, r := range []string{"bob@a.test", "carol@a.test"} {
		if err := tx.AddRecipient(ctx, r, ""); err != nil {
			t.Fatal(err)
		}
	}
	tx.Quarantine()
	if _, err := tx.Commit(ctx, []byte("Subject: spam\r\n\r\nbody\r\n"), testNow); err != nil {
		t.Fatal(err)
	}
	if j := f.inFolder("bob@a.test", "Junk"); j != 1 {
		t.Errorf("bob's Junk %d after a reject of junk, want 1 (kept)", j)
	}
	if entries, _, _ := f.st.OutboundEntries(ctx, mailstore.Page{}); len(entries) != 1 {
		t.Errorf("%d queue entries after a reject of junk, want still the one DSN", len(entries))
	}
}

// TestSieveEveryMode: the script runs for the MX, a submission to a
// local mailbox and the queue's local delivery alike; a reject refuses
// the first two and is a rejection DSN from the queue, whose sender had
// its 250.
func TestSieveEveryMode(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []Mode{MX, Submission, Forward} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t)
			carol := f.mailbox("carol@a.test")
			put := func(text string) {
				t.Helper()
				if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: carol.ID, Name: "s", Script: text, Active: true}); err != nil {
					t.Fatal(err)
				}
			}
			a := New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})
			send := func() error {
				t.Helper()
				tx := f.start(a, mode, "bob@a.test", 0)
				if err := tx.AddRecipient(ctx, "carol@a.test", ""); err != nil {
					t.Fatalf("AddRecipient = %v", err)
				}
				_, err := tx.Commit(ctx, []byte("Subject: s\r\n\r\nbody\r\n"), testNow)
				return err
			}
			put(`require ["fileinto", "mailbox"]; fileinto :create "Sorted";`)
			if err := send(); err != nil {
				t.Fatalf("fileinto: %v", err)
			}
			if n := f.inFolder("carol@a.test", "Sorted"); n != 1 {
				t.Errorf("Sorted holds %d, want 1", n)
			}
			put(`require "reject"; reject "no";`)
			err := send()
			if mode == Forward {
				// bob is hosted here: the DSN is in his INBOX.
				if err != nil || f.inFolder("carol@a.test", "INBOX") != 0 || f.inFolder("bob@a.test", "INBOX") != 1 {
					t.Errorf("reject from the queue: %v, carol's INBOX %d, bob's %d; want a DSN to bob",
						err, f.inFolder("carol@a.test", "INBOX"), f.inFolder("bob@a.test", "INBOX"))
				}
			} else if !errors.Is(err, ErrSieveReject) {
				t.Errorf("reject: %v, want ErrSieveReject", err)
			}
		})
	}
}

// TestSieveRedirectNullSender: a bounce is redirected with the null
// sender, as a forward of the mailbox's domain (counted in its
// transfer).
func TestSieveRedirectNullSender(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: f.mailbox("bob@a.test").ID, Name: "s", Script: `redirect "out@remote.test";`, Active: true}); err != nil {
		t.Fatal(err)
	}
	a := New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})
	tx := a.StartMX("", 0)
	if err := tx.AddRecipient(ctx, "bob@a.test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, []byte("Subject: bounce\r\n\r\nbody\r\n"), testNow); err != nil {
		t.Fatal(err)
	}
	entries, _, err := f.st.OutboundEntries(ctx, mailstore.Page{})
	if err != nil || len(entries) != 1 {
		t.Fatalf("queue: %v, %v", entries, err)
	}
	if e := entries[0]; e.Kind != mailstore.KindForward || e.From != "" || e.DomainID != f.domains["a.test"].ID {
		t.Errorf("queued %+v, want a forward of a.test from <>", e)
	}
}

// readCounter counts the reads of active scripts of a real store.
type readCounter struct {
	SieveStore
	reads int
}

func (r *readCounter) ActiveSieveScript(ctx context.Context, id int64) (mailstore.SieveScript, error) {
	r.reads++
	return r.SieveStore.ActiveSieveScript(ctx, id)
}

// TestSieveCache: while the recipient's look-up answers the stamp of the
// cached script, the script is not read; a new stamp reads it and
// parses it again when its text changed; a look-up without a stamp
// reads it; the cache stays within its bytes.
func TestSieveCache(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rc := &readCounter{SieveStore: f.st}
	s := NewSieve(SieveConfig{Store: rc, MaxCachedBytes: 100})
	put := func(addr, text string) mailstore.Mailbox {
		t.Helper()
		if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: f.mailbox(addr).ID, Name: "s", Script: text, Active: true}); err != nil {
			t.Fatal(err)
		}
		mb, _, err := f.st.MailboxByEmail(ctx, addr)
		if err != nil || !mb.HasSieve || mb.SieveVersion == 0 {
			t.Fatalf("look-up: %+v, %v; want a stamp", mb, err)
		}
		return mb
	}
	script := func(mb mailstore.Mailbox, reads int) *sieve.Script {
		t.Helper()
		sc, _, err := s.script(ctx, mb)
		if err != nil || sc == nil {
			t.Fatalf("script = %v, %v", sc, err)
		}
		if rc.reads != reads {
			t.Errorf("%d reads of the store, want %d", rc.reads, reads)
		}
		return sc
	}
	bob := put("bob@a.test", "keep;")
	first := script(bob, 1)
	if again := script(bob, 1); again != first {
		t.Error("same stamp: parsed again")
	}
	stale := bob
	bob = put("bob@a.test", "discard;")
	changed := script(bob, 2)
	if changed == first {
		t.Error("changed text not parsed again")
	}
	// A look-up older than the cache (another node's cached answer):
	// read, the same text, not parsed again.
	if got := script(stale, 3); got != changed {
		t.Error("stale stamp: parsed again, or the old script")
	}
	noStamp := bob
	noStamp.SieveVersion = 0
	script(noStamp, 4)
	script(noStamp, 5)
	carol := put("carol@a.test", "# "+strings.Repeat("x", 85)+"\nkeep;")
	script(carol, 6)
	if s.cached > 100 || len(s.cache) != 1 {
		t.Errorf("cache of %d bytes, %d scripts; want at most 100 bytes, only the last", s.cached, len(s.cache))
	}
}
