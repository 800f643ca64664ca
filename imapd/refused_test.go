package imapd

import (
	"context"
	"slices"
	"strings"
	"testing"
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
	// The connection goes on.
	mustOK(t, rc, `CREATE "a/b"`)
}

// TestFramingCommandNameOddEnd: a command whose name imapserver reads
// but the command layer's name scanner does not ("E" followed by ")"),
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
