package imapd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailhost/mailhost/mailstore"
)

// benchBody is a message of 4 KB, the size of the speed targets' messages.
func benchBody(i int) []byte {
	h := fmt.Sprintf("From: bob@example.org\r\nTo: alice@example.com\r\nSubject: message %d\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\n", i)
	line := "the quick brown fox jumps over the lazy dog, and again, 0123456789\r\n"
	return []byte(h + strings.Repeat(line, (4096-len(h))/len(line)+1)[:4096-len(h)])
}

// fillInbox delivers n 4 KB messages to alice's INBOX from several
// goroutines, so that bbolt groups them into few commits.
func fillInbox(b *testing.B, e *env, n int) {
	b.Helper()
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				_, err := e.st.Deliver(context.Background(), mailstore.Delivery{
					Body: benchBody(i), ReceivedAt: time.Now(), MailboxIDs: []int64{e.mb.ID},
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
	for err := range errs {
		b.Fatalf("Deliver: %v", err)
	}
}

// BenchmarkFetchAll is FETCH 1:* BODY.PEEK[] of 10,000 messages of 4 KB in
// one session over STARTTLS, with go-imap's client (the target: ≥ 25,000
// msgs/s). One iteration fetches the whole folder.
func BenchmarkFetchAll(b *testing.B) {
	const n = 10_000
	e := newEnv(b, envOptions{})
	fillInbox(b, e, n)
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		b.Fatalf("SELECT: %v", err)
	}
	var all imap.SeqSet
	all.AddRange(1, 0)
	opts := &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{Peek: true}}}
	b.SetBytes(n * 4096)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		got := fetchCount(b, c, all, opts)
		if got != n {
			b.Fatalf("FETCH 1:* returned %d messages, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
	// CPU time of the process (server and client together) per message:
	// steadier than msgs/s on a shared machine.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n*b.N), "cpu-µs/msg")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fetchCount(b *testing.B, c *imapclient.Client, set imap.SeqSet, opts *imap.FetchOptions) int {
	b.Helper()
	cmd := c.Fetch(set, opts)
	got := 0
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		for item := msg.Next(); item != nil; item = msg.Next() {
			if bs, ok := item.(imapclient.FetchItemDataBodySection); ok {
				if k, err := io.Copy(io.Discard, bs.Literal); err != nil || k != 4096 {
					b.Fatalf("body of message %d: %d bytes, %v; want 4096", msg.SeqNum, k, err)
				}
				got++
			}
		}
	}
	if err := cmd.Close(); err != nil {
		b.Fatalf("FETCH: %v", err)
	}
	return got
}

// BenchmarkIdleNewMessage is the cost of telling an idling session of one
// new message: alice's INBOX holds 10,000 messages of 4 KB, and
// each iteration delivers a message through the store. In "idle", one
// session has INBOX selected and is in IDLE, and the iteration waits for
// its EXISTS; "no_session" is the delivery alone (a synced bbolt commit),
// the floor to subtract. cpu-µs/op, the CPU time of the whole process,
// is the figure to compare (BENCHMARKS.md).
func BenchmarkIdleNewMessage(b *testing.B) {
	b.Run("no_session", func(b *testing.B) { benchNewMessage(b, false) })
	b.Run("idle", func(b *testing.B) { benchNewMessage(b, true) })
}

func benchNewMessage(b *testing.B, idling bool) {
	const n = 10_000
	e := newEnv(b, envOptions{})
	fillInbox(b, e, n)
	exists := make(chan uint32, 16)
	var idle *imapclient.IdleCommand
	if idling {
		c := e.login(&imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					exists <- *d.NumMessages
				}
			},
		}})
		if _, err := c.Select("INBOX", nil).Wait(); err != nil {
			b.Fatalf("SELECT: %v", err)
		}
		var err error
		if idle, err = c.Idle(); err != nil {
			b.Fatalf("IDLE: %v", err)
		}
	}
	body := benchBody(n)
	want := uint32(n)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.st.Deliver(context.Background(), mailstore.Delivery{Body: body, ReceivedAt: time.Now(), MailboxIDs: []int64{e.mb.ID}}); err != nil {
			b.Fatalf("Deliver: %v", err)
		}
		want++
		if !idling {
			continue
		}
		select {
		case got := <-exists:
			if got != want {
				b.Fatalf("EXISTS %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			b.Fatalf("no EXISTS within 10 s of delivery %d", want)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	if idle == nil {
		return
	}
	if err := idle.Close(); err != nil {
		b.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		b.Fatalf("IDLE: %v", err)
	}
}
