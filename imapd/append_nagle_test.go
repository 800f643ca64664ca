package imapd

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAppendNagleClient appends as Python's imaplib does: the literal in
// one write, its closing CRLF in a second one, with Nagle's algorithm on
// (imaplib leaves it on). The client's kernel holds the CRLF until the
// literal is acknowledged, and the server, waiting for that CRLF, has
// nothing to send that would carry the ACK: unless it acknowledges the
// literal at once, each APPEND waits out the server's delayed-ACK timer
// (40 ms at least on Linux) more than with TCP_NODELAY on the client.
// The test compares the two clients in one run.
func TestAppendNagleClient(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the delayed-ACK interplay measured here is Linux's")
	}
	e := newEnv(t, envOptions{insecureAuth: true})
	body := crlf("From: a@example.com\nSubject: nagle\n\n" + strings.Repeat(strings.Repeat("x", 74)+"\n", 54))
	run := func(nodelay bool) time.Duration {
		rc := dialRaw(t, e.addr)
		rc.c.(*net.TCPConn).SetNoDelay(nodelay)
		if _, st := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(st, "OK") {
			t.Fatalf("LOGIN: %s", st)
		}
		var times []time.Duration
		for i := range 9 {
			start := time.Now()
			fmt.Fprintf(rc.c, "a%d APPEND INBOX {%d}\r\n", i, len(body))
			if l := rc.line(); !strings.HasPrefix(l, "+") {
				t.Fatalf("APPEND: %q, want a continuation request", l)
			}
			if _, err := rc.c.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
			if _, err := rc.c.Write([]byte("\r\n")); err != nil {
				t.Fatal(err)
			}
			for {
				l := rc.line()
				if strings.HasPrefix(l, fmt.Sprintf("a%d ", i)) {
					if !strings.HasPrefix(l, fmt.Sprintf("a%d OK", i)) {
						t.Fatalf("APPEND: %q", l)
					}
					break
				}
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	nodelay := run(true)
	nagle := run(false)
	t.Logf("median APPEND: %v with Nagle on the client, %v with TCP_NODELAY", nagle, nodelay)
	// Half the kernel's minimum delayed-ACK time: a stall on each
	// APPEND shows as 40 ms or more.
	if nagle > nodelay+20*time.Millisecond {
		t.Errorf("APPEND from a client with Nagle on: median %v against %v with TCP_NODELAY; the literal is not acknowledged at once", nagle, nodelay)
	}
}
