package imapd

import (
	"slices"
	"strings"
	"testing"
)

// TestSearchSaveOnly: SEARCH RETURN (SAVE) alone saves the result and
// answers no ESEARCH (RFC 5182 section 2.1); with another option it
// answers that option.
func TestSearchSaveOnly(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	rc := dialRaw(t, e.addr)
	for _, c := range []string{`LOGIN "alice@example.com" "alice's secret"`, "SELECT INBOX"} {
		if _, tagged := rc.cmd("%s", c); !strings.HasPrefix(tagged, "OK") {
			t.Fatalf("%s = %q", c, tagged)
		}
	}
	untagged, tagged := rc.cmd("SEARCH RETURN (SAVE) FROM carol")
	if !strings.HasPrefix(tagged, "OK") || len(untagged) != 0 {
		t.Errorf("SEARCH RETURN (SAVE) = %q, %q; want OK and no untagged response", untagged, tagged)
	}
	untagged, _ = rc.cmd("FETCH $ (UID)")
	if !slices.Equal(untagged, []string{"* 2 FETCH (UID 2)"}) {
		t.Errorf("FETCH $ = %q, want the saved message 2", untagged)
	}
	untagged, _ = rc.cmd("SEARCH RETURN (SAVE COUNT) ALL")
	if len(untagged) != 1 || !strings.HasSuffix(untagged[0], "COUNT 2") {
		t.Errorf("SEARCH RETURN (SAVE COUNT) = %q, want an ESEARCH with COUNT 2", untagged)
	}
}
