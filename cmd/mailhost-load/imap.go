package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

func dialIMAP(o options) (*imapclient.Client, error) {
	opts := &imapclient.Options{TLSConfig: &tls.Config{InsecureSkipVerify: true}}
	if o.starttls {
		return imapclient.DialStartTLS(o.imapAddr, opts)
	}
	return imapclient.DialInsecure(o.imapAddr, opts)
}

// session logs in as addr.
func session(o options, addr string) (*imapclient.Client, error) {
	c, err := dialIMAP(o)
	if err != nil {
		return nil, fmt.Errorf("imap: %w", err)
	}
	if err := c.Login(addr, o.password).Wait(); err != nil {
		c.Close()
		return nil, fmt.Errorf("imap login %s: %w", addr, err)
	}
	return c, nil
}

// counter counts INBOX messages over one logged-in session per mailbox,
// opened on first use and kept, so that polling costs the server a STATUS
// and not a login (a password hash, where logins are not cached).
type counter struct {
	o        options
	sessions map[string]*imapclient.Client
}

func newCounter(o options) *counter {
	return &counter{o: o, sessions: map[string]*imapclient.Client{}}
}

func (c *counter) count(addr string) (int, error) {
	s := c.sessions[addr]
	if s == nil {
		var err error
		if s, err = session(c.o, addr); err != nil {
			return 0, err
		}
		c.sessions[addr] = s
	}
	st, err := s.Status("INBOX", &imap.StatusOptions{NumMessages: true}).Wait()
	if err != nil {
		return 0, fmt.Errorf("imap status %s: %w", addr, err)
	}
	return int(*st.NumMessages), nil
}

// close logs out of every session; the counter can be used again.
func (c *counter) close() {
	for a, s := range c.sessions {
		s.Logout().Wait()
		s.Close()
		delete(c.sessions, a)
	}
}

// countAll counts the INBOX of every mailbox. Given want, it polls the
// mailboxes still short of their count every 200 ms until none is, or ctx
// ends; a mailbox holding more than wanted is an error (a miscount would
// make the end-to-end figure wrong).
func countAll(ctx context.Context, c *counter, addrs []string, want map[string]int) (map[string]int, error) {
	got := map[string]int{}
	todo := addrs
	for {
		var short []string
		for _, a := range todo {
			k, err := c.count(a)
			if err != nil {
				return nil, err
			}
			got[a] = k
			if want != nil && k > want[a] {
				return nil, fmt.Errorf("%s holds %d messages, want %d: is something else delivering to it?", a, k, want[a])
			}
			if want != nil && k < want[a] {
				short = append(short, a)
			}
		}
		if len(short) == 0 {
			return got, nil
		}
		todo = short
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("%d mailboxes still short, first %s (%d of %d): %w", len(short), short[0], got[short[0]], want[short[0]], ctx.Err())
		}
	}
}

// fetchAll reads addr's whole INBOX with one FETCH 1:* BODY.PEEK[], timed
// from the command to its tagged reply.
func fetchAll(o options, addr string) (fetchResult, error) {
	c, err := session(o, addr)
	if err != nil {
		return fetchResult{}, err
	}
	defer c.Close()
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		return fetchResult{}, fmt.Errorf("imap select: %w", err)
	}
	if sel.NumMessages == 0 {
		return fetchResult{}, fmt.Errorf("imap: INBOX of %s is empty, nothing to fetch", addr)
	}
	start := time.Now()
	var seq imap.SeqSet
	seq.AddRange(1, 0)
	cmd := c.Fetch(seq, &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{Peek: true}}})
	var n, size int64
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		for item := msg.Next(); item != nil; item = msg.Next() {
			if b, ok := item.(imapclient.FetchItemDataBodySection); ok {
				k, _ := io.Copy(io.Discard, b.Literal)
				size += k
			}
		}
		n++
	}
	if err := cmd.Close(); err != nil {
		return fetchResult{}, fmt.Errorf("imap fetch: %w", err)
	}
	el := time.Since(start)
	c.Logout().Wait()
	if n != int64(sel.NumMessages) {
		return fetchResult{}, fmt.Errorf("imap fetch: %d messages returned, SELECT said %d", n, sel.NumMessages)
	}
	r := fetchResult{Messages: int(n), MB: float64(size) / (1 << 20), Seconds: el.Seconds()}
	r.Rate, r.MBps = float64(n)/el.Seconds(), r.MB/el.Seconds()
	fmt.Printf("imap: FETCH 1:* BODY.PEEK[] of %d messages (%.1f MB) in one session in %.3fs: %.0f msg/s, %.1f MB/s\n",
		r.Messages, r.MB, r.Seconds, r.Rate, r.MBps)
	return r, nil
}

// loginCycles runs count connect, [STARTTLS,] LOGIN, LOGOUT cycles from
// clients goroutines, cycle k logging in as addrs[k%len], and answers how
// long they took.
func loginCycles(o options, addrs []string, count, clients int) (time.Duration, error) {
	var next atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= count {
					return
				}
				c, err := session(o, addrs[k%len(addrs)])
				if err != nil {
					errs <- err
					next.Store(int64(count))
					return
				}
				c.Logout().Wait()
				c.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return time.Since(start), <-errs
}

// logins logs in once to every mailbox (servers that cache verified
// passwords pay the password hash here), then times o.logins cycles.
func logins(ctx context.Context, o options, addrs []string) (loginResult, error) {
	first, err := loginCycles(o, addrs, len(addrs), o.loginClients)
	if err != nil {
		return loginResult{}, fmt.Errorf("imap logins: %w", err)
	}
	if ctx.Err() != nil {
		return loginResult{}, ctx.Err()
	}
	el, err := loginCycles(o, addrs, o.logins, o.loginClients)
	if err != nil {
		return loginResult{}, fmt.Errorf("imap logins: %w", err)
	}
	r := loginResult{
		Clients: o.loginClients, Logins: o.logins, Seconds: el.Seconds(), Rate: float64(o.logins) / el.Seconds(),
		FirstRate: float64(len(addrs)) / first.Seconds(),
	}
	tls := "STARTTLS, "
	if !o.starttls {
		tls = ""
	}
	fmt.Printf("imap: first login to each of %d mailboxes from %d clients: %.0f logins/s\n", len(addrs), o.loginClients, r.FirstRate)
	fmt.Printf("imap: %d logins (connect, %sLOGIN, LOGOUT) from %d clients in %.2fs: %.0f logins/s\n",
		o.logins, tls, o.loginClients, r.Seconds, r.Rate)
	return r, nil
}
