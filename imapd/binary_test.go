package imapd

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// literalItems reads the response lines up to tag, with each literal's
// bytes read exactly (they may hold CR, LF and NUL): it answers the
// literals in order and the tagged line.
func (rc *rawConn) literalItems(tag string) (lits [][]byte, lines []string) {
	rc.t.Helper()
	re := regexp.MustCompile(`~?\{(\d+)\}$`)
	for {
		l := rc.line()
		lines = append(lines, l)
		if strings.HasPrefix(l, tag+" ") {
			return lits, lines
		}
		if m := re.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			b := make([]byte, n)
			rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(rc.r, b); err != nil {
				rc.t.Fatal(err)
			}
			lits = append(lits, b)
		}
	}
}

// TestBinary: FETCH BINARY, BINARY.PEEK and BINARY.SIZE decode base64 and
// quoted-printable parts and answer literal8; a part in an encoding RFC
// 2045 does not define fails the FETCH with NO [UNKNOWN-CTE]; APPEND takes
// a literal8 with NUL octets and gives the bytes back (RFC 3516).
func TestBinary(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(crlf(`From: bob@example.org
Subject: parts
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: application/octet-stream
Content-Transfer-Encoding: base64

AAEC/w0KAA==
--b
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: Quoted-Printable

caf=C3=A9 =
soft
--b
Content-Type: application/octet-stream
Content-Transfer-Encoding: x-uuencode

begin 644 x
--b--
`), t1)
	rc := rawLogin(t, e)
	if u, _ := rc.cmd("CAPABILITY"); !strings.Contains(strings.Join(u, " "), " BINARY") {
		t.Errorf("CAPABILITY = %q, want BINARY", u)
	}
	mustOK(t, rc, "SELECT INBOX")
	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s FETCH 1 (BINARY.PEEK[1] BINARY.SIZE[1] BINARY.SIZE[2] BINARY.PEEK[2]<2.3>)\r\n", tag)
	lits, lines := rc.literalItems(tag)
	if len(lits) != 2 || !bytes.Equal(lits[0], []byte{0, 1, 2, 0xff, '\r', '\n', 0}) || string(lits[1]) != "fé" {
		t.Errorf("BINARY = %q (%q), want the decoded bytes", lits, lines)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"BINARY[1] ~{7}", "BINARY.SIZE[1] 7", "BINARY.SIZE[2] 10", "BINARY[2]<2> ~{3}"} {
		if !strings.Contains(all, want) {
			t.Errorf("FETCH BINARY = %q, want %s", lines, want)
		}
	}
	if u := mustOK(t, rc, "FETCH 1 (FLAGS)"); !has(u, "* 1 FETCH (UID 1 FLAGS ())") {
		t.Errorf("after BINARY.PEEK: %q, want no \\Seen", u)
	}
	for _, cmd := range []string{"FETCH 1 (BINARY.PEEK[3])", "FETCH 1 (BINARY.SIZE[3])"} {
		if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "NO [UNKNOWN-CTE]") {
			t.Errorf("%s = %s, want NO [UNKNOWN-CTE]", cmd, tagged)
		}
	}
	if _, tagged := rc.cmd("FETCH 1 (BODY.PEEK[3])"); !strings.HasPrefix(tagged, "OK") {
		t.Errorf("BODY.PEEK[3] = %s, want OK (BODY is not decoded)", tagged)
	}

	// APPEND of a literal8 holding NUL octets: stored with the part
	// base64-encoded, BODY[] as Dovecot answers it, BINARY the bytes
	// sent.
	msg := "Subject: nul\r\nContent-Transfer-Encoding: binary\r\n\r\na\x00b\r\n"
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND INBOX ~{%d+}\r\n%s\r\n", tag, len(msg), msg), tag)
	if !strings.HasPrefix(lines[len(lines)-1], tag+" OK [APPENDUID") {
		t.Fatalf("APPEND ~{n} = %q", lines)
	}
	mustOK(t, rc, "NOOP")
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s FETCH 2 (RFC822.SIZE BODY.PEEK[] BINARY.PEEK[1] BINARY.SIZE[1])\r\n", tag)
	lits, lines = rc.literalItems(tag)
	stored := "Subject: nul\r\nContent-Transfer-Encoding: base64\r\n\r\nYQBiDQo="
	if len(lits) != 2 || string(lits[0]) != stored || string(lits[1]) != "a\x00b\r\n" ||
		!strings.Contains(strings.Join(lines, " "), "BINARY.SIZE[1] 5") || !strings.Contains(lines[0], "RFC822.SIZE 59") {
		t.Errorf("FETCH of the literal8 message = %q (%q), want BODY[] %q and BINARY[1] the bytes sent", lits, lines, stored)
	}

	// A multipart: only the part with NUL octets is encoded.
	multi := "Subject: m\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nplain\r\n" +
		"--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\n\r\n\x00\x01\r\n\x02\r\n--b--\r\n"
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND INBOX ~{%d+}\r\n%s\r\n", tag, len(multi), multi), tag)
	if !strings.HasPrefix(lines[len(lines)-1], tag+" OK [APPENDUID") {
		t.Fatalf("APPEND multipart ~{n} = %q", lines)
	}
	mustOK(t, rc, "NOOP")
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s FETCH 3 (BODY.PEEK[1] BINARY.PEEK[2] BODY.PEEK[2.MIME])\r\n", tag)
	lits, lines = rc.literalItems(tag)
	// (BODY items come before BINARY ones.)
	if len(lits) != 3 || string(lits[0]) != "plain" || string(lits[2]) != "\x00\x01\r\n\x02" ||
		string(lits[1]) != "Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n" {
		t.Errorf("FETCH of the multipart = %q (%q)", lits, lines)
	}

	// NUL in a header cannot be encoded: NO [UNKNOWN-CTE], nothing stored.
	bad := "Subject: a\x00b\r\n\r\nbody\r\n"
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND INBOX ~{%d+}\r\n%s\r\n", tag, len(bad), bad), tag)
	if !strings.HasPrefix(lines[len(lines)-1], tag+" NO [UNKNOWN-CTE]") {
		t.Errorf("APPEND with NUL in a header = %q, want NO [UNKNOWN-CTE]", lines)
	}
	if u := mustOK(t, rc, "STATUS INBOX (MESSAGES)"); !has(u, "* STATUS INBOX (MESSAGES 3)") {
		t.Errorf("STATUS = %q, want 3 messages", u)
	}
}

// FuzzWithoutNUL: whatever an APPEND holds, withoutNUL answers a message
// without NUL octets, the same message when it had none, or
// errBinaryContent; and a single part comes back decoded as it was.
func FuzzWithoutNUL(f *testing.F) {
	f.Add([]byte("Subject: nul\r\nContent-Transfer-Encoding: binary\r\n\r\na\x00b\r\n"))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\n\x00\r\n--b\r\nContent-Type: message/rfc822\r\n\r\nX: y\r\n\r\n\x00\x00\r\n--b--\r\n"))
	f.Add([]byte("a\x00: b\r\n\r\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		out, err := withoutNUL(msg)
		switch {
		case err != nil:
			if err != errBinaryContent {
				t.Fatalf("withoutNUL: %v", err)
			}
		case bytes.IndexByte(out, 0) >= 0:
			t.Fatalf("withoutNUL(%q) = %q, with NUL", msg, out)
		case bytes.IndexByte(msg, 0) < 0 && !bytes.Equal(out, msg):
			t.Fatalf("withoutNUL(%q) = %q, want it unchanged", msg, out)
		}
		if e := parseMIME(msg); err == nil && bytes.IndexByte(msg, 0) >= 0 && !e.isMultipart() && e.embedded == nil {
			if got := parseMIME(out).binary(out, []int{1}, nil); !bytes.Equal(got, msg[e.body:e.end]) {
				t.Fatalf("BINARY[1] of withoutNUL(%q) = %q, want %q", msg, got, msg[e.body:e.end])
			}
		}
	})
}
