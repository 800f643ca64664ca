package imapd

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// randomMsgs is n messages with few distinct subjects, senders and
// dates, so that every key has ties, some fields missing or malformed.
func randomMsgs(r *rand.Rand, n int) []sortMsg {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	subjects := []string{"a", "Re: a", "[x] b", "Fwd: B", "=?utf-8?q?caf=C3=A9?=", "Café", "", "z (fwd)", "_"}
	addrs := []string{"Bob <bob@x.org>", "alice@y.org", "=?utf-8?q?=C3=89mile?= <e@z.org>", "\"Zed\" <bob@x.org>", "undisclosed:;", ""}
	var msgs []sortMsg
	for i := range n {
		var f []string
		if s := subjects[r.IntN(len(subjects))]; s != "" {
			f = append(f, "Subject: "+s)
		}
		for _, h := range []string{"From", "To", "Cc"} {
			if a := addrs[r.IntN(len(addrs))]; a != "" {
				f = append(f, h+": "+a)
			}
		}
		switch r.IntN(4) {
		case 0:
		case 1:
			f = append(f, "Date: garbage")
		default:
			f = append(f, "Date: "+base.Add(time.Duration(r.IntN(5))*time.Hour).In(time.FixedZone("", 3600*(r.IntN(5)-2))).Format(time.RFC1123Z))
		}
		msgs = append(msgs, mboxMsg(uint32(i+1), base.Add(time.Duration(r.IntN(4))*time.Hour), int64(r.IntN(3)), f...))
	}
	return msgs
}

// keptFolder is a folderKeys holding msgs' keys of every group, and msgs
// pointing into it.
func keptFolder(msgs []sortMsg) (*folderKeys, []sortMsg) {
	f := &folderKeys{}
	keys := make([]msgKeys, len(msgs))
	uids := make([]uint32, len(msgs))
	for i, m := range msgs {
		decodeKeys(&keys[i], m.Header, m.Arrival, ^keyGroup(0))
		uids[i] = m.UID
	}
	f.insert(uids, keys)
	out := slices.Clone(msgs)
	for i := range out {
		out[i].pos, out[i].K, out[i].Header = int32(i), &f.keys[i], nil
	}
	return f, out
}

// TestOrderByRanks: sorting by a folder's ranks (a counting sort for one
// key, rank comparisons for several) answers what comparing the keys
// answers, for every key, REVERSE or not, for the whole folder and for
// a part of it.
func TestOrderByRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	msgs := randomMsgs(r, 300)
	f, kept := keptFolder(msgs)
	programs := []string{"ARRIVAL", "SIZE"}
	for k := range sortKeys {
		programs = append(programs, k, "REVERSE "+k)
	}
	programs = append(programs, "SUBJECT REVERSE DATE", "FROM SIZE", "REVERSE DISPLAYTO ARRIVAL CC", "DATE SUBJECT", "SIZE REVERSE SUBJECT FROM")
	part := func(ms []sortMsg) []sortMsg {
		var out []sortMsg
		for i, m := range ms {
			if i%3 != 1 {
				out = append(out, m)
			}
		}
		return out
	}
	for _, p := range programs {
		c, err := parseSortCriteria(strings.Fields(p))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name     string
			ref, got []sortMsg
		}{{"all", msgs, kept}, {"part", part(msgs), part(kept)}} {
			want := seqs(sortMessages(tc.ref, c))
			var sorted []sortMsg
			for _, j := range orderMsgs(tc.got, c, f.rank) {
				sorted = append(sorted, tc.got[j])
			}
			if got := seqs(sorted); got != want {
				t.Errorf("%s: SORT (%s) by ranks = %s\nwant %s", tc.name, p, got, want)
			}
		}
	}
}

func TestFolderKeysInsertFind(t *testing.T) {
	f := &folderKeys{}
	key := func(u uint32) msgKeys { return msgKeys{have: groupSubject, subject: fmt.Sprint(u)} }
	add := func(uids ...uint32) {
		var keys []msgKeys
		for _, u := range uids {
			keys = append(keys, key(u))
		}
		f.insert(uids, keys)
	}
	add(2, 4, 6)
	f.rank(sortSubject)
	add(8, 9)  // at the end
	add(1, 5)  // below it
	add(3, 10) // both
	if want := []uint32{1, 2, 3, 4, 5, 6, 8, 9, 10}; !slices.Equal(f.uids, want) {
		t.Fatalf("uids = %v, want %v", f.uids, want)
	}
	if f.ranks[sortSubject] != nil {
		t.Errorf("ranks kept after an insert")
	}
	for i, u := range f.uids {
		if f.keys[i].subject != fmt.Sprint(u) {
			t.Errorf("keys[%d] = %q, want %d's", i, f.keys[i].subject, u)
		}
	}
	at := 0
	for _, tc := range []struct {
		uid uint32
		pos int
		ok  bool
	}{{1, 0, true}, {3, 2, true}, {7, 6, false}, {9, 7, true}, {10, 8, true}, {11, 9, false}} {
		p, ok := f.find(tc.uid, at)
		if p != tc.pos || ok != tc.ok {
			t.Errorf("find(%d, %d) = %d, %v; want %d, %v", tc.uid, at, p, ok, tc.pos, tc.ok)
		}
		at = p
	}
	f.keepOnly([]uint32{2, 3, 7, 9})
	if want := []uint32{2, 3, 9}; !slices.Equal(f.uids, want) || len(f.keys) != 3 || f.keys[2].subject != "9" {
		t.Errorf("keepOnly: uids %v, keys %v; want %v", f.uids, f.keys, want)
	}
}

// TestSortKeyCacheBound: past its bound the cache drops the least
// recently used folders, and a folder alone over it.
func TestSortKeyCacheBound(t *testing.T) {
	c := newSortKeyCache(10)
	a := c.folder(1)
	c.account(a, 4)
	b := c.folder(2)
	c.account(b, 4)
	c.folder(1) // a is now the more recently used
	d := c.folder(3)
	c.account(d, 4)
	if _, ok := c.folders[2]; ok || !b.dropped {
		t.Errorf("folder 2, the least recently used, kept")
	}
	if c.total != 8 || c.folders[1] != a || c.folders[3] != d {
		t.Errorf("total %d, folders %v; want 8, folders 1 and 3", c.total, c.folders)
	}
	c.account(d, 11)
	if len(c.folders) != 0 || c.total != 0 {
		t.Errorf("a folder over the bound alone: folders %v, total %d; want none", c.folders, c.total)
	}
	c.account(b, 5) // a dropped folder counts no more
	if c.total != 0 {
		t.Errorf("total %d after accounting a dropped folder", c.total)
	}
}

// TestSortKeysFollowTheFolder: the keys a server keeps follow new mail,
// expunges and searches that decoded only part of the folder, seen from
// two sessions.
func TestSortKeysFollowTheFolder(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	at := time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)
	msg := func(i int, subject, from string) {
		e.deliver(crlf(fmt.Sprintf("From: %s\nSubject: %s\nDate: Mon, %d Jan 2024 10:00:00 +0000\nMessage-ID: <m%d@x>\n\nbody\n", from, subject, 10-i, i)), at.Add(time.Duration(i)*time.Minute))
	}
	msg(1, "delta", "d@x.org")
	msg(2, "bravo", "b@x.org")
	msg(3, "echo", "e@x.org")
	rc := rawLogin(t, e)
	rc.ok("SELECT INBOX")
	other := rawLogin(t, e)
	other.ok("SELECT INBOX")
	for _, tc := range []struct{ cmd, want string }{
		{"SORT (SUBJECT) UTF-8 FROM b@x.org", "* SORT 2"},
		{"SORT (SUBJECT) UTF-8 ALL", "* SORT 2 1 3"},
		{"SORT (REVERSE SUBJECT) UTF-8 ALL", "* SORT 3 1 2"},
		{"SORT (FROM) UTF-8 ALL", "* SORT 2 1 3"},
		{"SORT (DATE) UTF-8 ALL", "* SORT 3 2 1"},
	} {
		wantLines(t, tc.cmd, rc.ok("%s", tc.cmd), tc.want)
	}
	msg(4, "alpha", "a@x.org")
	msg(5, "charlie", "c@x.org")
	rc.ok("NOOP")
	other.ok("NOOP")
	for _, c := range []*rawConn{rc, other} {
		wantLines(t, "SEARCH after new mail", c.ok("SEARCH OR FROM a@x OR SUBJECT ECHO FROM b@X.org"), "* SEARCH 2 3 4")
		wantLines(t, "SORT after new mail", c.ok("SORT (SUBJECT) UTF-8 ALL"), "* SORT 4 2 5 1 3")
		wantLines(t, "SORT FROM after new mail", c.ok("SORT (FROM) UTF-8 ALL"), "* SORT 4 2 5 1 3")
	}
	// Kept THREAD answers are renumbered: UIDs 1, 3 and 5 are messages
	// 1, 3 and 5 now, 1, 2 and 3 after the EXPUNGE below.
	wantLines(t, "THREAD of UIDs 1,3,5", rc.ok("THREAD ORDEREDSUBJECT UTF-8 UID 1,3,5"), "* THREAD (5)(3)(1)")
	wantLines(t, "UID THREAD of UIDs 1,3,5", rc.ok("UID THREAD ORDEREDSUBJECT UTF-8 UID 1,3,5"), "* THREAD (5)(3)(1)")
	wantLines(t, "THREAD after new mail", rc.ok("THREAD REFERENCES UTF-8 ALL"), "* THREAD (5)(4)(3)(2)(1)")
	rc.ok(`STORE 2,4 +FLAGS.SILENT (\Deleted)`)
	rc.ok("EXPUNGE")
	other.ok("NOOP")
	for _, c := range []*rawConn{rc, other} {
		wantLines(t, "SORT after EXPUNGE", c.ok("SORT (SUBJECT) UTF-8 ALL"), "* SORT 3 1 2")
		wantLines(t, "SEARCH after EXPUNGE", c.ok("SEARCH OR FROM a@x OR SUBJECT ECHO FROM b@X.org"), "* SEARCH 2")
		wantLines(t, "THREAD after EXPUNGE", c.ok("THREAD ORDEREDSUBJECT UTF-8 ALL"), "* THREAD (3)(2)(1)")
		wantLines(t, "THREAD of UIDs 1,3,5 after EXPUNGE", c.ok("THREAD ORDEREDSUBJECT UTF-8 UID 1,3,5"), "* THREAD (3)(2)(1)")
		wantLines(t, "THREAD REFERENCES after EXPUNGE", c.ok("THREAD REFERENCES UTF-8 ALL"), "* THREAD (3)(2)(1)")
	}
}

// TestSearchKept: HEADER criteria on the kept texts match what they
// match on the summary, for headers plain and not.
func TestSearchKept(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	msgs := randomMsgs(r, 200)
	msgs = append(msgs,
		mboxMsg(1000, time.Time{}, 1, "From: a@b.c", "From: Second <second@x.org>", "Subject: two froms"),
		mboxMsg(1001, time.Time{}, 1, "Subject: =?unknown?q?caf=E9?=", "To: =?utf-8?b?w4lsb2RpZQ==?= <elodie@x.org>, g: x@y.z;"),
		mboxMsg(1002, time.Time{}, 1, "Cc:", "Subject:"),
		mboxMsg(1003, time.Time{}, 1, "From: Bob\r\n <bob@x.org>", "Cc: a@b.c,\r\n\tZed <z@x.org>", "Subject: two\r\n  lines"),
	)
	// Plain headers take fastSearchHays' way, the others go-message's.
	for _, m := range msgs[len(msgs)-2:] {
		if _, ok := fastSearchHays(m.Header, groupHays); !ok {
			t.Errorf("fastSearchHays(%q) not ok", m.Header)
		}
	}
	values := []string{"", "bob", "BOB@X", "x.org", "café", "CAFÉ", "émile", "re:", "undisclosed", "zed", "<bob@x.org>", "second", "élodie", "g:", "two", "caf", "two lines", "bob <bob", "zed <z@"}
	for _, m := range msgs {
		var k msgKeys
		decodeKeys(&k, m.Header, m.Arrival, groupHays)
		for _, key := range []string{"From", "TO", "cc", "Subject"} {
			for _, v := range values {
				cr := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: key, Value: v}}}
				want := (&candidate{body: m.Header}).match(cr)
				if got := (&candidate{kept: &k}).match(cr); got != want {
					t.Errorf("HEADER %s %q on kept texts of %q = %v, want %v", key, v, m.Header, got, want)
				}
			}
		}
	}
}

// TestSortKeysConcurrent: sessions sorting, threading and searching one
// folder at once while mail comes (run with -race in CI) each get the
// whole folder, in order.
func TestSortKeysConcurrent(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	at := time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)
	msg := func(i int) string {
		return crlf(fmt.Sprintf("From: u%d@x.org\nSubject: s%03d\nMessage-ID: <m%d@x>\n\nbody\n", i%7, i, i))
	}
	for i := range 50 {
		e.deliver(msg(i), at.Add(time.Duration(i)*time.Second))
	}
	conns := make([]*rawConn, 3)
	for i := range conns {
		conns[i] = rawLogin(t, e)
		conns[i].ok("SELECT INBOX")
	}
	done := make(chan string, len(conns))
	for i, rc := range conns {
		go func() {
			for range 20 {
				for _, cmd := range []string{"SORT (SUBJECT) UTF-8 ALL", "THREAD REFERENCES UTF-8 ALL", "SEARCH FROM u3@x.org", "NOOP"} {
					if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "OK") {
						done <- fmt.Sprintf("session %d: %s: %s", i, cmd, tagged)
						return
					}
				}
			}
			done <- ""
		}()
	}
	for i := range 20 {
		e.deliver(msg(50+i), at.Add(time.Duration(50+i)*time.Second))
	}
	for range conns {
		if err := <-done; err != "" {
			t.Error(err)
		}
	}
	var want []string
	for i := range 70 {
		want = append(want, fmt.Sprint(i+1))
	}
	for i, rc := range conns {
		rc.ok("NOOP")
		wantLines(t, fmt.Sprintf("session %d: SORT", i), rc.ok("SORT (SUBJECT) UTF-8 ALL"), "* SORT "+strings.Join(want, " "))
	}
}
