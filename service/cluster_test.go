package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/storecopy"
)

// hold makes the sink hold the DATA of clients whose EHLO name is helo:
// no reply until release, as from a stalled server, so that the client
// keeps its queue entries leased. release opens the gate, refuses what
// was held (451, recorded nowhere) and answers the recipients held at
// that moment.
func (s *sink) hold(helo string) (release func() []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.gateHelo, s.held = make(chan struct{}), helo, map[*sinkSession][]string{}
	return func() []string {
		s.mu.Lock()
		defer s.mu.Unlock()
		var rcpts []string
		for _, to := range s.held {
			rcpts = append(rcpts, to...)
		}
		close(s.gate)
		s.gate = nil
		return rcpts
	}
}

// pass lets a message through the gate, or holds it (see hold).
func (s *sink) pass(ss *sinkSession) error {
	s.mu.Lock()
	gate := s.gate
	if gate == nil || ss.msg.Helo != s.gateHelo {
		s.mu.Unlock()
		return nil
	}
	s.held[ss] = ss.msg.To
	s.mu.Unlock()
	<-gate
	s.mu.Lock()
	delete(s.held, ss)
	s.mu.Unlock()
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "held by the test"}
}

// heldNow counts the messages the gate holds.
func (s *sink) heldNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// received answers, for each recipient, the EHLO names of the clients
// that delivered to it.
func (s *sink) received() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := map[string][]string{}
	for _, m := range s.msgs {
		for _, to := range m.To {
			got[to] = append(got[to], m.Helo)
		}
	}
	return got
}

// sendMX delivers one message over SMTP without authentication and
// answers when the 250 to its data arrived.
func sendMX(addr, from string, to []string, msg string) (time.Time, error) {
	c, err := smtp.Dial(addr)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	if err := c.Mail(from, nil); err != nil {
		return time.Time{}, fmt.Errorf("MAIL FROM:<%s>: %w", from, err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			return time.Time{}, fmt.Errorf("RCPT TO:<%s>: %w", rcpt, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return time.Time{}, fmt.Errorf("DATA: %w", err)
	}
	if _, err := io.WriteString(w, msg); err != nil {
		return time.Time{}, fmt.Errorf("write data: %w", err)
	}
	if err := w.Close(); err != nil {
		return time.Time{}, fmt.Errorf("end of data: %w", err)
	}
	at := time.Now()
	c.Quit()
	return at, nil
}

// imapLogin connects with STARTTLS (the nodes' certificates are
// self-signed) and logs in.
func imapLogin(addr, user, pass string, o *imapclient.Options) (*imapclient.Client, error) {
	if o == nil {
		o = &imapclient.Options{}
	}
	o.TLSConfig = &tls.Config{InsecureSkipVerify: true}
	c, err := imapclient.DialStartTLS(addr, o)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if err := c.Login(user, pass).Wait(); err != nil {
		c.Close()
		return nil, fmt.Errorf("login %s on %s: %w", user, addr, err)
	}
	return c, nil
}

// inboxCount answers how many messages user's INBOX holds, read over IMAP
// at addr.
func inboxCount(t *testing.T, addr, user, pass string) uint32 {
	t.Helper()
	c, err := imapLogin(addr, user, pass, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		t.Fatalf("EXAMINE INBOX as %s: %v", user, err)
	}
	c.Logout().Wait()
	return d.NumMessages
}

// TestTwoNodes runs two `mailhost serve` processes on one PostgreSQL
// schema, each with its own data directory, node name and ports, and
// checks that they act as one service: what one writes the other reads
// at once (API, keys, passwords, suspensions), IDLE on one hears of mail
// delivered on the other within a second, SRS addresses one mints the
// other verifies, and when one is killed (SIGKILL) during a load the
// other has every message it acknowledged, the counters hold, and it
// takes over the dead node's queue once its leases run out.
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: two server processes")
	}
	url := pgtest.URL(t)
	relay := startSink(t)
	dns := dnstest.Start(t)
	const lease = 4 * time.Second
	spec := func(name string) childSpec {
		return childSpec{Env: map[string]string{
			// A data directory not made yet, as on a new node: with
			// PostgreSQL no store file makes it.
			"MAILHOST_DATA": filepath.Join(t.TempDir(), name), "MAILHOST_STORE": url, "MAILHOST_NODE": name,
			"MAILHOST_HOSTNAME": name + ".test", "MAILHOST_SUBMISSION": "127.0.0.1:0",
			"MAILHOST_RELAY": relay.addr, "MAILHOST_DNS": dns.Addr,
		}, QueueLease: lease, QueuePoll: 200 * time.Millisecond}
	}
	specA := spec("a")
	a := startChild(t, specA)
	b := startChild(t, spec("b"))

	// The first node makes the default partner and prints its key; the
	// second finds it made and prints none.
	keys := keyRE.FindAllString(a.printed, -1)
	if len(keys) != 1 {
		t.Fatalf("node a printed %d keys, want 1: %q", len(keys), a.printed)
	}
	if keyRE.MatchString(b.printed) {
		t.Errorf("node b printed a key too: %q", b.printed)
	}
	key := keys[0]

	// Provisioned through b, read through a.
	const alicePass, bobPass = "password123", "bob's password"
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"` + alicePass + `"}`},
		{"/users/", `{"domain_name":"example.com","email":"bob@example.com","password":"` + bobPass + `"}`},
		{"/aliases/", `{"domain_name":"example.com","source":"fwd@example.com","destination":"carol@remote.test"}`},
	} {
		if code, body := call(t, "POST", b.api()+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s on b = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, b.api(), key, "example.com", "b.test")
	if code, body := call(t, "GET", a.api()+"/domains/example.com", key, ""); code != 200 || !strings.Contains(body, `"name":"example.com"`) {
		t.Fatalf("GET /domains/example.com on a = %d %s, want the domain b made", code, body)
	}
	if code, body := call(t, "GET", a.api()+"/users/", key, ""); code != 200 || !strings.Contains(body, "alice@example.com") || !strings.Contains(body, "bob@example.com") {
		t.Fatalf("GET /users/ on a = %d %s, want the mailboxes b made", code, body)
	}

	t.Run("idle across nodes", func(t *testing.T) {
		type exists struct {
			n  uint32
			at time.Time
		}
		seen := make(chan exists, 16)
		c, err := imapLogin(b.IMAP, "alice@example.com", alicePass, &imapclient.Options{
			UnilateralDataHandler: &imapclient.UnilateralDataHandler{
				Mailbox: func(d *imapclient.UnilateralDataMailbox) {
					if d.NumMessages != nil {
						seen <- exists{*d.NumMessages, time.Now()}
					}
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sel, err := c.Select("INBOX", nil).Wait()
		if err != nil {
			t.Fatalf("SELECT: %v", err)
		}
		idle, err := c.Idle()
		if err != nil {
			t.Fatalf("IDLE: %v", err)
		}
		var lat []time.Duration
		for i := range 5 {
			want := sel.NumMessages + uint32(i) + 1
			msg := fmt.Sprintf("From: dave@sender.test\r\nTo: alice@example.com\r\nSubject: idle %d\r\n\r\nhi\r\n", i)
			acked, err := sendMX(a.SMTP, "dave@sender.test", []string{"alice@example.com"}, msg)
			if err != nil {
				t.Fatalf("deliver %d into a: %v", i, err)
			}
			var got exists
			for got.n < want {
				select {
				case got = <-seen:
				case <-time.After(10 * time.Second):
					t.Fatalf("no EXISTS %d on b within 10s of a's 250", want)
				}
			}
			if got.n != want {
				t.Fatalf("EXISTS %d on b, want %d", got.n, want)
			}
			// The EXISTS may arrive before the client has read the 250.
			lat = append(lat, max(0, got.at.Sub(acked)))
		}
		if err := idle.Close(); err != nil {
			t.Fatal(err)
		}
		if err := idle.Wait(); err != nil {
			t.Fatalf("IDLE: %v", err)
		}
		slices.Sort(lat)
		t.Logf("250 on a to EXISTS on b: median %v, max %v (5 messages)", lat[len(lat)/2], lat[len(lat)-1])
		if lat[len(lat)-1] > time.Second {
			t.Errorf("EXISTS on b came %v after a's 250, want within 1s", lat[len(lat)-1])
		}
	})

	t.Run("srs across nodes", func(t *testing.T) {
		// a forwards through the alias with an SRS sender it mints.
		msg := "From: dave@sender.test\r\nTo: fwd@example.com\r\nSubject: forward me\r\n\r\nx\r\n"
		if _, err := sendMX(a.SMTP, "dave@sender.test", []string{"fwd@example.com"}, msg); err != nil {
			t.Fatalf("send to the forwarding alias through a: %v", err)
		}
		srs := relay.wait(t, "carol@remote.test").From
		if !strings.HasPrefix(strings.ToUpper(srs), "SRS0=") || !strings.HasSuffix(srs, "@example.com") {
			t.Fatalf("forwarded MAIL FROM = %q, want an SRS0 address at example.com", srs)
		}
		// Its bounce comes back to b, which verifies it with the secret
		// the nodes share and sends it on to the original sender.
		dsn := "From: MAILER-DAEMON@remote.test\r\nTo: " + srs + "\r\nSubject: Undelivered Mail\r\n\r\ncarol is gone\r\n"
		if _, err := sendMX(b.SMTP, "", []string{srs}, dsn); err != nil {
			t.Fatalf("bounce to %s into b: %v", srs, err)
		}
		back := relay.wait(t, "dave@sender.test")
		if back.From != "" || !strings.Contains(string(back.Data), "carol is gone") {
			t.Errorf("bounce relayed with MAIL FROM:<%s>, %q; want <> and the bounce", back.From, back.Data)
		}
		t.Logf("SRS address minted on a, bounce accepted on b, relayed (by node %s) to dave@sender.test", back.Helo)
	})

	t.Run("changes reach the other node at once", func(t *testing.T) {
		ctx := context.Background()
		// A key made and revoked on a (the CLI on a's machine writes the
		// shared database) stops working on b at once.
		var k NewKey
		cfgA := &config.Config{DataDir: specA.Env["MAILHOST_DATA"], Store: url, Node: "a"}
		err := WithOperator(ctx, cfgA, func(op Operator) (err error) {
			k, err = op.CreateKey(ctx, "default")
			return err
		})
		if err != nil {
			t.Fatalf("create a key on a: %v", err)
		}
		if code, body := call(t, "GET", b.api()+"/domains/", k.APIKey, ""); code != 200 {
			t.Fatalf("new key: GET /domains/ on b = %d %s", code, body)
		}
		err = WithOperator(ctx, cfgA, func(op Operator) error {
			_, err := op.RevokeKey(ctx, k.KeyID)
			return err
		})
		if err != nil {
			t.Fatalf("revoke the key on a: %v", err)
		}
		if code, body := call(t, "GET", b.api()+"/domains/", k.APIKey, ""); code != 401 {
			t.Errorf("revoked key: GET /domains/ on b = %d %s, want 401", code, body)
		}

		// A mailbox deleted on b: a's MX, which has just looked it up
		// (and keeps the answer), refuses it as soon as the database's
		// announcement of the delete reaches a, milliseconds later
		// (docs/clustering.md).
		if code, body := call(t, "POST", b.api()+"/users/", key, `{"domain_name":"example.com","email":"gone@example.com","password":"password123"}`); code != 201 {
			t.Fatalf("POST /users/ on b = %d %s", code, body)
		}
		if _, err := sendMX(a.SMTP, "dave@sender.test", []string{"gone@example.com"}, "Subject: before\r\n\r\nx\r\n"); err != nil {
			t.Fatalf("mail to gone@ into a before the delete: %v", err)
		}
		if code, body := call(t, "DELETE", b.api()+"/users/gone@example.com", key, ""); code != 200 && code != 204 {
			t.Fatalf("DELETE /users/gone@example.com on b = %d %s", code, body)
		}
		deleted := time.Now()
		for {
			_, err := sendMX(a.SMTP, "dave@sender.test", []string{"gone@example.com"}, "Subject: after\r\n\r\nx\r\n")
			if err != nil && strings.Contains(err.Error(), "550") {
				t.Logf("deleted on b: a's MX refused it %v later", time.Since(deleted).Round(time.Millisecond))
				break
			}
			if time.Since(deleted) > 500*time.Millisecond {
				t.Fatalf("a's MX still takes a mailbox deleted on b %v later (%v): want 550 within the announcement's latency", time.Since(deleted).Round(time.Millisecond), err)
			}
			time.Sleep(20 * time.Millisecond)
		}

		// A password changed on b is the password on a at once.
		if code, body := call(t, "PUT", b.api()+"/users/alice@example.com", key, `{"password":"a new password"}`); code != 200 {
			t.Fatalf("PUT /users/alice@example.com on b = %d %s", code, body)
		}
		if c, err := imapLogin(a.IMAP, "alice@example.com", "a new password", nil); err != nil {
			t.Errorf("the new password on a: %v", err)
		} else {
			c.Close()
		}
		if c, err := imapLogin(a.IMAP, "alice@example.com", alicePass, nil); err == nil {
			c.Close()
			t.Errorf("the old password still works on a")
		}
		if code, body := call(t, "PUT", b.api()+"/users/alice@example.com", key, `{"password":"`+alicePass+`"}`); code != 200 {
			t.Fatalf("PUT /users/alice@example.com on b = %d %s", code, body)
		}

		// A domain suspended on b: a's submission refuses new logins and
		// the next message of a session logged in before, and a's IMAP
		// ends a session idling since before (its periodic check, every
		// 5 s). Mail to the domain is still received (docs/mail.md).
		imapA, err := imapLogin(a.IMAP, "bob@example.com", bobPass, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer imapA.Close()
		if _, err := imapA.Select("INBOX", nil).Wait(); err != nil {
			t.Fatalf("SELECT on a: %v", err)
		}
		idleA, err := imapA.Idle()
		if err != nil {
			t.Fatalf("IDLE on a: %v", err)
		}
		idleEnded := make(chan time.Time, 1)
		go func() {
			idleA.Wait() // ends with the connection: BYE
			idleEnded <- time.Now()
		}()
		subA, err := smtp.DialStartTLS(a.Submission, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer subA.Close()
		if err := subA.Auth(sasl.NewPlainClient("", "bob@example.com", bobPass)); err != nil {
			t.Fatalf("AUTH on a's submission: %v", err)
		}
		if code, body := call(t, "POST", b.api()+"/domains/example.com/suspend", key, ""); code != 200 {
			t.Fatalf("suspend on b = %d %s", code, body)
		}
		suspended := time.Now()
		out := "From: bob@example.com\r\nTo: x@remote.test\r\nSubject: suspended\r\n\r\nx\r\n"
		if err := subA.SendMail("bob@example.com", []string{"x@remote.test"}, strings.NewReader(out)); err == nil || !strings.Contains(err.Error(), "550") {
			t.Errorf("send on a's submission session after the suspension = %v, want 550", err)
		}
		if err := submit(a.Submission, "alice@example.com", alicePass, "alice@example.com", []string{"x@remote.test"}, out); err == nil || !strings.Contains(err.Error(), "535") {
			t.Errorf("submission login on a after the suspension = %v, want 535", err)
		}
		if c, err := imapLogin(a.IMAP, "alice@example.com", alicePass, nil); err == nil {
			c.Close()
			t.Errorf("IMAP login on a works after the suspension")
		}
		if _, err := sendMX(a.SMTP, "dave@sender.test", []string{"bob@example.com"}, "Subject: in\r\n\r\nx\r\n"); err != nil {
			t.Errorf("inbound mail to the suspended domain on a: %v, want 250 (still received)", err)
		}
		select {
		case at := <-idleEnded:
			t.Logf("suspended on b: a's idling IMAP session ended %v later", at.Sub(suspended).Round(10*time.Millisecond))
		case <-time.After(15 * time.Second):
			t.Fatalf("a's idling IMAP session of the suspended domain still open 15s later")
		}
		if code, body := call(t, "POST", b.api()+"/domains/example.com/resume", key, ""); code != 200 {
			t.Fatalf("resume on b = %d %s", code, body)
		}
	})
	if t.Failed() {
		return
	}

	// The kill: clients deliver into a's MX and submit through a's
	// submission while the sink holds a's outbound sessions, so that a
	// dies with queue entries leased.
	users := map[string]string{"alice@example.com": alicePass, "bob@example.com": bobPass}
	base := map[string]uint32{}
	for u, p := range users {
		base[u] = inboxCount(t, b.IMAP, u, p)
	}
	release := relay.hold("a.test")
	var (
		mu       sync.Mutex
		mxAcked  = map[string]int{} // per mailbox, the messages a answered 250
		subAcked []string           // recipients of submissions a answered 250
		wg       sync.WaitGroup
	)
	const mxClients, subClients = 4, 2
	for w := range mxClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := smtp.Dial(a.SMTP)
			if err != nil {
				t.Errorf("MX client %d: %v", w, err)
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				rcpt := []string{"alice@example.com", "bob@example.com"}[(w+i)%2]
				msg := fmt.Sprintf("From: dave@sender.test\r\nTo: %s\r\nSubject: load %d %d\r\n\r\n%s", rcpt, w, i, strings.Repeat("line\r\n", 1+i%50))
				if err := c.SendMail("dave@sender.test", []string{rcpt}, strings.NewReader(msg)); err != nil {
					return // a was killed
				}
				mu.Lock()
				mxAcked[rcpt]++
				mu.Unlock()
			}
		}()
	}
	for w := range subClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := smtp.DialStartTLS(a.Submission, &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				t.Errorf("submission client %d: %v", w, err)
				return
			}
			defer c.Close()
			if err := c.Auth(sasl.NewPlainClient("", "alice@example.com", alicePass)); err != nil {
				t.Errorf("submission client %d: AUTH: %v", w, err)
				return
			}
			for i := 0; ; i++ {
				rcpt := fmt.Sprintf("r%d-%d@remote.test", w, i)
				msg := fmt.Sprintf("From: alice@example.com\r\nTo: %s\r\nSubject: out %d %d\r\n\r\nhello\r\n", rcpt, w, i)
				if err := c.SendMail("alice@example.com", []string{rcpt}, strings.NewReader(msg)); err != nil {
					return
				}
				mu.Lock()
				subAcked = append(subAcked, rcpt)
				mu.Unlock()
			}
		}()
	}
	// a is killed once it has acknowledged a good load, but well before
	// the first of its held attempts reaches the end of its lease: an
	// attempt cut off then would be deferred for a minute (RetryMin) and
	// miss the test's deadline. A busy machine gets less load, not a
	// longer hold.
	var firstHeld time.Time
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n, s := mxAcked["alice@example.com"]+mxAcked["bob@example.com"], len(subAcked)
		mu.Unlock()
		if firstHeld.IsZero() && relay.heldNow() > 0 {
			firstHeld = time.Now()
		}
		if !firstHeld.IsZero() && (n >= 100 && s >= 16 || time.Since(firstHeld) > lease/3) {
			if n == 0 || s == 0 {
				t.Fatalf("%v after a's first held attempt: %d MX deliveries and %d submissions acknowledged, want some of each", lease/3, n, s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s of load: %d MX and %d submissions acknowledged, %d held at the sink; want 100, 16 and 1", n, s, relay.heldNow())
		}
	}
	a.kill()
	killed := time.Now()
	wg.Wait()
	leased := release() // what a was sending when it died: leased to a
	t.Logf("a killed after %d MX deliveries and %d submissions answered 250; %d recipients were in a's sessions to the sink", mxAcked["alice@example.com"]+mxAcked["bob@example.com"], len(subAcked), len(leased))

	// Every message a acknowledged is in its mailbox, read through b; a
	// message a had stored but not yet acknowledged may be there too, at
	// most one per client.
	for u, p := range users {
		got := inboxCount(t, b.IMAP, u, p) - base[u]
		if want := uint32(mxAcked[u]); got < want || got > want+mxClients {
			t.Errorf("%s: %d new messages read through b, want %d (the 250s of a) to %d", u, got, want, want+mxClients)
		}
	}

	// b sends what a had queued, what a leased included once the lease
	// runs out.
	var missing []string
	var got map[string][]string
	for deadline := time.Now().Add(3*lease + 10*time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, missing = relay.received(), nil
		for _, r := range append(slices.Clone(subAcked), leased...) {
			if len(got[r]) == 0 && !slices.Contains(missing, r) {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("%d of %d submissions answered 250 (or leased by a) never reached the sink: %v", len(missing), len(subAcked), missing[:min(5, len(missing))])
	}
	took := time.Since(killed)
	for _, r := range leased {
		if !slices.Contains(got[r], "b.test") {
			t.Errorf("%s, leased by a when it died, reached the sink from %v, want from b", r, got[r])
		}
	}
	dups := 0
	for _, r := range subAcked {
		dups += len(got[r]) - 1
	}
	t.Logf("all %d submissions reached the sink %v after the kill (%d twice); the %d a had leased were sent by b after the %v lease", len(subAcked), took.Round(10*time.Millisecond), dups, len(leased), lease)

	// The counters hold: nothing a was doing when it died left them
	// apart from what they count.
	drift, err := storecopy.Verify(context.Background(), url)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	for _, d := range drift {
		t.Errorf("drift after the kill: %v", d)
	}
}
