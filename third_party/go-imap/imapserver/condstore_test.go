package imapserver_test

// mailhost patch: CONDSTORE and QRESYNC (RFC 7162) parsed and written by
// imapserver, against a session that records what it was given.

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// condSession answers a mailbox of three messages at MODSEQ 10, 20, 30
// and records the options of the last command.
type condSession struct {
	imapserver.Session // nil: the commands the test does not send

	conn     *imapserver.Conn
	selected *imap.SelectOptions
	resync   *imap.SelectQResync
	fetch    *imap.FetchOptions
	store    *imap.StoreOptions
	search   *imap.SearchCriteria
}

func (s *condSession) Close() error                  { return nil }
func (s *condSession) Login(user, pass string) error { return nil }
func (s *condSession) Unselect() error               { return nil }
func (s *condSession) Poll(w *imapserver.UpdateWriter, allowExpunge bool) error {
	return nil
}

func (s *condSession) Select(name string, o *imap.SelectOptions) (*imap.SelectData, error) {
	s.selected = o
	return &imap.SelectData{NumMessages: 3, UIDNext: 4, UIDValidity: 7, HighestModSeq: 30}, nil
}

func (s *condSession) ResyncMailbox(w *imapserver.FetchWriter, q *imap.SelectQResync) error {
	s.resync = q
	if err := w.WriteVanished(imap.UIDSetNum(5, 6), true); err != nil {
		return err
	}
	rw := w.CreateMessage(3)
	rw.WriteUID(3)
	rw.WriteModSeq(30)
	return rw.Close()
}

func (s *condSession) Status(name string, o *imap.StatusOptions) (*imap.StatusData, error) {
	return &imap.StatusData{Mailbox: name, HighestModSeq: 30}, nil
}

func (s *condSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, o *imap.FetchOptions) error {
	s.fetch = o
	if o.Vanished {
		if err := w.WriteVanished(imap.UIDSetNum(5), true); err != nil {
			return err
		}
	}
	rw := w.CreateMessage(1)
	rw.WriteUID(1)
	if o.ModSeq {
		rw.WriteModSeq(10)
	}
	return rw.Close()
}

func (s *condSession) Store(w *imapserver.FetchWriter, numSet imap.NumSet, f *imap.StoreFlags, o *imap.StoreOptions) error {
	s.store = o
	if o.HasUnchangedSince {
		w.WriteModified(numSet)
	}
	return nil
}

func (s *condSession) Search(kind imapserver.NumKind, c *imap.SearchCriteria, o *imap.SearchOptions) (*imap.SearchData, error) {
	s.search = c
	return &imap.SearchData{All: imap.SeqSetNum(2, 3), Count: 2, ModSeq: 30}, nil
}

func (s *condSession) Expunge(w *imapserver.ExpungeWriter, uids *imap.UIDSet) error {
	return w.WriteVanished(imap.UIDSetNum(2))
}

// condClient is a line-by-line client of a server with condSession.
type condClient struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	sess *condSession
	n    int
}

func newCondClient(t *testing.T) *condClient {
	sess := &condSession{}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			sess.conn = c
			return sess, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapESearch: {}, imap.CapCondStore: {}, imap.CapQResync: {}},
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
	cc := &condClient{t: t, c: c, r: bufio.NewReader(c), sess: sess}
	cc.line()
	cc.do("LOGIN u p")
	return cc
}

func (cc *condClient) line() string {
	cc.t.Helper()
	cc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := cc.r.ReadString('\n')
	if err != nil {
		cc.t.Fatalf("read: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// do sends a command and answers the untagged lines and the tagged one
// without its tag.
func (cc *condClient) do(cmd string) ([]string, string) {
	cc.t.Helper()
	cc.n++
	tag := fmt.Sprintf("c%d", cc.n)
	fmt.Fprintf(cc.c, "%s %s\r\n", tag, cmd)
	var untagged []string
	for {
		l := cc.line()
		if rest, ok := strings.CutPrefix(l, tag+" "); ok {
			return untagged, rest
		}
		untagged = append(untagged, l)
	}
}

func wantLine(t *testing.T, cmd string, lines []string, want string) {
	t.Helper()
	for _, l := range lines {
		if l == want {
			return
		}
	}
	t.Errorf("%s: no %q in %q", cmd, want, lines)
}

func TestCondStore(t *testing.T) {
	cc := newCondClient(t)
	caps, _ := cc.do("CAPABILITY")
	if len(caps) != 1 || !strings.Contains(caps[0], " CONDSTORE QRESYNC") {
		t.Errorf("CAPABILITY = %q", caps)
	}

	untagged, tagged := cc.do("SELECT INBOX (CONDSTORE)")
	wantLine(t, "SELECT (CONDSTORE)", untagged, "* OK [HIGHESTMODSEQ 30] Highest")
	if !strings.HasPrefix(tagged, "OK") || cc.sess.selected == nil || !cc.sess.selected.CondStore {
		t.Errorf("SELECT (CONDSTORE): %s, options %+v", tagged, cc.sess.selected)
	}
	if !cc.sess.conn.EnabledCaps().Has(imap.CapCondStore) {
		t.Error("SELECT (CONDSTORE) did not enable CONDSTORE")
	}

	untagged, _ = cc.do("FETCH 1:* (UID MODSEQ) (CHANGEDSINCE 15)")
	wantLine(t, "FETCH CHANGEDSINCE", untagged, "* 1 FETCH (UID 1 MODSEQ (10))")
	if o := cc.sess.fetch; o == nil || !o.ModSeq || o.ChangedSince != 15 || o.Vanished {
		t.Errorf("FETCH options = %+v", o)
	}
	if _, tagged := cc.do("UID FETCH 1:* (FLAGS) (CHANGEDSINCE 15 VANISHED)"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("VANISHED before ENABLE QRESYNC: %s, want BAD", tagged)
	}

	_, tagged = cc.do(`STORE 1:2 (UNCHANGEDSINCE 0) +FLAGS (\Seen)`)
	if tagged != "OK [MODIFIED 1:2] Conditional STORE failed" {
		t.Errorf("STORE UNCHANGEDSINCE: %s", tagged)
	}
	if o := cc.sess.store; o == nil || !o.HasUnchangedSince || o.UnchangedSince != 0 {
		t.Errorf("STORE options = %+v", o)
	}

	untagged, _ = cc.do(`SEARCH MODSEQ "/flags/\\draft" all 20`)
	wantLine(t, "SEARCH MODSEQ", untagged, "* SEARCH 2 3 (MODSEQ 30)")
	if c := cc.sess.search; c == nil || c.ModSeq == nil || c.ModSeq.ModSeq != 20 || c.ModSeq.MetadataName != `/flags/\draft` || c.ModSeq.MetadataType != imap.SearchCriteriaMetadataAll {
		t.Errorf("SEARCH criteria = %+v", c)
	}
	untagged, _ = cc.do("SEARCH RETURN (COUNT) MODSEQ 20")
	wantLine(t, "ESEARCH MODSEQ", untagged, `* ESEARCH (TAG "c8") COUNT 2 MODSEQ 30`)

	untagged, _ = cc.do("STATUS INBOX (HIGHESTMODSEQ)")
	wantLine(t, "STATUS", untagged, "* STATUS INBOX (HIGHESTMODSEQ 30)")
}

func TestQResync(t *testing.T) {
	cc := newCondClient(t)
	if _, tagged := cc.do("SELECT INBOX (QRESYNC (7 20))"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("SELECT (QRESYNC) before ENABLE: %s, want BAD", tagged)
	}
	untagged, _ := cc.do("ENABLE QRESYNC")
	wantLine(t, "ENABLE", untagged, "* ENABLED QRESYNC")
	if !cc.sess.conn.EnabledCaps().Has(imap.CapCondStore) {
		t.Error("ENABLE QRESYNC did not enable CONDSTORE")
	}

	untagged, tagged := cc.do("SELECT INBOX (QRESYNC (7 20 1:6 (1:3 1,3,4)))")
	if !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("SELECT (QRESYNC): %s", tagged)
	}
	if n := len(untagged); n < 2 || untagged[n-2] != "* VANISHED (EARLIER) 5:6" || untagged[n-1] != "* 3 FETCH (UID 3 MODSEQ (30))" {
		t.Errorf("SELECT (QRESYNC) = %q, want VANISHED (EARLIER) and FETCH last", untagged)
	}
	q := cc.sess.resync
	if q == nil || q.UIDValidity != 7 || q.ModSeq != 20 || q.KnownUIDs.String() != "1:6" ||
		q.SeqMatch == nil || q.SeqMatch.SeqNums.String() != "1:3" || q.SeqMatch.UIDs.String() != "1,3:4" {
		t.Errorf("QRESYNC parameter = %+v", q)
	}

	// Another UIDVALIDITY: no resync.
	cc.sess.resync = nil
	untagged, _ = cc.do("EXAMINE INBOX (QRESYNC (8 20))")
	if cc.sess.resync != nil {
		t.Errorf("EXAMINE (QRESYNC) with another UIDVALIDITY resynced: %q", untagged)
	}

	untagged, _ = cc.do("UID FETCH 1:* (FLAGS) (CHANGEDSINCE 15 VANISHED)")
	wantLine(t, "UID FETCH VANISHED", untagged, "* VANISHED (EARLIER) 5")
	if o := cc.sess.fetch; o == nil || !o.Vanished || o.ChangedSince != 15 {
		t.Errorf("FETCH options = %+v", o)
	}
	for _, cmd := range []string{"FETCH 1:* (FLAGS) (CHANGEDSINCE 15 VANISHED)", "UID FETCH 1:* (FLAGS) (VANISHED)"} {
		if _, tagged := cc.do(cmd); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s: %s, want BAD", cmd, tagged)
		}
	}

	untagged, _ = cc.do("EXPUNGE")
	wantLine(t, "EXPUNGE", untagged, "* VANISHED 2")
}
