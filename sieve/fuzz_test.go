package sieve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzMessage is a message with a MIME body, so the body test has parts.
var fuzzMessage = crlf(`Received: from a by b; Tue, 3 Jul 2007 10:00:00 +0000
From: "Sender, A." <sender+tag@example.org>
To: me@example.com, Other <other@example.net>
Cc: undisclosed-recipients:;
Subject: =?UTF-8?Q?caf=C3=A9?= [list] hello
Date: Tue, 3 Jul 2007 12:00:00 +0200
List-Id: <list.example.org>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=b

--b
Content-Type: text/plain; charset=utf-8

hello there
--b
Content-Type: text/html

<p>hello</p>
--b--
`)

// FuzzParse checks that Parse never panics and refuses with an *Error or
// a limit, and that a script it accepts runs against a message without
// panicking, within its step budget and in bounded time.
func FuzzParse(f *testing.F) {
	seeds := []string{
		rfc5228Example,
		`require ["fileinto", "variables"]; if header :matches "Subject" "[*] *" { fileinto "l.${1}"; stop; }`,
		`require ["imap4flags", "relational", "comparator-i;ascii-numeric"]; setflag "A B"; if hasflag :count "ge" :comparator "i;ascii-numeric" "2" { keep :flags "\\Seen"; }`,
		`require ["body", "regex", "variables"]; if body :content "text" :regex "(h.l+o)" { set :upper "x" "${1}"; }`,
		`require ["date", "index", "relational"]; if date :value "gt" :index 1 :last :zone "-0500" "received" "iso8601" "2007-02-26T09:00:00-05:00" { discard; }`,
		`require ["vacation", "envelope", "subaddress"]; if envelope :detail "from" "tag" { vacation :days 3 :subject "away" :addresses ["a@b.c"] :mime :handle "h" text:` + "\r\nContent-Type: text/plain\r\n\r\nbye\r\n.\r\n;}",
		`require ["encoded-character", "reject"]; reject "${hex:41 42}${unicode:263a}";`,
		`require ["mailbox", "fileinto", "copy"]; if mailboxexists "x" { fileinto :create :copy "x"; } redirect :copy "a@b.example";`,
		"if anyof (not exists [\"From\",\"Date\"], size :over 1K) { discard; } /* c */ # c\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// The scripts of the tests' tables are seeds too.
	if files, err := filepath.Glob("*_test.go"); err == nil {
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				continue
			}
			for _, part := range strings.Split(string(data), "`") {
				if strings.Contains(part, ";") && len(part) < 4096 {
					f.Add([]byte(part))
				}
			}
		}
	}
	msg := NewMessage([]byte(fuzzMessage))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse(src, ParseOptions{})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) && !errors.Is(err, ErrLimit) {
				t.Fatalf("Parse error %T %v is neither *Error nor ErrLimit", err, err)
			}
			if pe != nil && (pe.Pos.Line < 1 || pe.Pos.Col < 1) {
				t.Fatalf("error position %v", pe.Pos)
			}
			return
		}
		opts := RunOptions{
			MaxSteps:  5000,
			Now:       func() time.Time { return fixedNow },
			Mailboxes: mailboxSet{"x": true},
		}
		start := time.Now()
		res, err := s.Run(context.Background(), msg, Envelope{From: "sender+tag@example.org", To: "me+x@example.com"}, opts)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Run took %v", d)
		}
		if err != nil {
			if !res.ImplicitKeep || len(res.Actions) != 0 {
				t.Fatalf("Run error %v with result %+v", err, res)
			}
			return
		}
		if res.Steps > opts.MaxSteps {
			t.Fatalf("Run took %d steps, budget %d", res.Steps, opts.MaxSteps)
		}
		redirects := 0
		for _, a := range res.Actions {
			if _, ok := a.(Redirect); ok {
				redirects++
			}
		}
		if redirects > DefaultMaxRedirects {
			t.Fatalf("%d redirects", redirects)
		}
	})
}
