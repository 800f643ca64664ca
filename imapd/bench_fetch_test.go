package imapd

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// BenchmarkFetchEncode is the server's side of the FETCHes most clients
// send, on an INBOX of 10,000 messages of 4 KB: "open", the folder
// listing (UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)),
// and "flags", the flag resync (UID FETCH 1:* (FLAGS)). The client is a
// plain connection on 127.0.0.1 that reads the responses as bytes and
// decodes nothing, so that the process's CPU time (cpu-µs/msg) is nearly
// all the server's: reading the summaries, making the envelopes, encoding
// the responses. No TLS, which would cost both sides of a comparison the
// same.
func BenchmarkFetchEncode(b *testing.B) {
	const n = 10_000
	e := newEnv(b, envOptions{insecureAuth: true, noRateLimit: true})
	fillInbox(b, e, n)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	tag := 0
	// do sends cmd and reads to its tagged response, counting the
	// untagged ones.
	do := func(cmd string) int {
		tag++
		t := fmt.Appendf(nil, "b%d ", tag)
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(append(append(t, cmd...), "\r\n"...)); err != nil {
			b.Fatal(err)
		}
		untagged := 0
		for {
			l, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				continue // the rest of a long line
			}
			if err != nil {
				b.Fatalf("%s: %v", cmd, err)
			}
			if bytes.HasPrefix(l, t) {
				if !bytes.HasPrefix(l[len(t):], []byte("OK")) {
					b.Fatalf("%s: %s", cmd, l)
				}
				return untagged
			}
			if l[0] == '*' {
				untagged++
			}
		}
	}
	if _, err := r.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	do(`LOGIN "alice@example.com" "alice's secret"`)
	do("SELECT INBOX")
	for _, bc := range []struct{ name, cmd string }{
		{"open", "UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)"},
		{"flags", "UID FETCH 1:* (FLAGS)"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := cpuTime(b)
			for b.Loop() {
				if got := do(bc.cmd); got != n {
					b.Fatalf("%s: %d responses, want %d", bc.cmd, got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N*n), "cpu-µs/msg")
		})
	}
}
