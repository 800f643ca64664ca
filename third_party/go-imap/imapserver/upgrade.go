package imapserver

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
)

// mailhost patch: a transport replaced under the connection (see
// PATCHES.md).

// UpgradeFunc replaces a connection's transport: conn is the transport in
// use, buffered what imapserver has already read from it past the end of
// the command that asked for the change (bytes the client sent before it
// saw the answer). It returns the transport to use from then on, which
// reads and writes through conn; an error closes the connection.
type UpgradeFunc func(conn net.Conn, buffered []byte) (net.Conn, error)

// Upgrade has the connection's transport replaced by upgrade once the
// command being served is answered OK: after its tagged OK is written and
// flushed, in the clear, and before anything else is read or written.
// Commands that change the transport use it: STARTTLS (RFC 9051 section
// 6.2.1), COMPRESS (RFC 4978), served by a session through
// SessionCommands. A command answered otherwise changes nothing. It must
// be called from the command's handler.
func (c *Conn) Upgrade(upgrade UpgradeFunc) {
	c.upgrade = upgrade
}

// runUpgrade replaces the transport now, with no response being written
// (encMutex held: a Bye from another goroutine waits for the new
// transport).
func (c *Conn) runUpgrade(upgrade UpgradeFunc) error {
	c.encMutex.Lock()
	defer c.encMutex.Unlock()
	if err := c.bw.Flush(); err != nil {
		return err
	}
	var buffered []byte
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		buffered = append(buffered, b...)
	}
	if c.framer != nil {
		buffered = append(buffered, c.framer.buffered()...)
	}
	c.mutex.Lock()
	old := c.conn
	c.mutex.Unlock()
	conn, err := upgrade(old, buffered)
	if err != nil {
		return err
	}
	c.mutex.Lock()
	c.conn = conn
	c.mutex.Unlock()
	rw := c.server.options.wrapReadWriter(conn)
	if c.framer != nil {
		c.framer.reset(rw)
		c.br.Reset(c.framer)
	} else {
		c.br.Reset(rw)
	}
	c.bw.Reset(rw)
	return nil
}

// upgradeStartTLS is imapserver's own STARTTLS (Options.TLSConfig): the
// bytes the client sent before it saw the OK go into the TLS handshake,
// as upstream has it.
func (c *Conn) upgradeStartTLS(conn net.Conn, buffered []byte) (net.Conn, error) {
	cleartext := conn
	if len(buffered) > 0 {
		cleartext = startTLSConn{conn, io.MultiReader(bytes.NewReader(buffered), conn)}
	}
	return tls.Server(cleartext, c.server.options.TLSConfig), nil
}
