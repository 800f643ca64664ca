package imapserver_test

// mailhost patch: what the parsers of WITHIN (RFC 5032), OBJECTID (RFC
// 8474), PREVIEW (RFC 8970) and SEARCHRES's SAVE (RFC 5182) hand the
// session, against condstore_test.go's recording session.

import (
	"slices"
	"strings"
	"testing"
)

func TestObjectIDWithinPreviewParse(t *testing.T) {
	cc := newCondClient(t)
	cc.do("SELECT INBOX")

	if _, tagged := cc.do("SEARCH OLDER 10 YOUNGER 5 EMAILID M1 THREADID T_1-x NOT OLDER 20"); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("SEARCH: %s", tagged)
	}
	c := cc.sess.search
	if c.Older != 10 || c.Younger != 5 || !slices.Equal(c.EmailID, []string{"M1"}) || !slices.Equal(c.ThreadID, []string{"T_1-x"}) ||
		len(c.Not) != 1 || c.Not[0].Older != 20 {
		t.Errorf("SEARCH criteria = %+v", c)
	}
	for _, bad := range []string{"SEARCH OLDER 0", "SEARCH YOUNGER -1", "SEARCH EMAILID M.1", "SEARCH THREADID", "SEARCH EMAILID " + strings.Repeat("a", 256)} {
		if _, tagged := cc.do(bad); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s: %s, want BAD", bad, tagged)
		}
	}

	cc.do("FETCH 1 PREVIEW (CHANGEDSINCE 5)")
	if o := cc.sess.fetch; o.Preview == nil || o.Preview.Lazy || o.ChangedSince != 5 {
		t.Errorf("FETCH 1 PREVIEW (CHANGEDSINCE 5): options %+v", o)
	}
	cc.do("FETCH 1 (EMAILID PREVIEW (lazy) THREADID)")
	if o := cc.sess.fetch; o.Preview == nil || !o.Preview.Lazy || !o.EmailID || !o.ThreadID {
		t.Errorf("FETCH (EMAILID PREVIEW (LAZY) THREADID): options %+v", o)
	}
	cc.do("FETCH 1 PREVIEW")
	if o := cc.sess.fetch; o.Preview == nil || o.Preview.Lazy {
		t.Errorf("FETCH 1 PREVIEW: options %+v", o)
	}
	if _, tagged := cc.do("FETCH 1 (PREVIEW (LAZY FAST))"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("PREVIEW (LAZY FAST): %s, want BAD", tagged)
	}

	// SAVE alone: no ESEARCH; with another option: ESEARCH.
	if untagged, tagged := cc.do("SEARCH RETURN (SAVE) ALL"); len(untagged) != 0 || !strings.HasPrefix(tagged, "OK") {
		t.Errorf("SEARCH RETURN (SAVE): %q %s, want no untagged response", untagged, tagged)
	}
	if untagged, _ := cc.do("SEARCH RETURN (SAVE COUNT) ALL"); len(untagged) != 1 || !strings.HasPrefix(untagged[0], "* ESEARCH") {
		t.Errorf("SEARCH RETURN (SAVE COUNT): %q, want ESEARCH", untagged)
	}
}
