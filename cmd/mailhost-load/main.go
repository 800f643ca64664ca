// Command mailhost-load measures a running mailhost: it provisions a domain
// and mailboxes through the API, delivers N messages of S bytes over C
// concurrent SMTP connections to M mailboxes, then reads them back over
// IMAP and measures IMAP logins. It reports throughput, the latency from
// end of DATA to 250 (median, 99th percentile) and, given -pid, the
// server's peak resident size. Every loop is bounded in count and time, and
// it talks only to the addresses it is given (use loopback).
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
)

type options struct {
	api, key, smtpAddr, imapAddr string
	n, size, conns, mailboxes    int
	logins, loginClients         int
	pid                          int
	domain                       string
	starttls                     bool
	timeout                      time.Duration
}

const password = "load-test-password"

func main() {
	var o options
	flag.StringVar(&o.api, "api", "http://127.0.0.1:8080", "management API base URL")
	flag.StringVar(&o.key, "key", os.Getenv("MAILHOST_KEY"), "API key (env MAILHOST_KEY)")
	flag.StringVar(&o.smtpAddr, "smtp", "127.0.0.1:2525", "SMTP (MX) address")
	flag.StringVar(&o.imapAddr, "imap", "127.0.0.1:2143", "IMAP address; empty skips the IMAP phases")
	flag.IntVar(&o.n, "n", 2000, "messages to deliver")
	flag.IntVar(&o.size, "size", 4096, "message size in bytes")
	flag.IntVar(&o.conns, "c", 20, "concurrent SMTP connections")
	flag.IntVar(&o.mailboxes, "m", 100, "mailboxes to spread the messages over")
	flag.IntVar(&o.logins, "logins", 1000, "IMAP logins to time (0 skips)")
	flag.IntVar(&o.loginClients, "login-clients", 4, "concurrent IMAP login clients")
	flag.IntVar(&o.pid, "pid", 0, "server process id, to report its peak resident size")
	flag.StringVar(&o.domain, "domain", fmt.Sprintf("load-%d.test", time.Now().Unix()), "domain to create")
	flag.BoolVar(&o.starttls, "starttls", true, "use STARTTLS for IMAP (self-signed certificates accepted)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if o.key == "" {
		fmt.Fprintln(os.Stderr, "mailhost-load: -key (or MAILHOST_KEY) is required")
		os.Exit(2)
	}
	time.AfterFunc(o.timeout, func() { fmt.Fprintln(os.Stderr, "mailhost-load: timeout"); os.Exit(1) })
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mailhost-load:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	addrs, err := provision(o)
	if err != nil {
		return err
	}
	fmt.Printf("provisioned %s with %d mailboxes\n", o.domain, len(addrs))
	if err := deliver(o, addrs); err != nil {
		return err
	}
	if o.imapAddr != "" {
		if err := fetchAll(o, addrs[0], (o.n+len(addrs)-1)/len(addrs)); err != nil {
			return err
		}
		if o.logins > 0 {
			if err := logins(o, addrs); err != nil {
				return err
			}
		}
	}
	if o.pid > 0 {
		fmt.Printf("server peak resident size: %s\n", peakRSS(o.pid))
	}
	return nil
}

func apiCall(o options, method, path string, body any) error {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, o.api+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

// provision creates the domain (enterprise plan, room for all mailboxes)
// and its mailboxes, four at a time: each costs a password hash.
func provision(o options) ([]string, error) {
	if err := apiCall(o, "POST", "/domains/", map[string]any{"name": o.domain, "plan": "enterprise", "max_mailboxes": o.mailboxes}); err != nil {
		return nil, err
	}
	addrs := make([]string, o.mailboxes)
	errs := make(chan error, o.mailboxes)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@%s", i, o.domain)
		wg.Add(1)
		sem <- struct{}{}
		go func(a string) {
			defer func() { <-sem; wg.Done() }()
			errs <- apiCall(o, "POST", "/users/", map[string]any{"domain_name": o.domain, "email": a, "password": password})
		}(addrs[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

func message(id, size int, to string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: load@sender.test\r\nTo: %s\r\nSubject: load %d\r\nMessage-ID: <load-%d@sender.test>\r\nDate: %s\r\n\r\n",
		to, id, id, time.Now().Format(time.RFC1123Z))
	line := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 1) + "\r\n"
	for b.Len()+len(line) <= size {
		b.WriteString(line)
	}
	for b.Len() < size-2 {
		b.WriteByte('x')
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func deliver(o options, addrs []string) error {
	var next atomic.Int64
	lat := make([][]time.Duration, o.conns)
	errs := make(chan error, o.conns)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < o.conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cl, err := smtp.Dial(o.smtpAddr)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			if err := cl.Hello("load.sender.test"); err != nil {
				errs <- err
				return
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= o.n {
					cl.Quit()
					return
				}
				to := addrs[i%len(addrs)]
				msg := message(i, o.size, to)
				if err := cl.Mail("load@sender.test", &smtp.MailOptions{Size: int64(len(msg))}); err != nil {
					errs <- fmt.Errorf("MAIL: %w", err)
					return
				}
				if err := cl.Rcpt(to, nil); err != nil {
					errs <- fmt.Errorf("RCPT %s: %w", to, err)
					return
				}
				w, err := cl.Data()
				if err != nil {
					errs <- fmt.Errorf("DATA: %w", err)
					return
				}
				w.Write(msg)
				t0 := time.Now()
				if err := w.Close(); err != nil {
					errs <- fmt.Errorf("end of DATA: %w", err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("smtp: %w", err)
		}
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	fmt.Printf("smtp: %d messages of %d bytes over %d connections to %d mailboxes in %.2fs: %.0f msg/s, %.1f MB/s\n",
		len(all), o.size, o.conns, len(addrs), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(), float64(len(all)*o.size)/elapsed.Seconds()/(1<<20))
	if len(all) > 0 {
		fmt.Printf("smtp: end of DATA to 250: median %s, p99 %s, max %s\n",
			all[len(all)/2].Round(10*time.Microsecond), all[len(all)*99/100].Round(10*time.Microsecond), all[len(all)-1].Round(10*time.Microsecond))
	}
	return nil
}

func dialIMAP(o options) (*imapclient.Client, error) {
	opts := &imapclient.Options{TLSConfig: &tls.Config{InsecureSkipVerify: true}}
	if o.starttls {
		return imapclient.DialStartTLS(o.imapAddr, opts)
	}
	return imapclient.DialInsecure(o.imapAddr, opts)
}

// fetchAll reads a whole INBOX with one FETCH 1:* BODY.PEEK[].
func fetchAll(o options, addr string, want int) error {
	c, err := dialIMAP(o)
	if err != nil {
		return fmt.Errorf("imap: %w", err)
	}
	defer c.Close()
	if err := c.Login(addr, password).Wait(); err != nil {
		return fmt.Errorf("imap login: %w", err)
	}
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		return fmt.Errorf("imap select: %w", err)
	}
	if int(sel.NumMessages) < want {
		return fmt.Errorf("imap: INBOX of %s has %d messages, want %d", addr, sel.NumMessages, want)
	}
	start := time.Now()
	var seq imap.SeqSet
	seq.AddRange(1, 0)
	cmd := c.Fetch(seq, &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{Peek: true}}})
	var n, bytes int64
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		for item := msg.Next(); item != nil; item = msg.Next() {
			if b, ok := item.(imapclient.FetchItemDataBodySection); ok {
				k, _ := io.Copy(io.Discard, b.Literal)
				bytes += k
			}
		}
		n++
	}
	if err := cmd.Close(); err != nil {
		return fmt.Errorf("imap fetch: %w", err)
	}
	el := time.Since(start)
	fmt.Printf("imap: FETCH 1:* BODY.PEEK[] of %d messages (%.1f MB) in %.3fs: %.0f msg/s, %.1f MB/s\n",
		n, float64(bytes)/(1<<20), el.Seconds(), float64(n)/el.Seconds(), float64(bytes)/el.Seconds()/(1<<20))
	c.Logout().Wait()
	return nil
}

// logins times connect, LOGIN, LOGOUT cycles from several clients.
func logins(o options, addrs []string) error {
	var next atomic.Int64
	errs := make(chan error, o.loginClients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < o.loginClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= o.logins {
					return
				}
				c, err := dialIMAP(o)
				if err != nil {
					errs <- err
					return
				}
				err = c.Login(addrs[k%len(addrs)], password).Wait()
				c.Logout().Wait()
				c.Close()
				if err != nil {
					errs <- fmt.Errorf("login: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("imap logins: %w", err)
		}
	}
	fmt.Printf("imap: %d logins (connect, STARTTLS=%v, LOGIN, LOGOUT) from %d clients in %.2fs: %.0f logins/s\n",
		o.logins, o.starttls, o.loginClients, el.Seconds(), float64(o.logins)/el.Seconds())
	return nil
}

// peakRSS reads the process's high-water resident size from /proc.
func peakRSS(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "unknown"
}
