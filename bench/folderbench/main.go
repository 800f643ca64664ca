// Command folderbench fills a mailbox and times what a mail client sends
// to a folder, against any IMAP server: bench/folder.sh runs it
// against mailhost and Dovecot side by side.
//
//	folderbench maildir -dir DIR -n N            N messages into a Maildir (Dovecot's)
//	folderbench maildir|fill ... -threads K       the same, as conversations of K messages (bench/sort.sh)
//	folderbench fill -data DIR -email E -n N      N messages into mailhost's store at DIR (server stopped)
//	folderbench fill -store postgres://... -email E -n N   the same into a PostgreSQL store
//	folderbench run -addr A -user U -pass P -cmd CMD [-reps R] [-label L]
//
// Both fills write the same messages (message i is the same bytes), of
// 4,096 bytes each by default (-size); with -threads K the messages are
// conversations of K (threaded below). run logs in over STARTTLS, selects
// INBOX, sends CMD R times and prints one JSON line per repetition: the
// milliseconds from sending the command to reading its tagged OK, the
// untagged responses and the bytes read. It reads responses as bytes
// (literals skipped by their length) and decodes nothing, so that its own
// cost is small and the same for every server. A CMD containing %d is
// sent once per message, 1..N in turn, pipelined in groups (-each).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("folderbench: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: folderbench maildir|fill|run [flags]")
	}
	var err error
	switch os.Args[1] {
	case "maildir":
		err = maildir(os.Args[2:])
	case "fill":
		err = fill(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// base is when message 0 was received; message i one second later each.
var base = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// message is message i: a plain header as mail clients and lists write
// it, a token of its own in the text ("token<i>", for SEARCH BODY), padded
// to size bytes. With threads > 0 it is part of a conversation
// (threaded).
func message(i, size, threads, n int) []byte {
	var h string
	if threads > 0 {
		h = threaded(i, threads, n)
	} else {
		senders := []string{"Bob Sender <bob@example.org>", "carol@example.net", "\"Dave, D.\" <dave@example.com>", "Erin Example <erin@example.org>"}
		h = fmt.Sprintf("Return-Path: <bob@example.org>\r\nReceived: from mx.example.org by mx.bench.test; %s\r\n"+
			"Date: %s\r\nFrom: %s\r\nTo: Alice <user0@bench.test>\r\nSubject: message %d about the weekly report\r\n"+
			"Message-ID: <%d.bench@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
			base.Format(time.RFC1123Z), base.Add(time.Duration(i)*time.Second).Format(time.RFC1123Z), senders[i%len(senders)], i, i)
	}
	body := fmt.Sprintf("Hello Alice,\r\n\r\nthis is token%d.\r\n", i)
	line := "the quick brown fox jumps over the lazy dog, and again, 0123456789\r\n"
	pad := size - len(h) - len(body)
	if pad < 0 {
		pad = 0
	}
	return []byte(h + body + strings.Repeat(line, pad/len(line)+1)[:pad])
}

// threaded is the header of message i of n in conversations of k: n/k
// threads whose messages are spread over the folder (message i is reply
// i/(n/k) of thread i%(n/k)), each reply answering the one before it
// (In-Reply-To, References to the first and the previous), subjects
// that do not sort in arrival order, "Re:" and "[list]" prefixes, Date
// fields a few minutes off the arrival order, and 997 senders with
// display names (some encoded), so that no SORT key comes presorted.
func threaded(i, k, n int) string {
	nt := max(n/k, 1)
	t, r := i%nt, i/nt
	id := func(t, r int) string { return fmt.Sprintf("<t%d.r%d.bench@example.org>", t, r) }
	subj := fmt.Sprintf("topic %d of the weekly report", (t*7919)%nt)
	switch {
	case t%5 == 0:
		subj = "[team] " + subj
	case t%7 == 0:
		subj = "=?utf-8?q?R=C3=A9sum=C3=A9?= " + subj
	}
	if r > 0 {
		subj = "Re: " + subj
	}
	u := (i * 31) % 997
	from := fmt.Sprintf("\"User %d\" <u%d@example.org>", (u*13)%997, u)
	if u%9 == 0 {
		from = fmt.Sprintf("=?utf-8?q?J=C3=B6rg_%d?= <j%d@example.de>", u, u)
	}
	date := base.Add(time.Duration(i)*time.Second + time.Duration((i*7919)%600-300)*time.Second)
	h := fmt.Sprintf("Return-Path: <u%d@example.org>\r\nReceived: from mx.example.org by mx.bench.test; %s\r\n"+
		"Date: %s\r\nFrom: %s\r\nTo: Alice <user%d@bench.test>\r\nSubject: %s\r\nMessage-ID: %s\r\n",
		u, base.Format(time.RFC1123Z), date.Format(time.RFC1123Z), from, (i*7)%50, subj, id(t, r))
	if r > 0 {
		refs := id(t, 0)
		if r > 1 {
			refs += "\r\n " + id(t, r-1)
		}
		h += fmt.Sprintf("In-Reply-To: %s\r\nReferences: %s\r\n", id(t, r-1), refs)
	}
	return h + "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
}

func maildir(args []string) error {
	fs := flag.NewFlagSet("maildir", flag.ExitOnError)
	dir := fs.String("dir", "", "the Maildir")
	n := fs.Int("n", 2000, "messages")
	size := fs.Int("size", 4096, "bytes per message")
	threads := fs.Int("threads", 0, "conversations of this many messages (0: none)")
	fs.Parse(args)
	for _, d := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(*dir, d), 0o700); err != nil {
			return err
		}
	}
	for i := range *n {
		b := message(i, *size, *threads, *n)
		at := base.Add(time.Duration(i) * time.Second)
		// S= and W= (the size, and the size with CRLF line ends, which
		// these files have already) as Dovecot's own delivery names them,
		// so that it needs no file to learn either.
		name := filepath.Join(*dir, "cur", fmt.Sprintf("%d.M%dP1.bench,S=%d,W=%d:2,", at.Unix(), i, len(b), len(b)))
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return err
		}
		if err := os.Chtimes(name, at, at); err != nil {
			return err
		}
	}
	return nil
}

func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	data := fs.String("data", "", "mailhost's data directory (the server stopped)")
	storeURL := fs.String("store", "", "a postgres:// URL: fill mailhost's PostgreSQL store instead")
	email := fs.String("email", "user0@bench.test", "the mailbox")
	n := fs.Int("n", 2000, "messages")
	size := fs.Int("size", 4096, "bytes per message")
	threads := fs.Int("threads", 0, "conversations of this many messages (0: none)")
	fs.Parse(args)
	ctx := context.Background()
	var st interface {
		MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
		Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error)
		Close() error
	}
	var err error
	if *storeURL != "" {
		st, err = pgstore.Open(ctx, *storeURL, pgstore.Options{Node: "folderbench"})
	} else {
		st, err = boltstore.Open(ctx, *data, boltstore.Options{})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	mb, _, err := st.MailboxByEmail(ctx, *email)
	if err != nil {
		return err
	}
	// Many deliveries at once, so that bbolt groups them into few commits;
	// each in the order of i within its worker.
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < *n; i += workers {
				_, err := st.Deliver(ctx, mailstore.Delivery{
					Body: message(i, *size, *threads, *n), ReceivedAt: base.Add(time.Duration(i) * time.Second), MailboxIDs: []int64{mb.ID},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// result is one timed command.
type result struct {
	Label     string  `json:"label"`
	Cmd       string  `json:"cmd"`
	Rep       int     `json:"rep"`
	Ms        float64 `json:"ms"`
	SelectMs  float64 `json:"select_ms"`
	LoginMs   float64 `json:"login_ms"`
	Untagged  int     `json:"untagged"`
	Bytes     int64   `json:"bytes"`
	Commands  int     `json:"commands"`
	PerSecond float64 `json:"per_second,omitempty"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:143", "IMAP server (STARTTLS)")
	user := fs.String("user", "user0@bench.test", "login")
	pass := fs.String("pass", "load-test-password", "password")
	cmd := fs.String("cmd", "UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)", "the command; %d for one per message")
	each := fs.Int("each", 0, "with %d in -cmd: messages 1..each")
	pipeline := fs.Int("pipeline", 1, "with %d in -cmd: commands in flight")
	reps := fs.Int("reps", 5, "repetitions")
	label := fs.String("label", "", "label of the JSON lines")
	fs.Parse(args)

	c, selMs, loginMs, err := dial(*addr, *user, *pass)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	var times []float64
	for rep := range *reps {
		r := result{Label: *label, Cmd: *cmd, Rep: rep + 1, SelectMs: selMs, LoginMs: loginMs}
		start := time.Now()
		if strings.Contains(*cmd, "%d") {
			err = c.each(*cmd, *each, *pipeline, &r)
		} else {
			r.Commands = 1
			err = c.command(*cmd, &r)
		}
		if err != nil {
			return err
		}
		r.Ms = float64(time.Since(start).Microseconds()) / 1000
		if r.Untagged > 0 {
			r.PerSecond = float64(r.Untagged) / (r.Ms / 1000)
		}
		times = append(times, r.Ms)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	sort.Float64s(times)
	fmt.Fprintf(os.Stderr, "%s %q: median %.1f ms (min %.1f, max %.1f) over %d\n", *label, *cmd, times[len(times)/2], times[0], times[len(times)-1], len(times))
	return nil
}

type client struct {
	conn net.Conn
	r    *bufio.Reader
	tag  int
}

// dial connects, runs STARTTLS, logs in and selects INBOX; selMs is how
// long SELECT took, loginMs LOGIN.
func dial(addr, user, pass string) (c *client, selMs, loginMs float64, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, 0, 0, err
	}
	c = &client{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	if _, err := c.r.ReadString('\n'); err != nil { // greeting
		return nil, 0, 0, err
	}
	var r result
	if err := c.command("STARTTLS", &r); err != nil {
		return nil, 0, 0, err
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	c.conn, c.r = tc, bufio.NewReaderSize(tc, 64<<10)
	lstart := time.Now()
	if err := c.command(fmt.Sprintf("LOGIN %s %s", quote(user), quote(pass)), &r); err != nil {
		return nil, 0, 0, err
	}
	loginMs = float64(time.Since(lstart).Microseconds()) / 1000
	start := time.Now()
	if err := c.command("SELECT INBOX", &r); err != nil {
		return nil, 0, 0, err
	}
	return c, float64(time.Since(start).Microseconds()) / 1000, loginMs, nil
}

func quote(s string) string { return strconv.Quote(s) }

// command sends one command and reads to its tagged response.
func (c *client) command(cmd string, r *result) error {
	c.tag++
	tag := "a" + strconv.Itoa(c.tag)
	if _, err := fmt.Fprintf(c.conn, "%s %s\r\n", tag, cmd); err != nil {
		return err
	}
	return c.readUntil(tag, r)
}

// each sends cmd once per message 1..n, depth commands in flight.
func (c *client) each(cmd string, n, depth int, r *result) error {
	var buf bytes.Buffer
	first := c.tag + 1
	sent, read := 0, 0
	for read < n {
		buf.Reset()
		for sent < n && sent-read < depth {
			c.tag++
			sent++
			fmt.Fprintf(&buf, "a%d %s\r\n", c.tag, fmt.Sprintf(cmd, sent))
		}
		if buf.Len() > 0 {
			if _, err := c.conn.Write(buf.Bytes()); err != nil {
				return err
			}
		}
		if err := c.readUntil("a"+strconv.Itoa(first+read), r); err != nil {
			return err
		}
		read++
	}
	r.Commands = n
	return nil
}

// readUntil reads responses up to the tagged one of tag, which must be OK.
func (c *client) readUntil(tag string, r *result) error {
	for {
		line, err := c.readLine(r)
		if err != nil {
			return err
		}
		if strings.HasPrefix(line, "* ") {
			r.Untagged++
			continue
		}
		if rest, ok := strings.CutPrefix(line, tag+" "); ok {
			if !strings.HasPrefix(rest, "OK") {
				return fmt.Errorf("%s: %s", tag, strings.TrimSpace(line))
			}
			return nil
		}
	}
}

// readLine reads one response line, skipping the literals inside it; it
// answers the line's start (up to 200 bytes).
func (c *client) readLine(r *result) (string, error) {
	var start string
	for {
		b, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			err = nil
		}
		if err != nil {
			return "", err
		}
		r.Bytes += int64(len(b))
		if len(start) < 200 {
			start += string(b[:min(len(b), 200)])
		}
		if !bytes.HasSuffix(b, []byte("}\r\n")) {
			if b[len(b)-1] == '\n' {
				return start, nil
			}
			continue
		}
		open := bytes.LastIndexByte(b, '{')
		n, err := strconv.ParseInt(strings.TrimSuffix(string(b[open+1:len(b)-3]), "+"), 10, 64)
		if err != nil {
			return "", fmt.Errorf("literal: %q", b)
		}
		if _, err := io.CopyN(io.Discard, c.r, n); err != nil {
			return "", err
		}
		r.Bytes += n
	}
}
