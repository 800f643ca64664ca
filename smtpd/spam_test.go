package smtpd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/spam"
	"github.com/mailhost/mailhost/spam/rspamdtest"
)

// folderBodies returns the bodies in one folder of a mailbox.
func (f *fixture) folderBodies(t *testing.T, email, folder string) [][]byte {
	t.Helper()
	ctx := context.Background()
	m, _, err := f.st.MailboxByEmail(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	fo, err := f.st.Folder(ctx, m.ID, folder)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := f.st.Messages(ctx, m.ID, fo.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, msg := range msgs {
		b, err := f.st.Body(ctx, m.ID, fo.ID, msg.UID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

var spamSeq int

// spamMessage is a whole message, with Date and Message-ID so that
// rspamd does not score their absence.
func spamMessage(subject, body string) string {
	spamSeq++
	return fmt.Sprintf("From: Ann <ann@remote.test>\r\nTo: Bob <bob@a.test>\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%d.%d@remote.test>\r\n\r\n%s\r\n",
		subject, time.Now().UTC().Format(time.RFC1123Z), time.Now().UnixNano(), spamSeq, body)
}

func spamClient(t *testing.T, url string, timeout time.Duration) *spam.Client {
	t.Helper()
	c, err := spam.New(spam.Config{URL: url, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSpamMX drives the MX with a real rspamd: GTUBE refused (550 5.7.1,
// nothing stored) or, for a domain set to "junk", put in Junk; a
// junk-scored message in Junk with X-Spam: Yes; an ordinary one in
// INBOX; a domain set to "off" not filtered.
func TestSpamMX(t *testing.T) {
	r := rspamdtest.Start(t)
	e := newEnv(t, func(c *Config) {
		c.Spam = spamClient(t, r.URL, 0)
		c.SpamDefault = mailstore.SpamFilterReject
	})
	ctx := context.Background()
	if _, err := e.st.SetSpamFilter(ctx, e.partner.ID, "b.test", mailstore.SpamFilterJunk); err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	if _, err := e.st.CreateDomain(ctx, e.partner.ID, mailstore.NewDomain{Name: "c.test", Plan: plan, MaxMailboxes: 10, MaxAliases: 10}, testNow); err != nil {
		t.Fatal(err)
	}
	e.mailbox("off@c.test")
	if _, err := e.st.SetSpamFilter(ctx, e.partner.ID, "c.test", mailstore.SpamFilterOff); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rcpt, body string
		code             string // "" for 250
		folder           string // where it lands
		xspam            bool
	}{
		{"gtube refused", "bob@a.test", rspamdtest.GTUBE, "550 5.7.1", "", false},
		{"ordinary to INBOX", "bob@a.test", "See you at noon at the usual place.", "", "INBOX", false},
		{"junk token to Junk", "bob@a.test", "See you there. " + rspamdtest.JunkToken, "", "Junk", true},
		{"gtube to Junk of a junk domain", "dave@b.test", rspamdtest.GTUBE, "", "Junk", true},
		{"filter off", "off@c.test", "Hi. " + rspamdtest.JunkToken, "", "INBOX", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string]int{}
			for _, f := range []string{"INBOX", "Junk"} {
				before[f] = len(e.folderBodies(t, tc.rcpt, f))
			}
			err := e.send(t, "ann@remote.test", []string{tc.rcpt}, spamMessage(tc.name, tc.body))
			if tc.code != "" {
				if got := smtpCode(err); got != tc.code {
					t.Fatalf("send = %v (%s), want %s", err, got, tc.code)
				}
			} else if err != nil {
				t.Fatalf("send = %v, want 250", err)
			}
			for _, f := range []string{"INBOX", "Junk"} {
				got := e.folderBodies(t, tc.rcpt, f)
				want := before[f]
				if f == tc.folder {
					want++
				}
				if len(got) != want {
					t.Fatalf("%s has %d messages, want %d", f, len(got), want)
				}
				if f == tc.folder {
					b := got[len(got)-1]
					if has := bytes.Contains(b, []byte("\r\nX-Spam: Yes\r\n")) || bytes.HasPrefix(b, []byte("X-Spam: Yes\r\n")); has != tc.xspam {
						t.Errorf("X-Spam: Yes in the stored message = %v, want %v:\n%s", has, tc.xspam, b)
					}
				}
			}
		})
	}
	if got := e.srv.SpamStats(); got.Refused != 1 || got.Junk != 2 {
		t.Errorf("SpamStats = %+v, want 1 refused, 2 to Junk", got)
	}
}

// TestSpamSubmission: a submission rspamd rejects is refused with 550
// 5.7.1 and counted; an ordinary one is sent.
func TestSpamSubmission(t *testing.T) {
	r := rspamdtest.Start(t)
	e := newSubmissionEnv(t, func(c *Config) { c.Spam = spamClient(t, r.URL, 0) })
	msg := func(body string) string {
		return strings.Replace(spamMessage("hello", body), "From: Ann <ann@remote.test>", "From: Bob <bob@a.test>", 1)
	}
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"dave@b.test"}, msg(rspamdtest.GTUBE)); smtpCode(err) != "550 5.7.1" {
		t.Errorf("submit GTUBE = %v, want 550 5.7.1", err)
	}
	if n := len(e.inbox(t, "dave@b.test")); n != 0 {
		t.Errorf("dave has %d messages after a refused submission, want 0", n)
	}
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"dave@b.test"}, msg("Lunch at noon?")); err != nil {
		t.Errorf("submit ordinary = %v, want 250", err)
	}
	if n := len(e.inbox(t, "dave@b.test")); n != 1 {
		t.Errorf("dave has %d messages, want 1", n)
	}
	if got := e.srv.SpamStats().Refused; got != 1 {
		t.Errorf("SpamStats().Refused = %d, want 1", got)
	}
	if !strings.Contains(e.logs.String(), `"msg":"message refused as spam"`) || !strings.Contains(e.logs.String(), `"user":"bob@a.test"`) {
		t.Errorf("no log line of the refused submission with its user:\n%s", e.logs.String())
	}
}

// TestSpamFilterDown: with rspamd stopped, mail is delivered unscanned
// with a header that says so (fail open), or answered 451 4.3.0 with
// SpamFailClosed.
func TestSpamFilterDown(t *testing.T) {
	r := rspamdtest.Start(t)
	r.Stop()
	for _, tc := range []struct {
		name   string
		closed bool
	}{{"fail open", false}, {"tempfail", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				c.Spam = spamClient(t, r.URL, 2*time.Second)
				c.SpamFailClosed = tc.closed
			})
			err := e.send(t, "ann@remote.test", []string{"bob@a.test"}, spamMessage("down", rspamdtest.GTUBE))
			inbox := e.inbox(t, "bob@a.test")
			if tc.closed {
				if smtpCode(err) != "451 4.3.0" || len(inbox) != 0 {
					t.Errorf("send = %v, %d stored; want 451 4.3.0, nothing stored", err, len(inbox))
				}
				return
			}
			if err != nil || len(inbox) != 1 {
				t.Fatalf("send = %v, %d stored; want 250, 1 stored", err, len(inbox))
			}
			if !bytes.HasPrefix(inbox[0], []byte("X-Spam-Scanner: unscanned")) {
				t.Errorf("stored message starts %q, want the unscanned header", inbox[0][:min(80, len(inbox[0]))])
			}
			if !strings.Contains(e.logs.String(), "message not scanned") {
				t.Errorf("no log line of the unscanned message")
			}
		})
	}
}
