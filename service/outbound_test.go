package service

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailstore"
)

// sinkMessage is one message a sink received.
type sinkMessage struct {
	From string
	To   []string
	Data []byte
	// Helo is the name the client gave (EHLO): which node sent it.
	Helo string
}

// sink is a stand-in for the remote world: an SMTP server on loopback that
// takes everything, the relay of the service under test.
type sink struct {
	addr string
	// raw is the whole conversation as it crossed the wire, both ways.
	raw  *lockedBuffer
	mu   sync.Mutex
	msgs []sinkMessage
	// gate, when set, holds the DATA of clients whose EHLO name is
	// gateHelo until it is closed, then refuses it (see hold, in
	// cluster_test.go); held lists the recipients held now. mu guards
	// them.
	gate     chan struct{}
	gateHelo string
	held     map[*sinkSession][]string
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

type sinkSession struct {
	s    *sink
	conn *smtp.Conn
	msg  sinkMessage
}

func (ss *sinkSession) AuthPlain(string, string) error { return nil }
func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	ss.msg = sinkMessage{From: from, Helo: ss.conn.Hostname()}
	return nil
}
func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.msg.To = append(ss.msg.To, to)
	return nil
}
func (ss *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.msg.Data = b
	if err := ss.s.pass(ss); err != nil {
		return err
	}
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, ss.msg)
	ss.s.mu.Unlock()
	return nil
}
func (ss *sinkSession) Reset()        {}
func (ss *sinkSession) Logout() error { return nil }

func startSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{raw: &lockedBuffer{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s, conn: c}, nil }))
	srv.Domain = "sink.test"
	srv.Debug = s.raw
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// wait returns the first message for rcpt, waiting up to 10s for it.
func (s *sink) wait(t *testing.T, rcpt string) sinkMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for _, m := range s.msgs {
			for _, to := range m.To {
				if to == rcpt {
					s.mu.Unlock()
					return m
				}
			}
		}
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("sink got nothing for %s within 10s", rcpt)
	return sinkMessage{}
}

// submit sends one message over submission with STARTTLS and AUTH PLAIN.
func submit(addr, user, pass, from string, to []string, msg string) error {
	c, err := smtp.DialStartTLS(addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return fmt.Errorf("dial with STARTTLS: %w", err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", user, pass)); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return c.SendMail(from, to, strings.NewReader(msg))
}

// TestSubmissionRelayForwardAndCap is the outbound "done when" of the
// whole binary: a user submits with its password, mail goes out through
// the relay DKIM-signed with keys whose records GET /dns publishes, a
// forward goes out with an SRS sender, and once the month's transfer cap
// is used submission is refused with 451 4.7.1.
func TestSubmissionRelayForwardAndCap(t *testing.T) {
	relay := startSink(t)
	dir := t.TempDir()
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, dir,
		"MAILHOST_SUBMISSION", "127.0.0.1:0", "MAILHOST_SUBMISSIONS", "127.0.0.1:0",
		"MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/domains/", `{"name":"example.com"}`},
		{"POST", "/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
		{"POST", "/aliases/", `{"domain_name":"example.com","source":"fwd@example.com","destination":"carol@remote.test"}`},
	} {
		if code, body := call(t, c.method, api+c.path, key, c.body); code != 201 {
			t.Fatalf("%s %s = %d %s", c.method, c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")

	msg := "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: hello\r\n\r\nHi Bob!\r\n"
	if err := submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, msg); err != nil {
		t.Fatalf("submit: %v", err)
	}
	got := relay.wait(t, "bob@remote.test")
	if got.From != "alice@example.com" {
		t.Errorf("relayed MAIL FROM = %q, want alice@example.com", got.From)
	}

	// The signatures verify against the records the API tells the
	// customer to publish.
	code, body := call(t, "GET", api+"/domains/example.com/dns", key, "")
	if code != 200 {
		t.Fatalf("GET /dns = %d %s", code, body)
	}
	var listed struct {
		Records []struct{ Type, Name, Value string }
	}
	if err := json.Unmarshal([]byte(body), &listed); err != nil {
		t.Fatal(err)
	}
	txt := map[string][]string{}
	for _, r := range listed.Records {
		if r.Type == "TXT" {
			txt[r.Name] = append(txt[r.Name], r.Value)
		}
	}
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(got.Data), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) {
			if v, ok := txt[name]; ok {
				return v, nil
			}
			return nil, errors.New("no such record: " + name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(verifs) != 2 {
		t.Fatalf("relayed message has %d DKIM signatures, want 2 (Ed25519 and RSA)", len(verifs))
	}
	for _, v := range verifs {
		if v.Err != nil || v.Domain != "example.com" {
			t.Errorf("DKIM signature d=%s: %v", v.Domain, v.Err)
		}
	}

	// A forward through the alias leaves with an SRS sender at the alias's
	// domain, so the destination's SPF check of example.com passes.
	c, err := smtp.Dial(addrs.SMTP)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("dave@sender.test", []string{"fwd@example.com"}, strings.NewReader("From: dave@sender.test\r\nSubject: fw\r\n\r\nx\r\n")); err != nil {
		t.Fatalf("send to the forwarding alias: %v", err)
	}
	c.Close()
	fw := relay.wait(t, "carol@remote.test")
	if !strings.HasPrefix(strings.ToUpper(fw.From), "SRS0=") || !strings.HasSuffix(fw.From, "@example.com") {
		t.Errorf("forwarded MAIL FROM = %q, want an SRS0 address at example.com", fw.From)
	}

	// Cap: 1 MB, and a message of more than that uses it up.
	if code, body := call(t, "PUT", api+"/domains/example.com/transfer", key, `{"transfer_monthly_mb":1}`); code != 200 {
		t.Fatalf("PUT transfer = %d %s", code, body)
	}
	big := "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: big\r\n\r\n" + strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n", 17000)
	if err := submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, big); err != nil {
		t.Fatalf("submit under the cap: %v", err)
	}
	err = submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, msg)
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 7, 1}) {
		t.Fatalf("submit over the cap = %v, want 451 4.7.1", err)
	}
	code, body = call(t, "GET", api+"/domains/example.com/usage", key, "")
	var usage struct {
		Out int64 `json:"transfer_out_bytes"`
	}
	if err := json.Unmarshal([]byte(body), &usage); code != 200 || err != nil || usage.Out < int64(len(big)) {
		t.Errorf("usage = %d %s, want transfer_out_bytes >= %d", code, body, len(big))
	}

	// The queue drains: nothing is left once the relay has everything.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var q QueueList
		err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
			var err error
			q, err = op.Queue(context.Background(), mailstorePage(100))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if q.Total == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue still holds %d entries: %+v", q.Total, q.Entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mailstorePage(limit int) mailstore.Page { return mailstore.Page{Limit: limit} }

// stuckServer serves with a relay that cannot be reached, so that every
// attempt is deferred, and has alice@example.com submit one message: it
// waits in the queue. It answers the data directory, the API's address
// and the partner's key.
func stuckServer(t *testing.T) (dir, api, key string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there: every attempt is deferred
	dir = t.TempDir()
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, dir, "MAILHOST_SUBMISSION", "127.0.0.1:0", "MAILHOST_RELAY", down, "MAILHOST_DNS", dns.Addr)
	key = keyRE.FindString(out.String())
	api = "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	msg := "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: stuck\r\n\r\nnever sent\r\n"
	if err := submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, msg); err != nil {
		t.Fatalf("submit: %v", err)
	}
	return dir, api, key
}

// queued is the queue of the server on dir, through the control socket.
func queued(t *testing.T, dir string) QueueList {
	t.Helper()
	var q QueueList
	err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) (err error) {
		q, err = op.Queue(context.Background(), mailstorePage(10))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestQueueDeleteOverSocket: `mailhost queue delete` (the operator over
// the control socket) drops a waiting message, and a second delete
// answers not found.
func TestQueueDeleteOverSocket(t *testing.T) {
	dir, _, _ := stuckServer(t)
	q := queued(t, dir)
	if q.Total != 1 {
		t.Fatalf("queue = %+v, want one entry", q)
	}
	id := q.Entries[0].ID
	err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
		ctx := context.Background()
		got, err := op.DeleteQueued(ctx, id)
		if err != nil || got.ID != id || got.Destination != "remote.test" {
			return fmt.Errorf("DeleteQueued(%d) = %+v, %v; want the entry to remote.test", id, got, err)
		}
		_, err = op.DeleteQueued(ctx, id)
		if !errors.Is(err, mailstore.ErrNotFound) {
			return fmt.Errorf("DeleteQueued(%d) again = %v, want not found", id, err)
		}
		// What the CLI prints: the entry and the reason, once.
		if want := fmt.Sprintf("delete outbound entry %d: outbound entry not found", id); err.Error() != want {
			return fmt.Errorf("DeleteQueued(%d) again says %q, want %q", id, err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if q := queued(t, dir); q.Total != 0 {
		t.Errorf("queue after delete = %+v, want empty", q)
	}
}

// TestResumeRetriesAtOnce: resuming a domain sends what it queued at
// once, rather than at its next retry (backoff from a minute to an hour):
// here the deferred message is attempted again right after the resume.
func TestResumeRetriesAtOnce(t *testing.T) {
	dir, api, key := stuckServer(t)
	deadline := time.Now().Add(10 * time.Second)
	var q QueueList
	for q = queued(t, dir); q.Total != 1 || q.Entries[0].Attempts != 1; q = queued(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("queue = %+v, want one entry attempted once", q)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !q.Entries[0].NextAttempt.After(time.Now().Add(30 * time.Second)) {
		t.Fatalf("entry after its first attempt: next attempt %v, want about a minute away", q.Entries[0].NextAttempt)
	}
	for _, action := range []string{"suspend", "resume"} {
		if code, body := call(t, "POST", api+"/domains/example.com/"+action, key, ""); code != 200 {
			t.Fatalf("POST %s = %d %s", action, code, body)
		}
	}
	for q = queued(t, dir); q.Total != 1 || q.Entries[0].Attempts < 2; q = queued(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("queue after resume = %+v, want the entry attempted again at once", q)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
