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
// read each response whole without waiting for more). The layer writes
// a response, or a batch of them, in one Write, so each ends a flush.
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

// compress runs COMPRESS (RFC 4978 section 3) in the layer, which owns the
// connection's bytes: it answers OK uncompressed, then compresses both
// directions. Only DEFLATE exists; a second COMPRESS is refused with
// [COMPRESSIONACTIVE].
func (c *cmdConn) compress(tag string, cmd []byte) error {
	p := newArgParser(cmd)
	mech, ok := "", p.sp()
	if ok {
		mech, ok = p.astring()
	}
	switch {
	case !ok || !p.end():
		return c.writeOwn(fmt.Appendf(nil, "%s BAD [CLIENTBUG] Syntax error: COMPRESS DEFLATE\r\n", tag))
	case c.sess.user == nil:
		return c.writeOwn(fmt.Appendf(nil, "%s BAD Log in first\r\n", tag))
	case !strings.EqualFold(mech, "DEFLATE"):
		return c.writeOwn(fmt.Appendf(nil, "%s BAD Unknown compression mechanism\r\n", tag))
	}
	c.mu.Lock()
	_, active := c.transport.(*deflateConn)
	c.mu.Unlock()
	if active {
		return c.writeOwn(fmt.Appendf(nil, "%s NO [COMPRESSIONACTIVE] DEFLATE active\r\n", tag))
	}
	if err := c.writeOwn(fmt.Appendf(nil, "%s OK DEFLATE active\r\n", tag)); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	// The client compresses what it sends after reading the OK; anything
	// already read past the command line is its compressed start.
	buffered, _ := c.br.Peek(c.br.Buffered())
	in := io.MultiReader(bytes.NewReader(append([]byte(nil), buffered...)), c.transport)
	w, err := flate.NewWriter(c.transport, compressLevel)
	if err != nil {
		return fmt.Errorf("compress: %w", err)
	}
	dc := &deflateConn{Conn: c.transport, r: flate.NewReader(in), w: w}
	c.transport = dc
	c.br.Reset(dc)
	return nil
}
