package imapd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailhost/mailhost/mailstore"
)

// greeting reads the first line a server sends on a plain connection to
// addr.
func greeting(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

// dialTLS connects to the implicit-TLS listener and logs in.
func (e *env) loginTLS() (*imapclient.Client, error) {
	e.t.Helper()
	c, err := imapclient.DialTLS(e.tlsAddr, &imapclient.Options{TLSConfig: e.clientTLS})
	if err != nil {
		return nil, err
	}
	if err := c.Login(alice, password).Wait(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func TestMaxConnsPerIP(t *testing.T) {
	e := newEnv(t, envOptions{maxConnsPerIP: 2})
	// The limit is one count across both listeners.
	plain := e.login(nil)
	tlsc, err := e.loginTLS()
	if err != nil {
		t.Fatalf("IMAPS login within the limit: %v", err)
	}
	defer tlsc.Close()
	for name, c := range map[string]*imapclient.Client{"plain": plain, "imaps": tlsc} {
		if err := c.Noop().Wait(); err != nil {
			t.Errorf("%s: NOOP within the limit = %v, want OK", name, err)
		}
	}

	line, err := greeting(t, e.addr)
	if !strings.HasPrefix(line, "* BYE [UNAVAILABLE]") {
		t.Errorf("plain greeting over the per-IP limit = %q, %v; want * BYE [UNAVAILABLE] ...", line, err)
	}
	if c, err := e.loginTLS(); err == nil {
		c.Close()
		t.Error("IMAPS login over the per-IP limit succeeded, want the connection closed")
	}

	// A slot comes back when its connection closes.
	if err := plain.Logout().Wait(); err != nil {
		t.Fatalf("LOGOUT: %v", err)
	}
	plain.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := e.loginTLS()
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("login after a connection closed = %v, want OK", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHandshakeTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// One connection per address: the silent one must give its slot back.
	e := newEnv(t, envOptions{maxConnsPerIP: 1, handshakeTimeout: timeout})
	c, err := net.DialTimeout("tcp", e.tlsAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.SetReadDeadline(start.Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection that sent no ClientHello still open after %v", took)
	}
	if n != 0 || (err != io.EOF && !errors.Is(err, net.ErrClosed) && !isReset(err)) {
		t.Errorf("Read = %d, %v; want the connection closed", n, err)
	}
	if took < timeout/2 {
		t.Errorf("closed after %v, before the handshake timeout %v", took, timeout)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		tc, err := e.loginTLS()
		if err == nil {
			tc.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("IMAPS login after the timed-out connection = %v, want OK", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestCreateOverFolderLimit: CREATE beyond mailstore.MaxFolders is NO
// [LIMIT] (RFC 5530 section 3), also when it is a parent CREATE makes.
func TestCreateOverFolderLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	// Fill from the store: a thousand CREATEs over IMAP would only be
	// slower.
	for i := len(mailstore.DefaultFolders); i < mailstore.MaxFolders-1; i++ {
		if _, err := e.st.CreateFolder(ctx, e.mb.ID, fmt.Sprintf("f%d", i)); err != nil {
			t.Fatalf("CreateFolder(f%d) = %v", i, err)
		}
	}
	c := e.login(nil)
	tests := []struct {
		name, folder string
		want         imap.ResponseCode // "" for OK
	}{
		{"last within the limit", "last", ""},
		{"one over", "over", imap.ResponseCodeLimit},
		{"parent over", "p/child", imap.ResponseCodeLimit},
		{"existing", "last", imap.ResponseCodeAlreadyExists},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(tc.folder, nil).Wait()
			if got := imapCode(err); got != tc.want || (tc.want == "" && err != nil) {
				t.Errorf("CREATE %s = %v, want code %q", tc.folder, err, tc.want)
			}
		})
	}
}

// TestSessionAfterSuspend: a session logged in before its domain was
// suspended (or its mailbox deleted) is refused SELECT, EXAMINE and
// APPEND from then on.
func TestSessionAfterSuspend(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT before suspension: %v", err)
	}
	if _, err := e.st.SetSuspended(ctx, e.partnerID, "example.com", true); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
	}{
		{"select", func() error { _, err := c.Select("INBOX", nil).Wait(); return err }},
		{"examine", func() error { _, err := c.Select("Sent", &imap.SelectOptions{ReadOnly: true}).Wait(); return err }},
		{"append", func() error {
			msg := "Subject: x\r\n\r\nbody\r\n"
			cmd := c.Append("INBOX", int64(len(msg)), nil)
			io.WriteString(cmd, msg)
			cmd.Close()
			_, err := cmd.Wait()
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); imapCode(err) != imap.ResponseCodeUnavailable {
				t.Errorf("%s after suspension = %v, want NO [UNAVAILABLE]", tc.name, err)
			}
		})
	}

	if _, err := e.st.SetSuspended(ctx, e.partnerID, "example.com", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Errorf("SELECT after resume = %v, want OK", err)
	}
	if err := e.st.DeleteMailbox(ctx, e.partnerID, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); imapCode(err) != imap.ResponseCodeUnavailable {
		t.Errorf("SELECT after the mailbox was deleted = %v, want NO [UNAVAILABLE]", err)
	}
}

// TestSessionEndedAfterSuspend: a session open when its domain is
// suspended is ended with BYE at its next command or IDLE tick once
// AccountRecheck has passed, so a suspended customer stops reading mail
// on the connections its clients keep open; a store that answers keeps
// the session going.
func TestSessionEndedAfterSuspend(t *testing.T) {
	e := newEnv(t, envOptions{accountRecheck: time.Nanosecond, pollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	noop := e.login(nil)
	if _, err := noop.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	idle := e.login(nil)
	if _, err := idle.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	cmd, err := idle.Idle()
	if err != nil {
		t.Fatalf("IDLE: %v", err)
	}
	if err := noop.Noop().Wait(); err != nil {
		t.Fatalf("NOOP before the suspension: %v", err)
	}

	if _, err := e.st.SetSuspended(ctx, e.partnerID, "example.com", true); err != nil {
		t.Fatal(err)
	}
	if err := noop.Noop().Wait(); err == nil {
		t.Errorf("NOOP after the suspension succeeded, want the session ended")
	}
	if _, err := noop.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{Flags: true}).Collect(); err == nil {
		t.Errorf("FETCH on the ended session succeeded")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("IDLE session still open 5 s after the suspension")
	}
}
