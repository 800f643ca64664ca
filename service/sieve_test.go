package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// TestSieveAtDelivery: each mailbox's active script runs on mail the MX
// delivers to it, over SMTP into the running service, read back over
// IMAP; the redirect and the vacation reply go out to the relay; and a
// subaddress reaches its base mailbox unless recipient_delimiter is off.
func TestSieveAtDelivery(t *testing.T) {
	relay := startSink(t)
	dir := t.TempDir()
	dns := dnstest.Start(t)
	env := []string{"MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr, "MAILHOST_ALLOW_INSECURE_AUTH", "true"}
	addrs, out, stop := startServer(t, dir, env...)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	if code, body := call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`); code != 201 {
		t.Fatalf("POST domain = %d %s", code, body)
	}
	users := []string{"ann", "bob", "carol", "dave"}
	for _, u := range users {
		if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"`+u+`@example.com","password":"password123"}`); code != 201 {
			t.Fatalf("POST user %s = %d %s", u, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	stop()

	scripts := map[string]string{
		"ann": `require ["fileinto", "envelope", "subaddress", "mailbox", "imap4flags"];
if header :contains "subject" "drop" { discard; stop; }
if header :contains "subject" "junkme" { fileinto "Junk"; }
if envelope :detail "to" "spam" { fileinto "Junk"; }
if header :contains "subject" "golang" { fileinto :create "Lists/Go"; }
if header :contains "subject" "nowhere" { fileinto "Nowhere"; }
if header :contains "subject" "flagme" { addflag ["\\Flagged", "$important"]; }`,
		"bob":   `redirect "out@remote.test";`,
		"carol": `require "reject"; reject "Carol takes no mail.";`,
		"dave":  `require "vacation"; vacation :days 1 :subject "away" "I am away until Monday.";`,
	}
	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for u, text := range scripts {
		mb, _, err := st.MailboxByEmail(context.Background(), u+"@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutSieveScript(context.Background(), mailstore.SieveScript{MailboxID: mb.ID, Name: "main", Script: text, Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	addrs, _, stop = startServer(t, dir, env...)

	send := func(from string, to []string, subject string) error {
		t.Helper()
		c, err := smtp.Dial(addrs.SMTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		msg := "From: " + from + "\r\nTo: " + strings.Join(to, ", ") + "\r\nSubject: " + subject + "\r\n\r\nbody\r\n"
		return c.SendMail(from, to, strings.NewReader(msg))
	}
	count := func(user, folder string) uint32 {
		t.Helper()
		c, err := imapclient.DialInsecure(addrs.IMAP, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(user+"@example.com", "password123").Wait(); err != nil {
			t.Fatal(err)
		}
		data, err := c.Status(folder, &imap.StatusOptions{NumMessages: true}).Wait()
		if err != nil || data.NumMessages == nil {
			t.Fatalf("STATUS %s of %s: %v", folder, user, err)
		}
		return *data.NumMessages
	}

	// discard: 250, nothing stored.
	if err := send("x@sender.test", []string{"ann@example.com"}, "please drop"); err != nil {
		t.Fatalf("discarded message: %v", err)
	}
	// fileinto "Junk"; :detail of a subaddress; the implicit keep.
	for _, m := range []struct{ to, subject string }{
		{"ann@example.com", "junkme"}, {"ann+spam@example.com", "tagged"}, {"ann+other@example.com", "hello"},
	} {
		if err := send("x@sender.test", []string{m.to}, m.subject); err != nil {
			t.Fatalf("to %s: %v", m.to, err)
		}
	}
	if in, junk := count("ann", "INBOX"), count("ann", "Junk"); in != 1 || junk != 2 {
		t.Errorf("ann: INBOX %d, Junk %d; want 1 (keep of ann+other) and 2 (fileinto, :detail)", in, junk)
	}
	// fileinto :create makes the folder; a folder that does not exist
	// without :create is INBOX; addflag's flags are on the stored copy.
	for _, subject := range []string{"golang news", "to nowhere", "flagme"} {
		if err := send("x@sender.test", []string{"ann@example.com"}, subject); err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
	}
	if in, lists := count("ann", "INBOX"), count("ann", "Lists/Go"); in != 3 || lists != 1 {
		t.Errorf("ann: INBOX %d, Lists/Go %d; want 3 and 1", in, lists)
	}
	if flags := lastFlags(t, addrs.IMAP, "ann@example.com", "INBOX"); !slices.Contains(flags, imap.FlagFlagged) ||
		!slices.ContainsFunc(flags, func(f imap.Flag) bool { return strings.EqualFold(string(f), "$important") }) {
		t.Errorf("flags of the flagged message: %q, want \\Flagged and $important", flags)
	}

	// redirect: out through the relay, SRS sender of the mailbox's
	// domain, nothing kept.
	if err := send("x@sender.test", []string{"bob@example.com"}, "for bob"); err != nil {
		t.Fatal(err)
	}
	got := relay.wait(t, "out@remote.test")
	if !strings.HasPrefix(strings.ToUpper(got.From), "SRS0=") || !strings.HasSuffix(got.From, "@example.com") ||
		!strings.Contains(string(got.Data), "X-Mailhost-Sieve-Redirect: bob@example.com") {
		t.Errorf("redirected: MAIL FROM %q, data %q", got.From, got.Data)
	}
	if n := count("bob", "INBOX"); n != 0 {
		t.Errorf("bob's INBOX holds %d after a redirect, want 0", n)
	}

	// reject: 550 5.7.1 with the reason for the only recipient.
	err = send("x@sender.test", []string{"carol@example.com"}, "for carol")
	var se *smtp.SMTPError
	if !errorsAs(err, &se) || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 7, 1}) || !strings.Contains(se.Message, "Carol takes no mail.") {
		t.Errorf("reject: %v, want 550 5.7.1 Carol takes no mail.", err)
	}
	if err := send("x@sender.test", []string{"carol@example.com", "ann@example.com"}, "for both"); err != nil {
		t.Errorf("reject with two recipients: %v, want 250", err)
	}
	// With two recipients: a rejection DSN to the sender, from <>,
	// through the queue; carol stores nothing.
	dsn := relay.wait(t, "x@sender.test")
	if dsn.From != "" || !strings.Contains(string(dsn.Data), "Status: 5.7.1") ||
		!strings.Contains(string(dsn.Data), "Carol takes no mail.") || !strings.Contains(string(dsn.Data), "Final-Recipient: rfc822; carol@example.com") {
		t.Errorf("rejection DSN: MAIL FROM %q, data %q", dsn.From, dsn.Data)
	}
	if n := count("carol", "INBOX"); n != 0 {
		t.Errorf("carol's INBOX holds %d, want 0 (rejected with a DSN)", n)
	}

	// vacation: one reply per sender within :days.
	for i := 0; i < 2; i++ {
		if err := send("y@sender.test", []string{"dave@example.com"}, "question"); err != nil {
			t.Fatal(err)
		}
	}
	reply := relay.wait(t, "y@sender.test")
	if !strings.Contains(string(reply.Data), "Subject: away") || !strings.Contains(string(reply.Data), "Auto-Submitted: auto-replied") || reply.From != "" {
		t.Errorf("vacation reply: MAIL FROM %q (want <>, RFC 5230 section 5.1), data %q", reply.From, reply.Data)
	}
	time.Sleep(300 * time.Millisecond)
	if n := relay.count("y@sender.test"); n != 1 {
		t.Errorf("%d vacation replies to one sender, want 1", n)
	}
	if n := count("dave", "INBOX"); n != 2 {
		t.Errorf("dave's INBOX holds %d, want 2", n)
	}
	stop()

	// With the delimiter off a subaddress is an unknown user.
	addrs, _, _ = startServer(t, dir, append(env, "MAILHOST_RECIPIENT_DELIMITER", "")...)
	err = send("x@sender.test", []string{"ann+other@example.com"}, "off")
	if !errorsAs(err, &se) || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
		t.Errorf("subaddress with the delimiter off: %v, want 550 5.1.1", err)
	}
}

// lastFlags are the flags of the last message of folder.
func lastFlags(t *testing.T, addr, user, folder string) []imap.Flag {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(user, "password123").Wait(); err != nil {
		t.Fatal(err)
	}
	sel, err := c.Select(folder, nil).Wait()
	if err != nil || sel.NumMessages == 0 {
		t.Fatalf("SELECT %s: %v, %+v", folder, err, sel)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(sel.NumMessages), &imap.FetchOptions{Flags: true}).Collect()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("FETCH FLAGS: %v", err)
	}
	return msgs[0].Flags
}

func errorsAs(err error, se **smtp.SMTPError) bool { return errors.As(err, se) }

// count is how many messages the sink got for rcpt.
func (s *sink) count(rcpt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		for _, to := range m.To {
			if to == rcpt {
				n++
			}
		}
	}
	return n
}
