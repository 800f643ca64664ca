package imapd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// BenchmarkQResync is a client coming back to a folder of 10,000
// messages of 4 KB after 10 flag changes and 2 expunges: SELECT INBOX
// (QRESYNC (uidvalidity modseq)), one round trip, over a plain
// connection on 127.0.0.1 (bbolt, warm). It reports the bytes of the
// server's answer and the time of the round trip (targets: < 4 KB,
// < 5 ms).
func BenchmarkQResync(b *testing.B) {
	const n = 10_000
	e := newEnv(b, envOptions{insecureAuth: true})
	fillInbox(b, e, n)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	tag := 0
	// cmd sends a command and answers the server's lines, the tagged one
	// last, and their bytes.
	cmd := func(format string, args ...any) ([]string, int) {
		b.Helper()
		tag++
		t := fmt.Sprintf("q%d ", tag)
		fmt.Fprintf(c, t+format+"\r\n", args...)
		var lines []string
		size := 0
		for {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			l, err := r.ReadString('\n')
			if err != nil {
				b.Fatalf("read: %v", err)
			}
			size += len(l)
			lines = append(lines, l)
			if strings.HasPrefix(l, t) {
				if !strings.HasPrefix(l, t+"OK") {
					b.Fatalf("%s: %s", fmt.Sprintf(format, args...), l)
				}
				return lines, size
			}
		}
	}
	if _, err := r.ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	cmd(`LOGIN "alice@example.com" "alice's secret"`)
	cmd("ENABLE QRESYNC")
	sel, _ := cmd("SELECT INBOX")
	all := strings.Join(sel, "")
	validity := regexp.MustCompile(`UIDVALIDITY (\d+)`).FindStringSubmatch(all)
	highest := regexp.MustCompile(`HIGHESTMODSEQ (\d+)`).FindStringSubmatch(all)
	if validity == nil || highest == nil {
		b.Fatalf("SELECT: %q", sel)
	}
	cmd("CLOSE")

	ctx := context.Background()
	inbox, err := e.st.Folder(ctx, e.mb.ID, "INBOX")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		uid := uint32(500 + 900*i)
		if _, err := e.st.SetFlags(ctx, e.mb.ID, inbox.ID, []uint32{uid}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.st.Expunge(ctx, e.mb.ID, inbox.ID, []uint32{1234, 7777}); err != nil {
		b.Fatal(err)
	}

	var size, fetches int
	b.ResetTimer()
	for b.Loop() {
		lines, n := cmd("EXAMINE INBOX (QRESYNC (%s %s))", validity[1], highest[1])
		size, fetches = n, 0
		for _, l := range lines {
			if strings.Contains(l, " FETCH (") {
				fetches++
			}
		}
		if !strings.Contains(strings.Join(lines, ""), "* VANISHED (EARLIER) 1234,7777\r\n") || fetches != 10 {
			b.Fatalf("resync = %q", lines)
		}
	}
	b.ReportMetric(float64(size), "bytes/resync")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/resync")
}
