package smtpd

import (
	"context"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/spam/rspamdtest"
)

// partnerFixture adds to a fixture (partner acme) the partner other:
//
//	bigbank.example  mallory; not verified (its real owner publishes
//	                 p=reject)
//	reject.example   pat; verified, publishes p=reject, fails SPF
//	good.example     gus; verified, SPF allows 127.0.0.1, p=reject
//
// and answers the stub DNS that says so.
func partnerFixture(t *testing.T, f *fixture) *dnstest.Server {
	t.Helper()
	ctx := context.Background()
	other, err := f.st.CreatePartner(ctx, "other", testNow)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	for _, m := range []struct {
		email    string
		verified bool
	}{{"mallory@bigbank.example", false}, {"pat@reject.example", true}, {"gus@good.example", true}} {
		d := m.email[strings.IndexByte(m.email, '@')+1:]
		if _, err := f.st.CreateDomain(ctx, other.ID, mailstore.NewDomain{Name: d, Plan: plan, MaxMailboxes: 10, MaxAliases: 10}, testNow); err != nil {
			t.Fatal(err)
		}
		if m.verified {
			if _, err := f.st.SetVerified(ctx, other.ID, d, true, testNow); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.st.CreateMailbox(ctx, other.ID, d, m.email, passwordHash(t), testNow); err != nil {
			t.Fatal(err)
		}
	}
	dns := dnstest.Start(t)
	for _, d := range []string{"bigbank.example", "reject.example"} {
		dns.SetTXT(d, "v=spf1 -all")
		dns.SetTXT("_dmarc."+d, "v=DMARC1; p=reject")
	}
	dns.SetTXT("good.example", "v=spf1 ip4:127.0.0.1 -all")
	dns.SetTXT("_dmarc.good.example", "v=DMARC1; p=reject")
	return dns
}

// partnerEnv is a submission server over partnerFixture with the real
// inbound checks and DMARC enforced.
func partnerEnv(t *testing.T) *subEnv {
	t.Helper()
	var checker dmarcChecker
	e := newSubmissionEnv(t, func(c *Config) {
		c.Authenticator = &checker
		c.DMARCEnforce = true
	})
	dns := partnerFixture(t, e.fixture)
	checker.c = &mailauth.Checker{Resolver: dns.Resolver(), Hostname: "mx.test"}
	return e
}

// TestUnverifiedSenderSubmission: a mailbox of a domain its partner has
// not verified sends to its own partner's mailboxes only; another
// partner's mailbox and a remote address are refused at RCPT with 550
// 5.7.1 naming the domain (docs/security.md).
func TestUnverifiedSenderSubmission(t *testing.T) {
	e := partnerEnv(t)
	r := e.rawTLS(t)
	r.cmd("EHLO client.test", "250")
	r.cmd("AUTH PLAIN "+b64("\x00mallory@bigbank.example\x00"+password), "235")
	r.cmd("MAIL FROM:<mallory@bigbank.example>", "250")
	for _, rcpt := range []string{"bob@a.test", "joe@remote.test", "fwd@a.test"} {
		got := r.cmd("RCPT TO:<"+rcpt+">", "550 5.7.1 ")
		if want := "<" + rcpt + ">: sender domain bigbank.example is not verified; it may send only to its own partner's mailboxes"; !strings.Contains(got, want) {
			t.Errorf("RCPT TO:<%s> = %q, want it to say %q", rcpt, got, want)
		}
	}
	// The own partner's mailbox, verified domain or not.
	r.cmd("RCPT TO:<gus@good.example>", "250")
	r.cmd("DATA", "354")
	r.send("From: mallory@bigbank.example", "To: gus@good.example", "Subject: own partner", "", "hello", ".")
	r.expect("250")
	if n := len(e.inbox(t, "gus@good.example")); n != 1 {
		t.Errorf("gus@good.example's INBOX has %d messages, want 1", n)
	}
	for _, m := range []string{"bob@a.test"} {
		if n := len(e.inbox(t, m)); n != 0 {
			t.Errorf("%s's INBOX has %d messages, want none", m, n)
		}
	}
	if q := e.outbound(t); len(q) != 0 {
		t.Errorf("queue has %d entries, want none: %+v", len(q), q)
	}
}

// TestCrossPartnerSubmission: a message from one partner's mailbox to
// another partner's gets the MX's checks: an Authentication-Results
// field, and the DMARC policy of its From: domain (p=reject: 550 5.7.1).
// Between a partner's own mailboxes nothing is checked.
func TestCrossPartnerSubmission(t *testing.T) {
	e := partnerEnv(t)

	// SPF passes for good.example: delivered, with the verdict.
	if err := e.submit(t, "gus@good.example", "gus@good.example", []string{"bob@a.test"}, fromMsg("gus@good.example", "between partners")); err != nil {
		t.Fatalf("gus to bob = %v, want delivered", err)
	}
	inbox := e.inbox(t, "bob@a.test")
	if len(inbox) != 1 {
		t.Fatalf("bob's INBOX has %d messages, want 1", len(inbox))
	}
	if !strings.HasPrefix(string(inbox[0]), "Authentication-Results: mx.test;") || !strings.Contains(string(inbox[0]), "dmarc=pass") {
		t.Errorf("message between partners does not start with the checks' verdict:\n%s", inbox[0])
	}

	// reject.example fails DMARC and publishes p=reject: refused, for
	// every recipient.
	err := e.submit(t, "pat@reject.example", "pat@reject.example", []string{"bob@a.test", "gus@good.example"}, fromMsg("pat@reject.example", "fails"))
	if got := smtpCode(err); got != "550 5.7.1" || !strings.Contains(err.Error(), "DMARC") {
		t.Errorf("pat to bob = %v, want 550 5.7.1 naming DMARC", err)
	}
	if n := len(e.inbox(t, "bob@a.test")); n != 1 {
		t.Errorf("bob's INBOX has %d messages after the refusal, want 1", n)
	}

	// Within its own partner the same message is not checked.
	if err := e.submit(t, "pat@reject.example", "pat@reject.example", []string{"gus@good.example"}, fromMsg("pat@reject.example", "own partner")); err != nil {
		t.Fatalf("pat to gus = %v, want delivered", err)
	}
	inbox = e.inbox(t, "gus@good.example")
	if len(inbox) != 1 || strings.Contains(string(inbox[0]), "Authentication-Results:") {
		t.Errorf("gus's INBOX = %d messages, want 1 without Authentication-Results:\n%s", len(inbox), inbox)
	}
}

// TestSpamCrossPartner: a submission to another partner's mailbox gets
// the spam filter of that mailbox's domain, as from the MX: what rspamd
// flags lands in its Junk folder; the same message to a mailbox of the
// sender's own partner stays in INBOX.
func TestSpamCrossPartner(t *testing.T) {
	r := rspamdtest.Start(t)
	e := newSubmissionEnv(t, func(c *Config) { c.Spam = spamClient(t, r.URL, 0) })
	partnerFixture(t, e.fixture)
	msg := strings.Replace(spamMessage("hello", "See you there. "+rspamdtest.JunkToken), "From: Ann <ann@remote.test>", "From: Gus <gus@good.example>", 1)
	if err := e.submit(t, "gus@good.example", "gus@good.example", []string{"bob@a.test", "pat@reject.example"}, msg); err != nil {
		t.Fatalf("submit = %v, want 250", err)
	}
	for _, c := range []struct{ mailbox, folder string }{{"bob@a.test", "Junk"}, {"pat@reject.example", "INBOX"}} {
		if n := len(e.folderBodies(t, c.mailbox, c.folder)); n != 1 {
			t.Errorf("%s's %s has %d messages, want 1", c.mailbox, c.folder, n)
		}
	}
}
