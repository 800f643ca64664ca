package service

import (
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// TestQueueCrash kills the server (SIGKILL) while four clients submit
// mail for the relay, restarts it on the same data directory, and checks
// that every message answered 250 reaches the relay: queued and synced
// before the 250, and sent after the restart if it had not gone before.
// A message may arrive twice (sent, then killed before the outcome was
// recorded), never zero times.
func TestQueueCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	relay := startSink(t)
	dns := dnstest.Start(t)
	dir := t.TempDir()
	spec := childSpec{Env: map[string]string{"MAILHOST_DATA": dir, "MAILHOST_SUBMISSION": "127.0.0.1:0", "MAILHOST_RELAY": relay.addr, "MAILHOST_DNS": dns.Addr}}
	srv := startChild(t, spec)
	api, submission := srv.api(), srv.Submission
	key := keyRE.FindString(srv.printed)
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")

	var (
		mu    sync.Mutex
		acked []string // recipients of the messages answered 250
		wg    sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := smtp.DialStartTLS(submission, &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				t.Errorf("client %d: %v", w, err)
				return
			}
			defer c.Close()
			if err := c.Auth(sasl.NewPlainClient("", "alice@example.com", "password123")); err != nil {
				t.Errorf("client %d: AUTH: %v", w, err)
				return
			}
			for i := 0; ; i++ {
				rcpt := fmt.Sprintf("r%d-%d@remote.test", w, i)
				msg := fmt.Sprintf("From: alice@example.com\r\nTo: %s\r\nSubject: crash %d %d\r\n\r\n%s\r\n", rcpt, w, i, strings.Repeat("body line\r\n", 1+i%40))
				if err := c.SendMail("alice@example.com", []string{rcpt}, strings.NewReader(msg)); err != nil {
					return // the server was killed
				}
				mu.Lock()
				acked = append(acked, rcpt)
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 60 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.kill()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no message was accepted before the kill")
	}
	relay.mu.Lock()
	before := len(relay.msgs)
	relay.mu.Unlock()

	startChild(t, spec)
	got := map[string]int{}
	missing := acked
	for deadline := time.Now().Add(20 * time.Second); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		relay.mu.Lock()
		clear(got)
		for _, m := range relay.msgs {
			for _, to := range m.To {
				got[to]++
			}
		}
		relay.mu.Unlock()
		missing = nil
		for _, r := range acked {
			if got[r] == 0 {
				missing = append(missing, r)
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d messages answered 250 never reached the relay: %v", len(missing), len(acked), missing[:min(5, len(missing))])
	}
	dups := 0
	for _, r := range acked {
		dups += got[r] - 1
	}
	t.Logf("%d messages answered 250; %d had reached the relay at the kill; all arrived after the restart, %d twice", len(acked), before, dups)
}
