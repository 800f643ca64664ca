package imapd

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"golang.org/x/crypto/argon2"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// cheapHash is an argon2id PHC string at the lowest cost, so that the
// office tests log in hundreds of times quickly (credential verifies any
// parameters).
func cheapHash(password string) string {
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(password), salt, 1, 8, 1, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=8,t=1,p=1$%s$%s", argon2.Version, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// office adds a domain of n mailboxes, office0@office.test ... with the
// password "office password", and answers their addresses.
func (e *env) office(n int) []string {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now()
	plan := mailstore.Plan{Name: "business", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	if _, err := e.st.CreateDomain(ctx, e.partnerID, mailstore.NewDomain{Name: "office.test", Plan: plan, MaxMailboxes: int64(n), MaxAliases: 10}, now); err != nil {
		e.t.Fatal(err)
	}
	hash := cheapHash(officePassword)
	var users []string
	for i := range n {
		u := fmt.Sprintf("office%d@office.test", i)
		if _, err := e.st.CreateMailbox(ctx, e.partnerID, "office.test", u, hash, now); err != nil {
			e.t.Fatal(err)
		}
		users = append(users, u)
	}
	return users
}

const officePassword = "office password"

// TestOffice: 50 people behind one address (loopback), each with a
// Thunderbird's 5 IMAP connections, all log in and IDLE at once; a
// mailbox's connections from the address stop at MaxConnsPerUserIP (the
// default, 10), and a colleague's are not affected.
func TestOffice(t *testing.T) {
	e := newEnv(t, envOptions{})
	users := e.office(50)
	const perUser = 5

	type conn struct {
		c    *imapclient.Client
		idle *imapclient.IdleCommand
	}
	var (
		mu    sync.Mutex
		conns []conn
		wg    sync.WaitGroup
		errs  = make(chan error, len(users)*perUser)
	)
	open := func(user string) (conn, error) {
		c, err := imapclient.DialStartTLS(e.addr, &imapclient.Options{TLSConfig: e.clientTLS})
		if err != nil {
			return conn{}, fmt.Errorf("dial: %w", err)
		}
		if err := c.Login(user, officePassword).Wait(); err != nil {
			c.Close()
			return conn{}, fmt.Errorf("login %s: %w", user, err)
		}
		if _, err := c.Select("INBOX", nil).Wait(); err != nil {
			c.Close()
			return conn{}, fmt.Errorf("select %s: %w", user, err)
		}
		idle, err := c.Idle()
		if err != nil {
			c.Close()
			return conn{}, fmt.Errorf("idle %s: %w", user, err)
		}
		return conn{c, idle}, nil
	}
	for _, u := range users {
		for range perUser {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cn, err := open(u)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				conns = append(conns, cn)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Cleanup(func() {
		for _, cn := range conns {
			cn.idle.Close()
			cn.c.Close()
		}
	})
	if len(conns) != len(users)*perUser {
		t.Fatalf("%d connections logged in and idling, want %d", len(conns), len(users)*perUser)
	}

	// office0 opens its 6th to 10th connection (a phone, a tablet):
	// taken; the 11th is refused at login, NO [UNAVAILABLE].
	var extra []conn
	for i := perUser; i < policy.DefaultConnsPerUserAddress; i++ {
		cn, err := open(users[0])
		if err != nil {
			t.Fatalf("connection %d of %s: %v", i+1, users[0], err)
		}
		extra = append(extra, cn)
		conns = append(conns, cn)
	}
	c := e.dial(nil)
	err := c.Login(users[0], officePassword).Wait()
	if imapCode(err) != imap.ResponseCodeUnavailable {
		t.Fatalf("connection %d of %s: Login = %v, want NO [UNAVAILABLE]", policy.DefaultConnsPerUserAddress+1, users[0], err)
	}
	// A colleague behind the same address still gets in.
	cn, err := open(users[1])
	if err != nil {
		t.Fatalf("6th connection of %s: %v", users[1], err)
	}
	conns = append(conns, cn)

	// Once one of office0's connections has logged out, the refused
	// one logs in; the server counts the logout when the connection
	// closes, so poll for it.
	extra[0].idle.Close()
	if err := extra[0].idle.Wait(); err != nil {
		t.Fatalf("end IDLE: %v", err)
	}
	if err := extra[0].c.Logout().Wait(); err != nil {
		t.Fatalf("LOGOUT: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Login(users[0], officePassword).Wait()
		if err == nil {
			break
		}
		if imapCode(err) != imap.ResponseCodeUnavailable || time.Now().After(deadline) {
			t.Fatalf("Login after a connection of %s logged out = %v, want OK", users[0], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStalePhone: a phone behind the office's address keeps sending the
// password its owner changed, 100 times; the owner's desktop, from the
// same address with the right password, logs in at once (within 2 s).
func TestStalePhone(t *testing.T) {
	e := newEnv(t, envOptions{})
	users := e.office(1)
	phone := e.dial(nil)
	for i := range 100 {
		if err := phone.Login(users[0], "the old password").Wait(); imapCode(err) != imap.ResponseCodeAuthenticationFailed {
			t.Fatalf("stale login %d = %v, want NO [AUTHENTICATIONFAILED]", i+1, err)
		}
	}
	desktop := e.dial(nil)
	start := time.Now()
	if err := desktop.Login(users[0], officePassword).Wait(); err != nil {
		t.Fatalf("right password after 100 stale ones = %v, want OK", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("right password after 100 stale ones took %v, want under 2 s", took)
	}
}
