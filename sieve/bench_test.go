package sieve

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchScript is 200 rules of the kinds users write: senders, lists,
// subjects, domains, sizes, subaddresses, flags; the last rule matches.
func benchScript() string {
	var b strings.Builder
	b.WriteString(`require ["fileinto", "envelope", "subaddress", "imap4flags", "variables", "copy", "mailbox", "relational", "comparator-i;ascii-numeric"];` + "\n")
	for i := 0; i < 199; i++ {
		switch i % 8 {
		case 0:
			fmt.Fprintf(&b, "if address :is \"from\" \"sender%d@example.org\" { fileinto \"Senders/%d\"; stop; }\n", i, i)
		case 1:
			fmt.Fprintf(&b, "if header :contains \"list-id\" \"list%d.example.org\" { fileinto :create \"Lists/%d\"; stop; }\n", i, i)
		case 2:
			fmt.Fprintf(&b, "if header :matches \"subject\" \"*[ticket-%d]*\" { addflag \"$Ticket\"; fileinto \"Tickets\"; }\n", i)
		case 3:
			fmt.Fprintf(&b, "if address :domain :is [\"to\", \"cc\"] \"dept%d.example.com\" { fileinto \"Dept/%d\"; }\n", i, i)
		case 4:
			fmt.Fprintf(&b, "if allof (size :over %dK, header :contains \"x-spam-flag\" \"YES%d\") { discard; stop; }\n", 500+i, i)
		case 5:
			fmt.Fprintf(&b, "if envelope :detail \"to\" \"tag%d\" { fileinto \"Tags/%d\"; }\n", i, i)
		case 6:
			fmt.Fprintf(&b, "if anyof (header :is \"x-mailer\" \"Mailer %d\", address :localpart \"reply-to\" \"noreply%d\") { setflag \"\\\\Seen\"; }\n", i, i)
		case 7:
			fmt.Fprintf(&b, "if header :value \"gt\" :comparator \"i;ascii-numeric\" \"x-priority\" \"%d\" { fileinto :copy \"Prio\"; }\n", 100+i)
		}
	}
	b.WriteString("if header :matches \"subject\" \"Quarterly * report\" { set \"q\" \"${1}\"; fileinto \"Reports/${q}\"; }\n")
	return b.String()
}

// benchMessage is a typical message: a dozen header fields, a short
// text body.
var benchMessage = crlf(`Return-Path: <alice@example.net>
Received: from mx.example.net (mx.example.net [192.0.2.1]) by mx.example.com with ESMTPS id 1234; Tue, 3 Jul 2007 10:00:00 +0000
Received: from laptop by mx.example.net with ESMTPSA id 5678; Tue, 3 Jul 2007 09:59:58 +0000
DKIM-Signature: v=1; a=rsa-sha256; d=example.net; s=s1; h=from:to:subject:date; bh=abc; b=def
From: Alice Example <alice@example.net>
To: Bob <bob@example.com>, team@example.com
Cc: carol@example.org
Subject: Quarterly Q2 report
Date: Tue, 3 Jul 2007 11:59:58 +0200
Message-ID: <123@example.net>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
X-Priority: 3

Hi Bob,

here is the quarterly report. Numbers are up.

Alice
`)

func BenchmarkRun200Rules(b *testing.B) {
	s, err := Parse([]byte(benchScript()), ParseOptions{})
	if err != nil {
		b.Fatal(err)
	}
	msg := NewMessage([]byte(benchMessage))
	env := Envelope{From: "alice@example.net", To: "bob+work@example.com"}
	ctx := context.Background()
	res, err := s.Run(ctx, msg, env, RunOptions{})
	if err != nil || describe(res) != "fileinto:Reports/Q2" {
		b.Fatalf("Run = %s, %v", describe(res), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Run(ctx, msg, env, RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse200Rules(b *testing.B) {
	src := []byte(benchScript())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src, ParseOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
