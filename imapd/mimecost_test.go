package imapd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// nestedMultipart is a message of depth nested multipart/mixed parts, each
// the only part of its parent, around a text/plain part that says needle:
// at depth 20,000 about 1.5 MB.
func nestedMultipart(depth int, needle string) string {
	var b strings.Builder
	b.WriteString("From: mallory@example.org\r\nTo: alice@example.com\r\nSubject: nested\r\nMIME-Version: 1.0\r\n")
	for i := range depth {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=\"b%d\"\r\n\r\n--b%d\r\n", i, i)
	}
	fmt.Fprintf(&b, "Content-Type: text/plain\r\n\r\n%s\r\n", needle)
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "--b%d--\r\n", i)
	}
	return b.String()
}

// rawTimed sends one command and reads its answer, however long, within
// a minute; it returns the tagged line and the time the answer took.
func (rc *rawConn) rawTimed(command string) (untagged []string, tagged string, took time.Duration) {
	rc.t.Helper()
	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	start := time.Now()
	fmt.Fprintf(rc.c, "%s %s\r\n", tag, command)
	rc.c.SetReadDeadline(start.Add(time.Minute))
	for {
		l, err := rc.r.ReadString('\n')
		if err != nil {
			rc.t.Fatalf("%s: read: %v", command, err)
		}
		if strings.HasPrefix(l, tag+" ") {
			return untagged, strings.TrimRight(l, "\r\n"), time.Since(start)
		}
		untagged = append(untagged, l)
	}
}

// TestNestedMultipartCost: a message of 20,000 nested multipart/mixed
// parts (1.5 MB) costs each FETCH BODYSTRUCTURE, FETCH of a deep part
// and SEARCH BODY time linear in its size, not in size times depth: the
// structure stops at maxMIMEDepth, where the rest is one
// application/octet-stream part. Before the bound, each took 5 to 6 s of
// CPU.
func TestNestedMultipartCost(t *testing.T) {
	const depth = 20_000
	e := newEnv(t, envOptions{insecureAuth: true})
	msg := nestedMultipart(depth, "needle")
	e.deliver(msg, t1)
	rc := dialRaw(t, e.addr)
	if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN: %s", tagged)
	}
	if _, tagged := rc.cmd(`EXAMINE INBOX`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("EXAMINE: %s", tagged)
	}
	// Generous against the 100 ms of CPU the issue asks for (about 20 to
	// 40 ms here, BenchmarkNestedMultipart): the wall time includes
	// reading 1.5 MB from the store and sending it, on a loaded machine,
	// and the race detector slows it tenfold. Before the bound, FETCH
	// BODYSTRUCTURE of this message took over a minute.
	bound := 2 * time.Second
	if raceEnabled {
		bound = 10 * time.Second
	}
	deep := strings.TrimSuffix(strings.Repeat("1.", 200), ".")
	for _, command := range []string{
		"FETCH 1 (BODYSTRUCTURE)",
		"FETCH 1 (BODY)",
		"FETCH 1 (BODY.PEEK[" + deep + "])",
		"FETCH 1 (BODY.PEEK[" + deep + ".MIME])",
		"FETCH 1 (BINARY.PEEK[" + deep + "])",
		"FETCH 1 (BINARY.SIZE[" + deep + "])",
		"SEARCH BODY needle",
		"SEARCH TEXT nothere",
	} {
		untagged, tagged, took := rc.rawTimed(command)
		t.Logf("%s: %v, %d bytes", command, took, len(strings.Join(untagged, "")))
		if !strings.HasPrefix(tagged, "r") || !strings.Contains(tagged, " OK ") {
			t.Errorf("%s = %q, want OK", command, tagged)
		}
		if took > bound {
			t.Errorf("%s took %v, want under %v", command, took, bound)
		}
	}
}

// BenchmarkNestedMultipart is the work of one FETCH BODYSTRUCTURE, one
// FETCH of a part 200 levels deep and one SEARCH BODY of the message of
// TestNestedMultipartCost, without the network.
func BenchmarkNestedMultipart(b *testing.B) {
	msg := []byte(nestedMultipart(20_000, "needle"))
	deep := &imap.FetchItemBodySection{Part: slices.Repeat([]int{1}, 200)}
	for _, bm := range []struct {
		name string
		f    func()
	}{
		{"bodystructure", func() { parseMIME(msg).bodyStructure(msg) }},
		{"section", func() { parseMIME(msg).section(msg, deep) }},
		{"search", func() { matchBody(parseMIME(msg), msg, "needle") }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				bm.f()
			}
		})
	}
}
