package imapd

import (
	"net"
	"syscall"
)

// quickAck asks the kernel to acknowledge what c received now rather than
// after its delayed-ACK timer (40 ms on Linux). A client with Nagle's
// algorithm on that writes a literal and then its closing CRLF in a
// second, small write holds that CRLF back until the literal is
// acknowledged; the server, which has read the literal and waits for the
// CRLF, has nothing to send that would carry the ACK, so without this
// every such APPEND waited out the timer. The option is not sticky: it
// acts once, on the ACK pending now.
func quickAck(c net.Conn) {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
}
