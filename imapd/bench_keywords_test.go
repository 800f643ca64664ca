package imapd

import (
	"context"
	"fmt"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// BenchmarkKeywords is a STORE that sets and clears a keyword the folder
// has, and a SELECT, on an INBOX of 1,000 messages whose folder holds 10
// or 1,000 distinct keywords (each message 10 of them, the first message
// all), in one session over STARTTLS with go-imap's client. A folder's
// keywords are bounded by imap_max_keywords (1,000); the commands should
// cost about the same at the bound as with 10.
func BenchmarkKeywords(b *testing.B) {
	const n = 1000
	for _, k := range []int{10, 1000} {
		b.Run(fmt.Sprintf("keywords=%d", k), func(b *testing.B) {
			e := newEnv(b, envOptions{})
			fillInbox(b, e, n)
			ctx := context.Background()
			inbox, err := e.st.Folder(ctx, e.mb.ID, "INBOX")
			if err != nil {
				b.Fatal(err)
			}
			kw := func(i int) string { return fmt.Sprintf("kw%04d", i%k) }
			sets := map[int][]uint32{} // first keyword -> messages with kw(first)..kw(first+9)
			for uid := uint32(1); uid <= n; uid++ {
				first := int(uid) * 10 % k
				sets[first] = append(sets[first], uid)
			}
			for first, uids := range sets {
				flags := make([]string, 10)
				for j := range flags {
					flags[j] = kw(first + j)
				}
				if _, err := e.st.SetFlags(ctx, e.mb.ID, inbox.ID, uids, mailstore.FlagsAdd, flags); err != nil {
					b.Fatal(err)
				}
			}
			all := make([]string, k)
			for i := range all {
				all[i] = kw(i)
			}
			if _, err := e.st.SetFlags(ctx, e.mb.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, all); err != nil {
				b.Fatal(err)
			}
			c := e.login(nil)
			b.Run("SELECT", func(b *testing.B) {
				cpu0 := cpuTime(b)
				for b.Loop() {
					d, err := c.Select("INBOX", nil).Wait()
					if err != nil || len(d.Flags) != 5+k {
						b.Fatalf("SELECT = %d flags, %v; want %d", len(d.Flags), err, 5+k)
					}
				}
				b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			})
			// STORE on a message with 10 keywords, and on the first, with
			// all of the folder's.
			for _, seq := range []uint32{2, 1} {
				b.Run(fmt.Sprintf("STORE/msg=%d", seq), func(b *testing.B) {
					if _, err := c.Select("INBOX", nil).Wait(); err != nil {
						b.Fatal(err)
					}
					set := imap.SeqSetNum(seq)
					f := []imap.Flag{imap.Flag(kw(int(seq) * 10 % k))}
					op := imap.StoreFlagsDel
					cpu0 := cpuTime(b)
					for b.Loop() {
						if err := c.Store(set, &imap.StoreFlags{Op: op, Silent: true, Flags: f}, nil).Close(); err != nil {
							b.Fatalf("STORE: %v", err)
						}
						if op == imap.StoreFlagsDel {
							op = imap.StoreFlagsAdd
						} else {
							op = imap.StoreFlagsDel
						}
					}
					b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				})
			}
		})
	}
}
