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

	// APPEND of a literal8 holding NUL octets.
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
	fmt.Fprintf(rc.c, "%s FETCH 2 (BINARY.PEEK[] BINARY.SIZE[1])\r\n", tag)
	lits, lines = rc.literalItems(tag)
	if len(lits) != 1 || string(lits[0]) != msg || !strings.Contains(strings.Join(lines, " "), "BINARY.SIZE[1] 5") {
		t.Errorf("FETCH of the literal8 message = %q (%q), want it as appended", lits, lines)
	}
}
