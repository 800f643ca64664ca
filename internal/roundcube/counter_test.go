package roundcube

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestCounter: the proxy passes bytes both ways unchanged and counts
// them, each connection once.
func TestCounter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 5)
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				c.Write([]byte("* OK hello " + string(buf) + "\r\n"))
			}()
		}
	}()
	cnt, err := NewCounter(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cnt.Close()
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", cnt.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("abcde"))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != "* OK hello abcde\r\n" {
			t.Fatalf("through the proxy: %q, %v", got, err)
		}
	}
	// The proxy counts a reply once it has forwarded it: wait for both.
	want := int64(2 * (5 + len("* OK hello abcde\r\n")))
	deadline := time.Now().Add(5 * time.Second)
	for cnt.Bytes() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := cnt.Bytes(); got != want {
		t.Errorf("Bytes() = %d, want %d", got, want)
	}
	if got := cnt.Conns.Load(); got != 2 {
		t.Errorf("Conns = %d, want 2", got)
	}
}
