package imapserver_test

// mailhost patch: commands a session serves (SessionCommands).

import (
	"bufio"
	"fmt"
	"net"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// cmdSession serves XECHO, which answers its arguments as they came, and
// XFAIL, which answers NO.
type cmdSession struct {
	condSession
}

func (s *cmdSession) ServesCommand(name string) bool { return name == "XECHO" || name == "XFAIL" }

func (s *cmdSession) Command(w *imapserver.CommandWriter, name string, args []byte) error {
	if name == "XFAIL" {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Text: "Failed as asked"}
	}
	return w.WriteRaw(fmt.Appendf(nil, "* XECHO %q\r\n", args))
}

func TestSessionCommands(t *testing.T) {
	sess := &cmdSession{}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return sess, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
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
	cc := &condClient{t: t, c: c, r: bufio.NewReader(c)}
	cc.line()

	// Before login too: a command the session serves is no unknown
	// command (which would end the connection before login).
	untagged, tagged := cc.do(`xecho a "b c"`)
	wantLine(t, "XECHO", untagged, `* XECHO " a \"b c\"\r\n"`)
	if tagged != "OK XECHO completed" {
		t.Errorf("XECHO: %q", tagged)
	}
	// A synchronizing literal gets its continuation request; a
	// non-synchronizing one is read as it comes; both are in the
	// arguments as sent.
	cc.n++
	fmt.Fprintf(cc.c, "c%d XECHO {3}\r\n", cc.n)
	if l := cc.line(); l[0] != '+' {
		t.Fatalf("XECHO {3}: %q, want a continuation request", l)
	}
	fmt.Fprintf(cc.c, "x y {2+}\r\nzz\r\n")
	untagged, tagged = nil, ""
	for {
		l := cc.line()
		if l == fmt.Sprintf("c%d OK XECHO completed", cc.n) {
			tagged = l
			break
		}
		untagged = append(untagged, l)
	}
	wantLine(t, "XECHO literals", untagged, `* XECHO " {3}\r\nx y {2+}\r\nzz\r\n"`)
	if tagged == "" {
		t.Error("XECHO literals: no OK")
	}
	// Over 4096 bytes: NO [TOOBIG], no continuation request, and the
	// session goes on.
	if _, tagged := cc.do("XECHO {5000}"); tagged != "NO [TOOBIG] Literals are limited to 4096 bytes for this command" {
		t.Errorf("XECHO {5000}: %q", tagged)
	}
	if _, tagged := cc.do("XFAIL"); tagged != "NO Failed as asked" {
		t.Errorf("XFAIL: %q", tagged)
	}
	if _, tagged := cc.do("NOOP"); tagged != "OK NOOP completed" {
		t.Errorf("NOOP: %q", tagged)
	}
	if _, tagged := cc.do("XOTHER"); tagged != "BAD Unknown command" {
		t.Errorf("XOTHER: %q", tagged)
	}
}

// manyFetchSession answers FETCH with 200 responses of imapserver's
// writer.
type manyFetchSession struct {
	condSession
}

func (s *manyFetchSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, o *imap.FetchOptions) error {
	for i := uint32(1); i <= 200; i++ {
		rw := w.CreateMessage(i)
		rw.WriteUID(imap.UID(i))
		if err := rw.Close(); err != nil {
			return err
		}
	}
	return nil
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes chan int
}

type countingConn struct {
	net.Conn
	writes chan int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes <- len(p)
	return c.Conn.Write(p)
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: l.writes}, nil
}

// TestFetchResponsesWrittenTogether: a FETCH's responses go out in as few
// writes as the write buffer allows, not one per message, and all of
// them before its status response.
func TestFetchResponsesWrittenTogether(t *testing.T) {
	sess := &manyFetchSession{}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return sess, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln, writes: make(chan int, 1000)}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc := &condClient{t: t, c: c, r: bufio.NewReader(c)}
	cc.line()
	cc.do("LOGIN u p")
	cc.do("SELECT INBOX")
	for len(cl.writes) > 0 {
		<-cl.writes
	}
	untagged, tagged := cc.do("FETCH 1:200 (UID)")
	if len(untagged) != 200 || untagged[199] != "* 200 FETCH (UID 200)" || tagged != "OK FETCH completed" {
		t.Fatalf("FETCH: %d responses, last %q, %q", len(untagged), untagged[len(untagged)-1], tagged)
	}
	// 200 responses of about 20 bytes and the status: one write.
	if n := len(cl.writes); n != 1 {
		t.Errorf("FETCH of 200 messages written in %d writes, want 1", n)
	}
}
