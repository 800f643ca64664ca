package imapserver_test

// mailhost patch: SORT, THREAD and ESORT (RFC 5256, RFC 5957, RFC 5267)
// parsed and written by imapserver, against a session that records what
// it was given.

import (
	"bufio"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

type sortSession struct {
	condSession

	kind      imapserver.NumKind
	sort      []imapserver.SortCriterion
	algorithm imap.ThreadAlgorithm
	criteria  *imap.SearchCriteria
}

func (s *sortSession) Sort(kind imapserver.NumKind, sc []imapserver.SortCriterion, c *imap.SearchCriteria) (*imapserver.SortData, error) {
	s.kind, s.sort, s.criteria = kind, sc, c
	data := &imapserver.SortData{Nums: []uint32{5, 2, 3, 4, 9}}
	if c.ModSeq != nil {
		data.ModSeq = 30
	}
	return data, nil
}

func (s *sortSession) Thread(kind imapserver.NumKind, alg imap.ThreadAlgorithm, c *imap.SearchCriteria) ([]*imapserver.ThreadNode, error) {
	s.kind, s.algorithm, s.criteria = kind, alg, c
	n := func(num uint32, children ...*imapserver.ThreadNode) *imapserver.ThreadNode {
		return &imapserver.ThreadNode{Num: num, Children: children}
	}
	// RFC 5256 section 4's example, and a missing parent of two.
	return []*imapserver.ThreadNode{
		n(2), n(3, n(6, n(4, n(23)), n(44, n(7, n(96))))),
		n(0, n(8), n(9)),
	}, nil
}

func newSortClient(t *testing.T) (*condClient, *sortSession) {
	sess := &sortSession{}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			sess.conn = c
			return sess, nil, nil
		},
		Caps: imap.CapSet{
			imap.CapIMAP4rev1: {}, imap.CapCondStore: {}, imap.CapSort: {}, imap.CapSortDisplay: {}, imap.CapESort: {},
			"THREAD=ORDEREDSUBJECT": {}, "THREAD=REFERENCES": {},
		},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc := &condClient{t: t, c: c, r: bufio.NewReader(c), sess: &sess.condSession}
	cc.line()
	cc.do("LOGIN u p")
	return cc, sess
}

func TestSortThread(t *testing.T) {
	cc, sess := newSortClient(t)
	caps, _ := cc.do("CAPABILITY")
	if len(caps) != 1 || !strings.HasSuffix(caps[0], " CONDSTORE SORT SORT=DISPLAY ESORT THREAD=ORDEREDSUBJECT THREAD=REFERENCES") {
		t.Errorf("CAPABILITY = %q", caps)
	}
	if _, tagged := cc.do("SORT (SUBJECT) UTF-8 ALL"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("SORT before SELECT: %s, want BAD", tagged)
	}
	cc.do("SELECT INBOX")

	untagged, tagged := cc.do(`UID SORT (REVERSE date displayFrom) utf-8 FROM "x" UNSEEN`)
	wantLine(t, "UID SORT", untagged, "* SORT 5 2 3 4 9")
	wantSort := []imapserver.SortCriterion{{Key: imapserver.SortKeyDate, Reverse: true}, {Key: imapserver.SortKeyDisplayFrom}}
	if !strings.HasPrefix(tagged, "OK") || sess.kind != imapserver.NumKindUID || !reflect.DeepEqual(sess.sort, wantSort) {
		t.Errorf("UID SORT: %s, kind %v, criteria %+v", tagged, sess.kind, sess.sort)
	}
	if c := sess.criteria; len(c.Header) != 1 || c.Header[0].Key != "From" || len(c.NotFlag) != 1 {
		t.Errorf("UID SORT search criteria = %+v", c)
	}

	untagged, _ = cc.do(`SORT RETURN (MIN MAX COUNT ALL) (SIZE) US-ASCII ALL`)
	wantLine(t, "ESORT", untagged, `* ESEARCH (TAG "c6") ALL 5,2:4,9 MIN 5 MAX 9 COUNT 5`)
	untagged, _ = cc.do(`SORT RETURN () (SIZE) US-ASCII ALL`)
	wantLine(t, "ESORT ()", untagged, `* ESEARCH (TAG "c7") ALL 5,2:4,9`)

	untagged, _ = cc.do(`SORT (SIZE) UTF-8 MODSEQ 20`)
	wantLine(t, "SORT MODSEQ", untagged, "* SORT 5 2 3 4 9 (MODSEQ 30)")
	if !sess.conn.EnabledCaps().Has(imap.CapCondStore) {
		t.Error("SORT with MODSEQ did not enable CONDSTORE")
	}
	untagged, _ = cc.do(`SORT RETURN (COUNT) (SIZE) UTF-8 MODSEQ 20`)
	wantLine(t, "ESORT MODSEQ", untagged, `* ESEARCH (TAG "c9") COUNT 5 MODSEQ 30`)

	for _, cmd := range []string{
		"SORT (SUBJECT FOO) UTF-8 ALL", // unknown key
		"SORT (REVERSE) UTF-8 ALL",     // REVERSE without a key
		"SORT () UTF-8 ALL",            // no key
		"SORT (SUBJECT) ALL",           // no charset
		"SORT RETURN (SAVE) (SUBJECT) UTF-8 ALL",
		"THREAD FOO UTF-8 ALL",
	} {
		if _, tagged := cc.do(cmd); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s: %s, want BAD", cmd, tagged)
		}
	}
	if _, tagged := cc.do("SORT (SUBJECT) KOI8-R ALL"); !strings.HasPrefix(tagged, "NO [BADCHARSET]") {
		t.Errorf("SORT KOI8-R: %s, want NO [BADCHARSET]", tagged)
	}

	untagged, _ = cc.do("THREAD references UTF-8 SINCE 1-Feb-1994")
	wantLine(t, "THREAD", untagged, "* THREAD (2)(3 6 (4 23)(44 7 96))((8)(9))")
	if sess.algorithm != imap.ThreadReferences || sess.kind != imapserver.NumKindSeq || sess.criteria.Since.IsZero() {
		t.Errorf("THREAD: algorithm %q, kind %v, criteria %+v", sess.algorithm, sess.kind, sess.criteria)
	}
	cc.do("UID THREAD ORDEREDSUBJECT UTF-8 ALL")
	if sess.algorithm != imap.ThreadOrderedSubject || sess.kind != imapserver.NumKindUID {
		t.Errorf("UID THREAD: algorithm %q, kind %v", sess.algorithm, sess.kind)
	}
}
