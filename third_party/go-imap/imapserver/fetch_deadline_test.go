package imapserver_test

// mailhost patch: the write deadline of a FETCH's responses (see
// PATCHES.md, the FETCH encoder).

import (
	"bufio"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// deadlineListener counts the write deadlines set on the connections it
// accepts, and how many of them were cleared.
type deadlineListener struct {
	net.Listener
	set, cleared atomic.Int64
}

type deadlineConn struct {
	net.Conn
	l *deadlineListener
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		c.l.cleared.Add(1)
	} else {
		c.l.set.Add(1)
	}
	return c.Conn.SetWriteDeadline(t)
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c, l: l}, nil
}

// TestFetchWriteDeadline: a FETCH's 200 responses set the write deadline
// once (and the status response once more), not once per response, and
// the status response clears it.
func TestFetchWriteDeadline(t *testing.T) {
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
	dl := &deadlineListener{Listener: ln}
	go srv.Serve(dl)
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
	set, cleared := dl.set.Load(), dl.cleared.Load()
	untagged, tagged := cc.do("FETCH 1:200 (UID)")
	if len(untagged) != 200 || tagged != "OK FETCH completed" {
		t.Fatalf("FETCH: %d responses, %q", len(untagged), tagged)
	}
	// The status response's writer clears the deadline after the client
	// has read it: wait for that, then count.
	deadline := time.Now().Add(5 * time.Second)
	for dl.cleared.Load() == cleared && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := dl.set.Load() - set; n < 1 || n > 4 {
		t.Errorf("FETCH of 200 messages set the write deadline %d times, want 2 (the responses', the status's)", n)
	}
	if n := dl.cleared.Load() - cleared; n < 1 {
		t.Errorf("write deadline cleared %d times after the FETCH, want at least 1", n)
	}
}
