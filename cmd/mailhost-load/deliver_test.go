package main

import (
	"bytes"
	"testing"
	"time"
)

func TestMessageSize(t *testing.T) {
	date := time.Now().Format(time.RFC1123Z)
	addrs := []string{"user0@a.test", "user99@load-1795454399.test"}
	for _, size := range []int{512, 4096, 102400} {
		hlen := 0
		for _, a := range addrs {
			hlen = max(hlen, len(header(0, mxSender, a, date, 0)))
		}
		tail := body(size, hlen)
		for _, a := range addrs {
			h := header(123456, mxSender, a, date, hlen)
			if got := len(h) + len(tail); got != size {
				t.Errorf("size %d, to %s: message is %d bytes", size, a, got)
			}
			if !bytes.HasSuffix(h, []byte("\r\n\r\n")) {
				t.Errorf("size %d: headers do not end in an empty line", size)
			}
			if err := dotSafe(append(h, tail...)); err != nil {
				t.Errorf("size %d: dotSafe = %v, want nil", size, err)
			}
			for _, l := range bytes.Split(append(h, tail...), []byte("\r\n")) {
				if len(l) > 998 { // RFC 5322 section 2.1.1
					t.Errorf("size %d: line of %d bytes", size, len(l))
				}
			}
		}
	}
}

func TestDotSafe(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "a: b\r\n\r\nbody\r\n", true},
		{"dot line", "a: b\r\n\r\n.body\r\n", false},
		{"dot first", ".a: b\r\n", false},
		{"bare LF", "a: b\n\r\nbody\r\n", false},
		{"no final CRLF", "a: b\r\n\r\nbody", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := dotSafe([]byte(c.in)); (err == nil) != c.ok {
				t.Errorf("dotSafe(%q) = %v, want ok %v", c.in, err, c.ok)
			}
		})
	}
}
