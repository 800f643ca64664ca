package spam_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mailhost/mailhost/spam"
	"github.com/mailhost/mailhost/spam/rspamdtest"
)

func message(body string) []byte {
	return fmt.Appendf(nil, "From: Ann <ann@sender.example>\r\nTo: Bob <bob@example.com>\r\nSubject: Lunch\r\n"+
		"Date: %s\r\nMessage-ID: <%d@sender.example>\r\n\r\n%s\r\n",
		time.Now().UTC().Format(time.RFC1123Z), time.Now().UnixNano(), body)
}

// TestCheckAgainstRspamd scans three messages with a real rspamd: GTUBE
// is rejected, the test token is junk, a plain message passes.
func TestCheckAgainstRspamd(t *testing.T) {
	r := rspamdtest.Start(t)
	c, err := spam.New(spam.Config{URL: r.URL, ControllerURL: r.ControllerURL, Password: rspamdtest.Password})
	if err != nil {
		t.Fatal(err)
	}
	env := spam.Envelope{IP: netip.MustParseAddr("192.0.2.1"), Helo: "mx.sender.example", From: "ann@sender.example", Rcpts: []string{"bob@example.com"}, QueueID: "q1"}
	for _, tc := range []struct {
		name string
		body string
		want spam.Action
	}{
		{"gtube", rspamdtest.GTUBE, spam.Reject},
		{"junk token", "See you there. " + rspamdtest.JunkToken, spam.AddHeader},
		{"ordinary", "See you at noon at the usual place.", spam.NoAction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Check(context.Background(), env, message(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.want {
				t.Errorf("Check = %q (score %.1f, %v), want %q", res.Action, res.Score, res.Symbols, tc.want)
			}
		})
	}
}

// TestLearnAgainstRspamd learns a message as spam and sees the
// controller's learned counter grow.
func TestLearnAgainstRspamd(t *testing.T) {
	rspamdtest.RequireRedis(t)
	r := rspamdtest.Start(t)
	ctx := context.Background()
	c, err := spam.New(spam.Config{URL: r.URL, ControllerURL: r.ControllerURL, Password: rspamdtest.Password})
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := message(fmt.Sprintf("Cheap replica watches %d, best prices online, order today, limited offer for everyone reading this message", time.Now().UnixNano()))
	if err := c.Learn(ctx, true, msg); err != nil {
		t.Fatal(err)
	}
	after, err := c.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Learned != before.Learned+1 {
		t.Errorf("learned = %d after one learn, want %d", after.Learned, before.Learned+1)
	}
	bad, _ := spam.New(spam.Config{ControllerURL: r.ControllerURL, Password: "wrong"})
	var se *spam.StatusError
	if err := bad.Learn(ctx, true, msg); !errors.As(err, &se) || se.Code != 403 && se.Code != 401 {
		t.Errorf("Learn with a wrong password = %v, want HTTP 401 or 403", err)
	}
}

// TestUnavailable: nothing listening, or an answer too slow, is
// ErrUnavailable within the timeout.
func TestUnavailable(t *testing.T) {
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
			defer c.Close() // never answers
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct{ name, url string }{
		{"slow", "http://" + ln.Addr().String()},
		{"down", "http://" + closedAddr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := spam.New(spam.Config{URL: tc.url, Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Check(context.Background(), spam.Envelope{}, message("hi"))
			if !errors.Is(err, spam.ErrUnavailable) {
				t.Errorf("Check = %v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Check took %v, want about the 300ms timeout", d)
			}
		})
	}
}

func TestNewRefusesBadURL(t *testing.T) {
	for _, u := range []string{"127.0.0.1:11333", "ftp://x", "http://"} {
		if _, err := spam.New(spam.Config{URL: u}); err == nil {
			t.Errorf("New(URL %q) = nil error", u)
		}
	}
}
