package imapserver_test

// mailhost patch: Conn.Upgrade, SessionCaps, Conn.CommandName and
// Options.CommandLimits (see PATCHES.md).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// hookSession serves XSWAP, which has the transport replaced by one that
// flips the case of every letter (Upgrade), and XSWAPNO, which asks for
// the same and fails; adds XTEST to the capabilities and drops
// LITERAL-; records the command under way in List and the names CREATE
// is given.
type hookSession struct {
	condSession

	buffered chan []byte // what XSWAP's upgrade was given
	listCmds []string
	created  []string
}

func (s *hookSession) ServesCommand(name string) bool { return name == "XSWAP" || name == "XSWAPNO" }

func (s *hookSession) Command(w *imapserver.CommandWriter, name string, args []byte) error {
	s.conn.Upgrade(func(conn net.Conn, buffered []byte) (net.Conn, error) {
		s.buffered <- append([]byte(nil), buffered...)
		return &flipConn{Conn: conn, r: io.MultiReader(bytes.NewReader(buffered), conn)}, nil
	})
	if name == "XSWAPNO" {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Text: "Not now"}
	}
	return &imap.Error{Type: imap.StatusResponseTypeOK, Text: "Swapped"}
}

func (s *hookSession) Caps(caps []imap.Cap) []imap.Cap {
	out := caps[:0]
	for _, c := range caps {
		if c != imap.CapLiteralMinus {
			out = append(out, c)
		}
	}
	return append(out, "XTEST")
}

func (s *hookSession) List(w *imapserver.ListWriter, ref string, patterns []string, o *imap.ListOptions) error {
	s.listCmds = append(s.listCmds, s.conn.CommandName())
	return nil
}

func (s *hookSession) Create(name string, o *imap.CreateOptions) error {
	s.created = append(s.created, name)
	return nil
}

func (s *hookSession) Rename(from, to string, o *imap.RenameOptions) error { return nil }

// flipConn flips the case of ASCII letters both ways.
type flipConn struct {
	net.Conn
	r io.Reader
}

func flip(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' {
			ch ^= 0x20
		}
		out[i] = ch
	}
	return out
}

func (c *flipConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	copy(p, flip(p[:n]))
	return n, err
}

func (c *flipConn) Write(p []byte) (int, error) { return c.Conn.Write(flip(p)) }

// startHookServer serves a hookSession with o's CommandLimits and
// returns a client past the greeting, and the greeting.
func startHookServer(t *testing.T, limits *imapserver.CommandLimits) (*hookSession, *condClient, string) {
	t.Helper()
	sess := &hookSession{buffered: make(chan []byte, 1)}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			sess.conn = c
			return sess, nil, nil
		},
		Caps:          imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapLiteralPlus: {}},
		InsecureAuth:  true,
		CommandLimits: limits,
		Logger:        nopLogger{},
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
	cc := &condClient{t: t, c: c, r: bufio.NewReader(c)}
	return sess, cc, cc.line()
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...interface{}) {}

// TestUpgrade: the transport is replaced after the tagged OK, which goes
// out in the clear; bytes the client sent after the command, before it
// saw the OK, are handed to the upgrade; a command answered NO changes
// nothing. With and without CommandLimits (whose reader sits under br).
func TestUpgrade(t *testing.T) {
	for _, limits := range []*imapserver.CommandLimits{nil, {}} {
		t.Run(fmt.Sprintf("limits %v", limits != nil), func(t *testing.T) {
			sess, cc, _ := startHookServer(t, limits)
			if _, tagged := cc.do("XSWAPNO"); tagged != "NO Not now" {
				t.Fatalf("XSWAPNO: %q", tagged)
			}
			if _, tagged := cc.do("NOOP"); tagged != "OK NOOP completed" {
				t.Fatalf("NOOP after XSWAPNO: %q (the transport changed?)", tagged)
			}
			// XSWAP and, at once, a NOOP in the new transport's form.
			fmt.Fprintf(cc.c, "a1 XSWAP\r\n%s", flip([]byte("a2 NOOP\r\n")))
			if l := cc.line(); l != "a1 OK Swapped" {
				t.Fatalf("XSWAP: %q, want the OK in the clear", l)
			}
			select {
			case b := <-sess.buffered:
				if string(b) != string(flip([]byte("a2 NOOP\r\n"))) {
					t.Errorf("upgrade given %q, want the NOOP sent after XSWAP", b)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("upgrade not run")
			}
			if l := cc.line(); l != string(flip([]byte("a2 OK NOOP completed"))) {
				t.Errorf("NOOP through the new transport: %q", l)
			}
		})
	}
}

// TestSessionCaps: the session's changes are in the greeting's
// [CAPABILITY] code and in CAPABILITY.
func TestSessionCaps(t *testing.T) {
	_, cc, greeting := startHookServer(t, nil)
	if !strings.Contains(greeting, " XTEST]") || strings.Contains(greeting, "LITERAL-") {
		t.Errorf("greeting = %q, want XTEST and no LITERAL-", greeting)
	}
	untagged, _ := cc.do("CAPABILITY")
	if len(untagged) != 1 || !strings.HasSuffix(untagged[0], " XTEST") || strings.Contains(untagged[0], "LITERAL-") {
		t.Errorf("CAPABILITY = %q, want XTEST and no LITERAL-", untagged)
	}
}

// TestCommandName: a session tells LSUB from LIST, which both call List.
func TestCommandName(t *testing.T) {
	sess, cc, _ := startHookServer(t, nil)
	cc.do("LOGIN u p")
	cc.do(`LIST "" *`)
	cc.do(`LSUB "" *`)
	if got := strings.Join(sess.listCmds, ","); got != "LIST,LSUB" {
		t.Errorf("CommandName in List = %q, want LIST,LSUB", got)
	}
	// The tagged answer is written before the command's end is
	// recorded: wait for it, within a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for sess.conn.CommandName() != "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if name := sess.conn.CommandName(); name != "" {
		t.Errorf("CommandName between commands = %q, want none", name)
	}
}

// TestNewMailboxName: CREATE and RENAME take only modified UTF-7 (or
// UTF-8) names, BAD [CLIENTBUG] otherwise.
func TestNewMailboxName(t *testing.T) {
	sess, cc, _ := startHookServer(t, nil)
	cc.do("LOGIN u p")
	for _, tt := range []struct{ cmd, want string }{
		{`CREATE "&AAA"`, "BAD [CLIENTBUG] Mailbox name is not modified UTF-7"},
		{`CREATE a&b`, "BAD [CLIENTBUG] Mailbox name is not modified UTF-7"},
		{`RENAME Sent "x&AGEAYgBj"`, "BAD [CLIENTBUG] Mailbox name is not modified UTF-7"},
		{`CREATE "K&AOQ-se"`, "OK"},
		{`CREATE "Q&-A"`, "OK"},
		{`CREATE "Käse"`, "OK"},
	} {
		if _, tagged := cc.do(tt.cmd); !strings.HasPrefix(tagged, tt.want) {
			t.Errorf("%s = %q, want %s", tt.cmd, tagged, tt.want)
		}
	}
	if got := strings.Join(sess.created, ","); got != "Käse,Q&A,Käse" {
		t.Errorf("created %q", got)
	}
}

// TestCommandLimits: with Options.CommandLimits, commands over the limits
// are refused BAD at once and the connection goes on; arguments that
// cannot be parsed are BAD, not NO [SERVERBUG].
func TestCommandLimits(t *testing.T) {
	sess, cc, _ := startHookServer(t, &imapserver.CommandLimits{MaxNesting: 10})
	injected := "x1 CREATE Injected\r\n\r\n"
	cc.do("LOGIN u p")
	cc.do("SELECT INBOX")
	for _, tt := range []struct{ name, send, want string }{
		{"sync literal over 4096", "LOGIN {99999}", "BAD [TOOBIG]"},
		{"non-sync literal over 4096", "LOGIN {5000+}\r\n" + strings.Repeat("a", 5000) + " {3+}\r\nabc", "BAD [TOOBIG]"},
		{"line over 50 KiB", "NOOP " + strings.Repeat("x", 60_000), "BAD Command line too long"},
		{"nesting", "SEARCH " + strings.Repeat("(", 11) + "ALL" + strings.Repeat(")", 11), "BAD [CLIENTBUG] Too many nested parentheses: at most 10"},
		{"open quote", `SELECT "INBOX`, "BAD [CLIENTBUG] Syntax error: quoted string"},
		{"two spaces", " NOOP", "BAD [CLIENTBUG] Syntax error: expected a tag"},
		{"literal dropped after an early answer", fmt.Sprintf("NOOP {%d+}\r\n%s", len(injected), injected), "BAD"},
		{"SEARCH of an unknown key", "SEARCH FOOBAR", "BAD [CLIENTBUG] Syntax error in the command's arguments"},
	} {
		_, tagged := cc.do(tt.send)
		if !strings.HasPrefix(tagged, tt.want) {
			t.Errorf("%s: %q, want %s", tt.name, tagged, tt.want)
		}
		if _, tagged := cc.do("NOOP"); tagged != "OK NOOP completed" {
			t.Errorf("%s: NOOP after it = %q", tt.name, tagged)
		}
	}

	if len(sess.created) > 0 {
		t.Errorf("created %q: a literal's line ran as a command", sess.created)
	}

	// Untagged when the line has no tag.
	fmt.Fprint(cc.c, "\r\n")
	if l := cc.line(); !strings.HasPrefix(l, "* BAD [CLIENTBUG]") {
		t.Errorf("empty line: %q, want * BAD", l)
	}
	// A limit met after a literal: BYE, and the connection closed.
	fmt.Fprint(cc.c, "b1 LOGIN {5}\r\n")
	if l := cc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("LOGIN {5}: %q", l)
	}
	fmt.Fprint(cc.c, "alice {99999}\r\n")
	if l := cc.line(); !strings.HasPrefix(l, "* BYE Literal too big") {
		t.Errorf("literal over 4096 after a literal: %q, want BYE", l)
	}
	cc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := io.ReadAll(cc.r); len(rest) > 0 {
		t.Errorf("after BYE: %q, %v; want the connection closed", rest, err)
	}
}

// TestCommandLimitsBeforeLogin: before login, a line with no command
// ends the connection, with BAD and BYE.
func TestCommandLimitsBeforeLogin(t *testing.T) {
	_, cc, _ := startHookServer(t, &imapserver.CommandLimits{})
	fmt.Fprint(cc.c, "t1\r\n")
	if l := cc.line(); !strings.HasPrefix(l, "* BAD [CLIENTBUG]") {
		t.Errorf("tag alone: %q, want * BAD", l)
	}
	if l := cc.line(); l != "* BYE Syntax error before login" {
		t.Errorf("then %q, want BYE", l)
	}
}

// TestLiteralRead: CommandLimits.LiteralRead is called once a literal's
// last byte is read and the client has sent nothing more, before the
// rest of its line, for which the server then waits.
func TestLiteralRead(t *testing.T) {
	read := make(chan net.Conn, 1)
	_, cc, _ := startHookServer(t, &imapserver.CommandLimits{LiteralRead: func(c net.Conn) { read <- c }})
	fmt.Fprint(cc.c, "a1 LOGIN u {1+}\r\np")
	select {
	case c := <-read:
		if c == nil {
			t.Error("LiteralRead given no connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LiteralRead not called after the literal")
	}
	fmt.Fprint(cc.c, "\r\n")
	if l := cc.line(); !strings.HasPrefix(l, "a1 OK") {
		t.Errorf("LOGIN: %q", l)
	}
}
