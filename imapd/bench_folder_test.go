package imapd

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// bodiesAsSummaries is a store whose Summaries, while before is set,
// answers the bodies in place of the summaries: the server then does what
// it did before summaries existed (Bodies, and the envelope parsed from
// each body), so that both can be measured in one run on one store.
type bodiesAsSummaries struct {
	mailstore.Store
	before atomic.Bool
}

func (s *bodiesAsSummaries) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uint32, []byte) error) error {
	if s.before.Load() {
		return s.Store.Bodies(ctx, mailboxID, folderID, uids, fn)
	}
	return s.Store.Summaries(ctx, mailboxID, folderID, uids, fn)
}

// BenchmarkFolderOpen is what a mail client sends when it opens a folder,
// UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE), on INBOXes
// of 2,000 and 100,000 messages of 4 KB, in one session over STARTTLS
// with go-imap's client (the target: 100,000 under 1 s). "before" reads the
// bodies and parses each header, as the server did before summaries;
// "after" reads the stored summaries. Both run on the same store, warm.
func BenchmarkFolderOpen(b *testing.B) {
	for _, n := range []int{2_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			st := &bodiesAsSummaries{}
			e := newEnv(b, envOptions{wrap: func(s mailstore.Store) mailstore.Store {
				st.Store = s
				return st
			}})
			fillInbox(b, e, n)
			c := e.login(nil)
			if _, err := c.Select("INBOX", nil).Wait(); err != nil {
				b.Fatalf("SELECT: %v", err)
			}
			var all imap.UIDSet
			all.AddRange(1, 0)
			opts := &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true, InternalDate: true, Envelope: true}
			for _, before := range []bool{true, false} {
				name := "after"
				if before {
					name = "before"
				}
				b.Run(name, func(b *testing.B) {
					st.before.Store(before)
					cpu0 := cpuTime(b)
					for b.Loop() {
						cmd := c.Fetch(all, opts)
						got := 0
						for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
							if _, err := msg.Collect(); err != nil {
								b.Fatalf("FETCH: %v", err)
							}
							got++
						}
						if err := cmd.Close(); err != nil || got != n {
							b.Fatalf("UID FETCH 1:* = %d messages, %v; want %d", got, err, n)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
					// CPU time of the process (server and client together)
					// per open: steadier than wall time on a shared machine.
					b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/open")
				})
			}
		})
	}
}
