package imapd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

// TestRefusedCreateChangesNothing: a CREATE answered NO leaves the
// account's folders as they were, the parents it implies included.
func TestRefusedCreateChangesNothing(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	mustOK(t, rc, `CREATE "p/c"`)
	mustOK(t, rc, `DELETE "p"`)
	names := func() []string {
		t.Helper()
		fs, err := e.st.Folders(context.Background(), e.mb.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	before := names()
	for _, tc := range []struct{ name, want string }{
		{`"a/../b"`, "NO [CANNOT]"},
		{`"x/./y"`, "NO [CANNOT]"},
		{`"q/r/.."`, "NO [CANNOT]"},
		{`"m/n/.."`, "NO [CANNOT]"},
		{`"p/c"`, "NO [ALREADYEXISTS]"},
	} {
		if _, tagged := rc.cmd("CREATE %s", tc.name); !strings.HasPrefix(tagged, tc.want) {
			t.Errorf("CREATE %s = %s, want %s", tc.name, tagged, tc.want)
		}
		if got := names(); !slices.Equal(got, before) {
			t.Errorf("after CREATE %s: folders %q, want %q", tc.name, got, before)
		}
	}
	// RENAME is refused whole too (one store transaction).
	for _, tc := range []struct{ args, want string }{
		{`"p/c" "a/../b"`, "NO [CANNOT]"},
		{`"p/c" Sent`, "NO [ALREADYEXISTS]"},
		{`INBOX x`, "NO [CANNOT]"},
	} {
		if _, tagged := rc.cmd("RENAME %s", tc.args); !strings.HasPrefix(tagged, tc.want) {
			t.Errorf("RENAME %s = %s, want %s", tc.args, tagged, tc.want)
		}
		if got := names(); !slices.Equal(got, before) {
			t.Errorf("after RENAME %s: folders %q, want %q", tc.args, got, before)
		}
	}
	// The connection goes on.
	mustOK(t, rc, `CREATE "a/b"`)
}

// TestFramingCommandNameOddEnd: a command whose name imapserver reads
// but the framer's name scanner (imapserver's Options.CommandLimits)
// does not ("E" followed by ")"),
// ending with a literal, is one command: answered BAD, its literal and
// the line after it dropped, and the connection goes on in step.
func TestFramingCommandNameOddEnd(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	for _, send := range []string{
		"t1 E) {1+}\r\nx\r\n",
		"t1 E) {3+}\r\nx y\r\n",
		"t1 NOOP) {2+}\r\nab {1+}\r\nc\r\n",
		"t1 E( {5+}\r\nhello\r\n",
	} {
		rc := rawLogin(t, e)
		answeredThenNoop(t, rc, send, "t1 BAD")
	}
}

// TestFramingOddNameBeforeLogin: the same before login, with the literal
// sent after a pause: the command is answered BAD, and the connection,
// which imapserver ends at an unknown command before login (against
// cross-protocol attacks), ends with a BYE, never without a word.
func TestFramingOddNameBeforeLogin(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	fmt.Fprint(rc.c, "a20 E) {1+}\r\n")
	time.Sleep(50 * time.Millisecond)
	fmt.Fprint(rc.c, "x\r\n")
	var got []string
	for {
		rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, err := rc.r.ReadString('\n')
		if err != nil {
			break
		}
		got = append(got, l)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "a20 BAD ") || !strings.HasPrefix(got[1], "* BYE ") {
		t.Errorf("a20 E) {1+} before login: %q, want a20 BAD then * BYE", got)
	}
}

// TestKeywordLimit: a folder holds at most mailstore.DefaultMaxKeywords
// distinct keywords; a STORE, APPEND, COPY or MOVE that would add one
// beyond is answered NO [LIMIT] and changes nothing, while keywords the
// folder has and system flags still go.
func TestKeywordLimit(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgPlain, t1)
	rc := rawLogin(t, e)
	mustOK(t, rc, "CREATE Full")
	mustOK(t, rc, "SELECT INBOX")
	kws := func(prefix string, from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			if i > from {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s%04d", prefix, i)
		}
		return b.String()
	}
	for i := 0; i < mailstore.DefaultMaxKeywords; i += 250 {
		mustOK(t, rc, fmt.Sprintf("STORE 1 +FLAGS.SILENT (%s)", kws("k", i, i+250)))
	}
	flagsOf := func(seq int) string {
		t.Helper()
		untagged := mustOK(t, rc, fmt.Sprintf("FETCH %d FLAGS", seq))
		return strings.Join(untagged, "\n")
	}
	before := flagsOf(2)
	refused := func(cmd string) {
		t.Helper()
		if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "NO [LIMIT]") {
			t.Errorf("%.40s... = %s, want NO [LIMIT]", cmd, tagged)
		}
	}
	refused("STORE 2 +FLAGS (k0001 new)")
	if got := flagsOf(2); got != before {
		t.Errorf("flags after a refused STORE: %s, want %s", got, before)
	}
	mustOK(t, rc, `STORE 2 +FLAGS (K0001 \Seen)`)
	refused(fmt.Sprintf("STORE 2 +FLAGS (k%s)", strings.Repeat("x", mailstore.MaxKeywordBytes)))

	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	lines := rc.send(fmt.Sprintf("%s APPEND INBOX (new) {3+}\r\nx\r\n\r\n", tag), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" NO [LIMIT]") {
		t.Errorf("APPEND with a new keyword = %q, want NO [LIMIT]", l)
	}
	if untagged := mustOK(t, rc, "NOOP"); slices.ContainsFunc(untagged, func(l string) bool { return strings.Contains(l, "EXISTS") }) {
		t.Errorf("a refused APPEND added a message: %q", untagged)
	}

	// COPY and MOVE into a folder at the limit.
	mustOK(t, rc, "SELECT Full")
	e.deliver(msgPlain, t1)
	f, err := e.st.Folder(context.Background(), e.mb.ID, "Full")
	if err != nil {
		t.Fatal(err)
	}
	all := make([]string, mailstore.DefaultMaxKeywords)
	for i := range all {
		all[i] = fmt.Sprintf("o%04d", i)
	}
	if _, err := e.st.Append(context.Background(), e.mb.ID, f.ID, []byte("x\r\n"), all, t1); err != nil {
		t.Fatal(err)
	}
	mustOK(t, rc, "SELECT INBOX")
	refused("COPY 1 Full")
	refused("MOVE 1 Full")
	mustOK(t, rc, "COPY 3 Full") // no keywords
	if st := mustOK(t, rc, "STATUS Full (MESSAGES)"); !strings.Contains(strings.Join(st, ""), "MESSAGES 2") {
		t.Errorf("Full after refused COPY and MOVE = %q, want 2 messages", st)
	}
}

// TestDeleteOnFullDisk: with the disk full and a store file with no free
// page to reuse (just compacted), a user can still delete: STORE
// \Deleted, EXPUNGE, MOVE to Trash and DELETE are answered OK, while an
// APPEND is refused as before (mailstore's space reserve).
func TestDeleteOnFullDisk(t *testing.T) {
	dir := storetest.SmallFS(t, 8<<20)
	ctx := context.Background()
	e := newEnv(t, envOptions{insecureAuth: true, dataDir: dir, prepare: func(st *boltstore.Store, mb mailstore.Mailbox) *boltstore.Store {
		for i := range 20 {
			b := []byte(fmt.Sprintf("Subject: %d\r\n\r\n%s", i, strings.Repeat("x", 32<<10)))
			if _, err := st.Deliver(ctx, mailstore.Delivery{Body: b, ReceivedAt: t1, MailboxIDs: []int64{mb.ID}}); err != nil {
				t.Fatal(err)
			}
		}
		old, err := st.CreateFolder(ctx, mb.ID, "Old")
		if err != nil {
			t.Fatal(err)
		}
		inbox, err := st.Folder(ctx, mb.ID, "INBOX")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Copy(ctx, mb.ID, inbox.ID, []uint32{18, 19, 20}, old.ID); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := boltstore.Compact(ctx, dir, boltstore.Options{}); err != nil {
			t.Fatal(err)
		}
		st, err = boltstore.Open(ctx, dir, boltstore.Options{SpaceReserve: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}})
	rc := rawLogin(t, e)
	storetest.FillFS(t, filepath.Join(dir, "filler"))
	mustOK(t, rc, "SELECT INBOX")

	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	lines := rc.send(fmt.Sprintf("%s APPEND INBOX {3+}\r\nx\r\n\r\n", tag), tag)
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, tag+" NO [UNAVAILABLE]") {
		t.Errorf("APPEND on a full disk = %q, want NO [UNAVAILABLE]", l)
	}
	mustOK(t, rc, `STORE 1:2 +FLAGS.SILENT (\Deleted)`)
	if untagged := mustOK(t, rc, "EXPUNGE"); len(untagged) != 2 {
		t.Errorf("EXPUNGE on a full disk = %q, want two EXPUNGE", untagged)
	}
	mustOK(t, rc, "MOVE 1 Trash")
	mustOK(t, rc, "DELETE Old")
	if st := mustOK(t, rc, "STATUS INBOX (MESSAGES)"); !strings.Contains(strings.Join(st, ""), "MESSAGES 17") {
		t.Errorf("INBOX after the deletions = %q, want 17 messages", st)
	}
}
