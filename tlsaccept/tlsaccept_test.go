package tlsaccept

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/testcert"
)

// testTLS is a self-signed certificate for 127.0.0.1 and a client that
// trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	cert, pool := testcert.New(t, "127.0.0.1")
	return &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// TestListener: a client that never sends its ClientHello is closed
// after the timeout and never reaches Accept; one that completes the
// handshake is handed on as a *tls.Conn whose handshake is done; Close
// ends Accept.
func TestListener(t *testing.T) {
	server, client := testTLS(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(inner, server, 200*time.Millisecond, nil)
	addr := inner.Addr().String()

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	tc, err := tls.Dial("tcp", addr, client)
	if err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	defer tc.Close()
	select {
	case c := <-accepted:
		stc, ok := c.(*tls.Conn)
		if !ok || !stc.ConnectionState().HandshakeComplete {
			t.Fatalf("Accept = %T, want a *tls.Conn with its handshake done", c)
		}
		if got, want := stc.RemoteAddr().String(), tc.LocalAddr().String(); got != want {
			t.Errorf("accepted %s, want the TLS client %s (not the silent one)", got, want)
		}
		stc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the TLS client was not accepted")
	}

	start := time.Now()
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("silent connection read %d bytes, %v; want it closed by the listener", n, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("silent connection closed after %v, want about 200 ms", d)
	}

	if err := ln.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("Accept after Close succeeded")
	}
}
