package delivery

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// sieveRules is a script of n rules of the kinds people write, in
// turn: a subject filed into a folder, a sender's address into a
// list's folder, a sender's domain flagged, a List-Id filed, an
// envelope sender discarded. None matches benchMessage, so that every
// rule is evaluated: the worst case of a script of that size.
func sieveRules(n int) string {
	var b strings.Builder
	b.WriteString(`require ["fileinto", "imap4flags", "envelope"];` + "\n")
	for i := range n {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "if header :contains \"subject\" \"topic-%d\" { fileinto \"Topics\"; stop; }\n", i)
		case 1:
			fmt.Fprintf(&b, "if address :is \"from\" \"list%d@lists.example\" { fileinto \"Lists\"; stop; }\n", i)
		case 2:
			fmt.Fprintf(&b, "if address :domain :is \"from\" \"vendor%d.example\" { addflag \"\\\\Flagged\"; }\n", i)
		case 3:
			fmt.Fprintf(&b, "if header :contains \"list-id\" \"<list%d.lists.example>\" { fileinto \"Lists\"; stop; }\n", i)
		case 4:
			fmt.Fprintf(&b, "if envelope :is \"from\" \"bounce%d@mailer.example\" { discard; stop; }\n", i)
		}
	}
	return b.String()
}

// benchMessage is an ordinary message: the header fields a mail client
// and one hop add, 2 KB of text.
var benchMessage = []byte("Return-Path: <someone@sender.example>\r\n" +
	"Received: from mx.sender.example (mx.sender.example [192.0.2.1]) by mx.a.test with ESMTPS id 1a2b3c for <bob@big.test>; Sat, 28 Nov 2026 09:00:00 +0000\r\n" +
	"DKIM-Signature: v=1; a=rsa-sha256; d=sender.example; s=s1; h=from:to:subject:date:message-id; bh=abc; b=def\r\n" +
	"From: Some One <someone@sender.example>\r\nTo: Bob <bob@big.test>\r\nCc: carol@big.test, dave@elsewhere.example\r\n" +
	"Subject: an ordinary message about the meeting\r\nDate: Sat, 28 Nov 2026 09:00:00 +0000\r\n" +
	"Message-ID: <1@sender.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"User-Agent: Thunderbird\r\nX-Spam: no\r\n\r\n" + strings.Repeat("Some text of the body, as people write it.\r\n", 48))

// benchSide is one side of BenchmarkSieveDelivery: its own store and
// agent, and what its deliveries cost.
type benchSide struct {
	a         *Agent
	wall, cpu time.Duration
	n         int
}

func newBenchSide(b *testing.B, script string) *benchSide {
	b.Helper()
	f := newFixture(b)
	ctx := context.Background()
	// A mailbox with room for every iteration.
	plan := mailstore.Plan{Name: "big", QuotaMB: 100_000, RetentionDays: 30, TransferMonthlyMB: 1_000_000}
	if _, err := f.st.CreateDomain(ctx, f.partner, mailstore.NewDomain{Name: "big.test", Plan: plan}, testNow); err != nil {
		b.Fatal(err)
	}
	bob, err := f.st.CreateMailbox(ctx, f.partner, "big.test", "bob@big.test", "not a hash", testNow)
	if err != nil {
		b.Fatal(err)
	}
	if script != "" {
		if err := f.st.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: bob.ID, Name: "rules", Script: script, Active: true}); err != nil {
			b.Fatal(err)
		}
	}
	return &benchSide{a: New(Config{Store: f.st, SRS: testSRS, Now: func() time.Time { return testNow }, Sieve: NewSieve(SieveConfig{Store: f.st})})}
}

// deliver makes n MX deliveries to bob@big.test, the RCPT's look-up
// included, and adds their wall and CPU time.
func (s *benchSide) deliver(b *testing.B, n int) {
	ctx := context.Background()
	t0, c0 := time.Now(), cpuTime(b)
	for range n {
		tx := s.a.StartMX("someone@sender.example", 0)
		if err := tx.AddRecipient(ctx, "bob@big.test", ""); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(ctx, benchMessage, testNow); err != nil {
			b.Fatal(err)
		}
	}
	s.wall += time.Since(t0)
	s.cpu += cpuTime(b) - c0
	s.n += n
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSieveDelivery: MX deliveries (RCPT look-up, Commit, synced)
// on two real bbolt stores side by side in one run, one mailbox without
// a script and one with a 200-rule script (sieveRules: every rule
// evaluated), in alternating batches of 20 so that whatever else the
// machine does weighs on both alike. It reports each side's wall and
// CPU time per delivery and their ratios (with / without); ns/op is
// the mean of both sides. Steady state: each side delivers once before
// the timer, so the script is cached (the cold cost, its parse, is
// package sieve's BenchmarkParse200Rules). -benchtime 4000x makes
// 2,000 deliveries a side.
func BenchmarkSieveDelivery(b *testing.B) {
	const batch = 20
	base, with := newBenchSide(b, ""), newBenchSide(b, sieveRules(200))
	base.deliver(b, 1)
	with.deliver(b, 1)
	*base, *with = benchSide{a: base.a}, benchSide{a: with.a}
	// The script runs on this path: its last rule discards mail from
	// bounce199@mailer.example.
	ctx := context.Background()
	tx := with.a.StartMX("bounce199@mailer.example", 0)
	if err := tx.AddRecipient(ctx, "bob@big.test", ""); err != nil {
		b.Fatal(err)
	}
	if res, err := tx.Commit(ctx, benchMessage, testNow); err != nil || len(res.Delivered) != 0 {
		b.Fatalf("the script's last rule: delivered %v, %v; want discarded", res.Delivered, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		if i/batch%2 == 0 {
			base.deliver(b, n)
		} else {
			with.deliver(b, n)
		}
	}
	b.StopTimer()
	if base.n == 0 || with.n == 0 {
		return
	}
	per := func(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(base.wall, base.n), "base-wall-ns/op")
	b.ReportMetric(per(with.wall, with.n), "sieve-wall-ns/op")
	b.ReportMetric(per(base.cpu, base.n), "base-cpu-ns/op")
	b.ReportMetric(per(with.cpu, with.n), "sieve-cpu-ns/op")
	b.ReportMetric(per(with.wall, with.n)/per(base.wall, base.n), "wall-ratio")
	b.ReportMetric(per(with.cpu, with.n)/per(base.cpu, base.n), "cpu-ratio")
}
