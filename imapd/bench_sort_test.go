package imapd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailhost/mailhost/mailstore"
)

// BenchmarkSortCommand is SORT and THREAD end to end: a real server on
// 127.0.0.1 over STARTTLS, a bbolt store in b.TempDir(), INBOX of 10,000
// messages of 4 KB in threads of 10 (Subject "Re: topic n", In-Reply-To
// and References to the thread's first message), go-imap v2's client in
// the same process. One iteration is one command over the whole folder,
// the search ALL.
func BenchmarkSortCommand(b *testing.B) {
	const n = 10_000
	e := newEnv(b, envOptions{})
	fillThreads(b, e, n)
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		b.Fatalf("SELECT: %v", err)
	}
	all := &imap.SearchCriteria{}
	run := func(b *testing.B, f func() (int, error)) {
		cpu0 := cpuTime(b)
		for b.Loop() {
			got, err := f()
			if err != nil {
				b.Fatal(err)
			}
			if got == 0 {
				b.Fatal("empty answer")
			}
		}
		b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	for _, bc := range []struct {
		name string
		crit []imapclient.SortCriterion
	}{
		{"SUBJECT", []imapclient.SortCriterion{{Key: imapclient.SortKeySubject}}},
		{"REVERSE_DATE", []imapclient.SortCriterion{{Key: imapclient.SortKeyDate, Reverse: true}}},
		{"DISPLAYFROM", []imapclient.SortCriterion{{Key: "DISPLAYFROM"}}},
	} {
		b.Run("SORT_"+bc.name, func(b *testing.B) {
			run(b, func() (int, error) {
				nums, err := c.Sort(&imapclient.SortOptions{SearchCriteria: all, SortCriteria: bc.crit}).Wait()
				if err == nil && len(nums) != n {
					err = fmt.Errorf("SORT answered %d messages, want %d", len(nums), n)
				}
				return len(nums), err
			})
		})
	}
	for _, alg := range []imap.ThreadAlgorithm{imap.ThreadReferences, imap.ThreadOrderedSubject} {
		b.Run("THREAD_"+string(alg), func(b *testing.B) {
			run(b, func() (int, error) {
				threads, err := c.Thread(&imapclient.ThreadOptions{Algorithm: alg, SearchCriteria: all}).Wait()
				if err == nil && len(threads) != n/10 {
					err = fmt.Errorf("THREAD answered %d threads, want %d", len(threads), n/10)
				}
				return len(threads), err
			})
		})
	}
}

// fillThreads delivers n 4 KB messages in threads of 10 to alice's INBOX.
func fillThreads(b *testing.B, e *env, n int) {
	b.Helper()
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				topic, k := i/10, i%10
				h := fmt.Sprintf("From: User %d <u%d@example.org>\r\nTo: alice@example.com\r\nDate: Mon, 02 Nov 2026 %02d:%02d:%02d +0000\r\nMessage-ID: <%d@example.org>\r\n",
					i%97, i%97, i/3600%24, i/60%60, i%60, i)
				if k == 0 {
					h += fmt.Sprintf("Subject: topic %d\r\n", topic)
				} else {
					h += fmt.Sprintf("Subject: Re: topic %d\r\nIn-Reply-To: <%d@example.org>\r\nReferences: <%d@example.org>\r\n", topic, topic*10, topic*10)
				}
				h += "\r\n"
				line := "the quick brown fox jumps over the lazy dog, and again, 0123456789\r\n"
				body := h + strings.Repeat(line, 4096/len(line)+1)[:4096-len(h)]
				_, err := e.st.Deliver(context.Background(), mailstore.Delivery{
					Body: []byte(body), ReceivedAt: time.Now(), MailboxIDs: []int64{e.mb.ID},
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
