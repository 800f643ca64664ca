package main

import (
	"bytes"
	"context"
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

// TestDeliverRate: with -rate the messages go out on schedule, not as
// fast as the server answers, and the result says what was asked.
func TestDeliverRate(t *testing.T) {
	k, err := startSink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	o := options{smtpAddr: k.ln.Addr().String(), n: 30, size: 1024, conns: 4, mailboxes: 1, rate: 100}
	r, err := deliver(context.Background(), o, []string{"user0@a.test"})
	if err != nil {
		t.Fatalf("deliver = %v", err)
	}
	// 30 messages at 100/s: the last starts 290 ms after the first.
	if r.Seconds < 0.29 || r.Rate > 105 {
		t.Errorf("30 messages at -rate 100 took %.3fs (%.1f msg/s), want at least 0.29s and at most 105 msg/s", r.Seconds, r.Rate)
	}
	if r.TargetRate != 100 || r.Messages != 30 {
		t.Errorf("result = %+v, want target 100 and 30 messages", r)
	}
}
