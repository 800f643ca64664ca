package imapd

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestMultiAppend: several messages in one APPEND are stored together
// under consecutive UIDs with APPENDUID's set (RFC 3502, RFC 4315), and a
// refused one (APPENDLIMIT, quota) leaves none of them stored, with no
// more literals asked for (RFC 3502 section 6.3.11).
func TestMultiAppend(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	if u, _ := rc.cmd("CAPABILITY"); !strings.Contains(strings.Join(u, " "), " MULTIAPPEND") {
		t.Errorf("CAPABILITY = %q, want MULTIAPPEND", u)
	}
	m1, m2, m3 := crlf("Subject: one\n\n1\n"), crlf("Subject: two\n\n2\n"), crlf("Subject: three\n\n3\n")

	// Synchronizing literals: a continuation request for each.
	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s APPEND Drafts (\\Seen) {%d}\r\n", tag, len(m1))
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("first literal: %q, want +", l)
	}
	fmt.Fprintf(rc.c, "%s (\\Flagged $Work) \"01-Feb-2026 10:00:00 +0000\" {%d}\r\n", m1, len(m2))
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("second literal: %q, want +", l)
	}
	fmt.Fprintf(rc.c, "%s {%d+}\r\n%s\r\n", m2, len(m3), m3) // a LITERAL+ one last
	lines := rc.until(tag)
	if !regexp.MustCompile(`^r\d+ OK \[APPENDUID \d+ 1:3\] `).MatchString(lines[len(lines)-1]) {
		t.Fatalf("MULTIAPPEND = %q, want OK [APPENDUID v 1:3]", lines)
	}
	mustOK(t, rc, "EXAMINE Drafts")
	u := mustOK(t, rc, "FETCH 1:3 (FLAGS INTERNALDATE BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
	got := strings.Join(u, "\n")
	for _, want := range []string{`* 1 FETCH (UID 1 FLAGS (\Seen \Recent)`, `* 2 FETCH (UID 2 FLAGS (\Flagged $Work \Recent) INTERNALDATE " 1-Feb-2026 10:00:00 +0000"`, "Subject: one", "Subject: two", "Subject: three"} {
		if !strings.Contains(got, want) {
			t.Errorf("FETCH after MULTIAPPEND = %s\nwant it to hold %s", got, want)
		}
	}

	// The second message is over APPENDLIMIT: NO [TOOBIG] instead of a
	// continuation request, and the first is not stored either.
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s APPEND Drafts {%d}\r\n", tag, len(m1))
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("first literal: %q, want +", l)
	}
	fmt.Fprintf(rc.c, "%s {%d}\r\n", m1, e.srv.cfg.MaxMessageBytes+1)
	if l := rc.line(); !strings.HasPrefix(l, tag+" NO [TOOBIG]") {
		t.Errorf("MULTIAPPEND over APPENDLIMIT = %q, want NO [TOOBIG]", l)
	}
	if u := mustOK(t, rc, "STATUS Drafts (MESSAGES)"); !has(u, `* STATUS "Drafts" (MESSAGES 3)`) {
		t.Errorf("after a refused MULTIAPPEND: %q, want 3 messages still", u)
	}

	// Over quota only with both: NO [OVERQUOTA], nothing stored; the
	// non-synchronizing literals are read to the end and the connection
	// goes on.
	if _, err := e.st.SetQuota(context.Background(), e.partnerID, e.mb.Email, 1); err != nil {
		t.Fatal(err)
	}
	half := crlf("Subject: half\n\n") + strings.Repeat("x", 600<<10)
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND Drafts {%d+}\r\n%s {%d+}\r\n%s\r\n", tag, len(half), half, len(half), half), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" NO [OVERQUOTA]") {
		t.Errorf("MULTIAPPEND over quota = %q, want NO [OVERQUOTA]", lines)
	}
	if u := mustOK(t, rc, "STATUS Drafts (MESSAGES)"); !has(u, `* STATUS "Drafts" (MESSAGES 3)`) {
		t.Errorf("after MULTIAPPEND over quota: %q, want 3 messages still", u)
	}
	// Each alone fits.
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND Drafts {%d+}\r\n%s\r\n", tag, len(half), half), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" OK [APPENDUID") {
		t.Errorf("APPEND within quota = %q", lines)
	}

	// More messages than one APPEND takes: NO [LIMIT], nothing stored.
	var many strings.Builder
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(&many, "%s APPEND Drafts", tag)
	for range maxAppendMessages + 1 {
		many.WriteString(" {1+}\r\nx")
	}
	many.WriteString("\r\n")
	lines = rc.send(many.String(), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" NO [LIMIT]") {
		t.Errorf("APPEND of %d messages = %q, want NO [LIMIT]", maxAppendMessages+1, l)
	}
	if u := mustOK(t, rc, "STATUS Drafts (MESSAGES)"); !has(u, `* STATUS "Drafts" (MESSAGES 4)`) {
		t.Errorf("after APPEND over the count: %q, want 4 messages still", u)
	}

	// A missing folder: TRYCREATE.
	rc.tag++
	tag = fmt.Sprintf("r%d", rc.tag)
	lines = rc.send(fmt.Sprintf("%s APPEND Nowhere {%d+}\r\n%s {%d+}\r\n%s\r\n", tag, len(m1), m1, len(m2), m2), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" NO [TRYCREATE]") {
		t.Errorf("MULTIAPPEND to a missing folder = %q, want NO [TRYCREATE]", lines)
	}
	mustOK(t, rc, "NOOP")
}
