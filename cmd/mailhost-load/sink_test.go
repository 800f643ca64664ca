package main

import (
	"context"
	"testing"
	"time"
)

func TestSink(t *testing.T) {
	k, err := startSink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	c, err := dialSMTP(k.ln.Addr().String(), "test.client", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().Format(time.RFC1123Z)
	from, to := "user0@load.test", "rcpt1@sink.test"
	hlen := len(header(probeID, from, to, date, 0))
	tail := body(4096, hlen)
	for _, id := range []int{7, probeID, 7} {
		if _, err := c.send(from, to, header(id, from, to, date, hlen), tail); err != nil {
			t.Fatalf("send %d: %v", id, err)
		}
	}
	if err := c.quit(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.waitFor(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if !k.has(7) || !k.has(probeID) || k.has(8) {
		t.Errorf("has(7), has(probeID), has(8) = %v, %v, %v, want true, true, false", k.has(7), k.has(probeID), k.has(8))
	}
	if dups, unknown, rcpts := k.odd(); dups != 1 || unknown != 0 || rcpts != 3 {
		t.Errorf("odd() = %d, %d, %d, want 1, 0, 3", dups, unknown, rcpts)
	}
	if times, first, last := k.arrivals(0, 10); len(times) != 1 || !first.Equal(last) {
		t.Errorf("arrivals(0, 10) = %d times, first %v, last %v; want 1, first = last", len(times), first, last)
	}
}
