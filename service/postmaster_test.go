package service

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// passwordRE finds the operator mailbox's password in what the first
// start printed.
var passwordRE = regexp.MustCompile(`(?m)^Created the operator's mailbox postmaster@mx\.test .*shown only this once:\n\n    (\S+)\n`)

// TestOperatorPostmaster: the first start makes the operator's mailbox
// postmaster@<hostname> and prints its password once; mail to the
// domainless postmaster, and to postmaster@ and abuse@ a hosted domain
// with none of its own, reaches it through the MX and is read over IMAP
// with that password; a domain's own postmaster mailbox keeps its mail.
// A data directory made before the mailbox existed gets it at its next
// start, printed the same way.
func TestOperatorPostmaster(t *testing.T) {
	dir := t.TempDir()
	addrs, out, stop := startServer(t, dir)
	m := passwordRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("first start printed no operator password: %q", out.String())
	}
	password := m[1]
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/domains/", `{"name":"own.example"}`},
		{"/users/", `{"domain_name":"own.example","email":"postmaster@own.example","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s %s = %d %s", c.path, c.body, code, body)
		}
	}
	rcpts := []string{"postmaster", "PostMaster", "postmaster@example.com", "abuse@example.com", "postmaster@mx.test", "abuse@mx.test"}
	for _, rcpt := range append(rcpts, "postmaster@own.example") {
		if err := mxSend(t, addrs.SMTP, "x@remote.test", []string{rcpt}, "Subject: to "+rcpt+"\r\n\r\nhi\r\n"); err != nil {
			t.Errorf("MX to %s = %v, want delivered", rcpt, err)
		}
	}
	if n := inboxCount(t, addrs.IMAP, "postmaster@mx.test", password); n != uint32(len(rcpts)) {
		t.Errorf("the operator's INBOX has %d messages, want %d", n, len(rcpts))
	}
	if n := inboxCount(t, addrs.IMAP, "postmaster@own.example", "password123"); n != 1 {
		t.Errorf("own.example's postmaster has %d messages, want 1", n)
	}
	// The command line sets the operator's password while the server
	// runs (mailhost mailbox password, over the control socket).
	err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
		_, err := op.SetMailboxPassword(context.Background(), "postmaster@mx.test", "the operator's own")
		return err
	})
	if err != nil {
		t.Fatalf("set the operator's password over the socket: %v", err)
	}
	if n := inboxCount(t, addrs.IMAP, "postmaster@mx.test", "the operator's own"); n != uint32(len(rcpts)) {
		t.Errorf("with the new password the operator's INBOX has %d messages, want %d", n, len(rcpts))
	}
	stop()

	// A data directory of a server without the mailbox (as one started
	// before it existed): the next start makes it.
	st, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.PartnerByName(context.Background(), "default")
	if err == nil {
		// The server's own name is the default partner's, verified.
		var d mailstore.Domain
		if d, err = st.DomainByName(context.Background(), "mx.test"); err == nil && (d.PartnerID != p.ID || !d.Verified) {
			t.Errorf("domain mx.test is partner %d's, verified %v; want the default partner's (%d), verified", d.PartnerID, d.Verified, p.ID)
		}
	}
	if err == nil {
		err = st.DeleteMailbox(context.Background(), p.ID, "postmaster@mx.test")
	}
	st.Close()
	if err != nil {
		t.Fatalf("delete the operator mailbox: %v", err)
	}
	addrs, out, stop = startServer(t, dir)
	m = passwordRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("restart without the mailbox printed no password: %q", out.String())
	}
	if keyRE.MatchString(out.String()) {
		t.Errorf("restart printed a key: %q", out.String())
	}
	if err := mxSend(t, addrs.SMTP, "x@remote.test", []string{"postmaster"}, "Subject: again\r\n\r\nhi\r\n"); err != nil {
		t.Errorf("MX to postmaster = %v", err)
	}
	if n := inboxCount(t, addrs.IMAP, "postmaster@mx.test", m[1]); n != 1 {
		t.Errorf("the new operator mailbox has %d messages, want 1", n)
	}
	stop()

	// And with it, nothing is printed.
	_, out, _ = startServer(t, dir)
	if strings.Contains(out.String(), "operator's mailbox") {
		t.Errorf("a start with the mailbox printed %q", out.String())
	}
}

// TestOperatorPostmasterShortHostname: a host name that is not a domain
// name gets no operator mailbox, a warning naming the hostname setting,
// and RCPT TO:<postmaster> stays an unknown user.
func TestOperatorPostmasterShortHostname(t *testing.T) {
	for _, tc := range []struct{ host, mailbox string }{
		{"localhost", "postmaster@mailhost.localhost"},
		{"vm", "postmaster@vm.localhost"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := testConfig(dir, "MAILHOST_HOSTNAME", tc.host)
			if err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			addrs, _ := runService(t, cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if !strings.Contains(string(logs.Bytes()), "the operator mailbox is at a local name") || !strings.Contains(string(logs.Bytes()), tc.mailbox) {
				t.Errorf("log does not name the local operator mailbox %s and the hostname setting:\n%s", tc.mailbox, logs.Bytes())
			}
			// RFC 5321 section 4.5.1: postmaster is accepted on any machine.
			if err := mxSend(t, addrs.SMTP, "x@remote.test", []string{"postmaster", "Postmaster"}, "Subject: x\r\n\r\nhi\r\n"); err != nil {
				t.Errorf("MX to postmaster with hostname %s = %v, want accepted", tc.host, err)
			}
		})
	}
}
