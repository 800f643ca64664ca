package imapd

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// capCompress is COMPRESS=DEFLATE (RFC 4978): after login a client may ask
// for the rest of the connection, both ways, to be raw DEFLATE (RFC
// 1951). A folder listing (ENVELOPE, header fields) is text that repeats
// itself, and compresses to a fifth of its size or less
// (imapd/BENCHMARKS.md), which counts on a phone's link.
const capCompress imap.Cap = "COMPRESS=DEFLATE"

// compressLevel trades the server's CPU for bytes: flate.BestSpeed
// brings a 10,000-message folder listing to about a fifth of its size
// (imapd/BENCHMARKS.md), within RFC 4978's purpose, at half the CPU time
// of level 5 for a few points of ratio. Go's compressor holds about
// 650 KB whatever the level (its hash tables), so each connection that
// enables COMPRESS costs that much memory until it ends.
const compressLevel = flate.BestSpeed

// deflateConn is a connection after COMPRESS DEFLATE: what is read is
// inflated, what is written deflated and flushed at the end of each
// Write (a sync flush, RFC 4978 section 4: the client must be able to
// read each response whole without waiting for more). imapserver writes
// its buffer, a response or a batch of them, in one Write, so each ends a
// flush.
// Deadlines are the underlying connection's.
type deflateConn struct {
	net.Conn
	r io.ReadCloser
	w *flate.Writer
}

func (c *deflateConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *deflateConn) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err == nil {
		err = c.w.Flush()
	}
	return n, err
}

// NetConn is the connection under the compression (quickAck).
func (c *deflateConn) NetConn() net.Conn { return c.Conn }

// compress serves COMPRESS (RFC 4978 section 3): it answers OK
// uncompressed, then imapserver has both directions compressed
// (Conn.Upgrade, a hook of mailhost's copy of go-imap). Only DEFLATE
// exists; a second COMPRESS is refused with [COMPRESSIONACTIVE].
func (s *session) compress(p *argParser) error {
	mech, ok := "", p.sp()
	if ok {
		mech, ok = p.astring()
	}
	switch {
	case !ok || !p.end():
		return &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Syntax error: COMPRESS DEFLATE"}
	case s.user == nil:
		return &imap.Error{Type: imap.StatusResponseTypeBad, Text: "Log in first"}
	case !strings.EqualFold(mech, "DEFLATE"):
		return &imap.Error{Type: imap.StatusResponseTypeBad, Text: "Unknown compression mechanism"}
	case s.compressed:
		return no("COMPRESSIONACTIVE", "DEFLATE active")
	}
	s.conn.Upgrade(s.deflate)
	return &imap.Error{Type: imap.StatusResponseTypeOK, Text: "DEFLATE active"}
}

// deflate is COMPRESS's transport change. The client compresses what it
// sends after reading the OK; anything already read past the command
// line (buffered) is its compressed start.
func (s *session) deflate(conn net.Conn, buffered []byte) (net.Conn, error) {
	in := io.MultiReader(bytes.NewReader(buffered), conn)
	w, err := flate.NewWriter(conn, compressLevel)
	if err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	s.compressed = true
	return &deflateConn{Conn: conn, r: flate.NewReader(in), w: w}, nil
}
