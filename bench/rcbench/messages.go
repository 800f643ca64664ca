package main

import (
	"fmt"
	"math/rand/v2"
	"mime"
	"strings"
	"time"
)

// The corpus is deterministic (seeded), so both servers hold the same
// messages under the same UIDs when filled in the same order. It is made
// to exercise what Roundcube's sorts and threads depend on: subjects with
// Re:/Fwd: prefixes, mixed case and RFC 2047 encoded words; senders with
// and without display names, upper and lower case; dates not in arrival
// order; replies that name their parent in In-Reply-To and References.

var subjects = []string{
	"Quarterly report", "invoice for March", "Lunch on Friday?", "Server maintenance window",
	"Holiday plans", "Contract renewal", "welcome aboard", "Meeting notes", "Travel booking",
	"Budget review", "Café menu", "Über die Planung", "Résumé attached", "Project kickoff",
	"newsletter: autumn edition", "Password reset", "Order shipped", "Team offsite", "Zebra crossing",
	"alpha release",
}

var senders = []struct{ name, addr string }{
	{"Alice Example", "alice@example.com"},
	{"", "bob@example.org"},
	{"Carol Müller", "carol@example.net"},
	{"Dave", "Dave@Example.com"},
	{"", "eve@corp.example"},
	{"Frank O'Neil", "frank@example.com"},
	{"Grace Hopper", "grace@navy.example"},
	{"", "Heidi@example.org"},
	{"Ivan Petrov", "ivan@example.ru"},
	{"Judy", "judy@example.com"},
	{"Zoë Quinn", "zoe@example.net"},
	{"mallory", "mallory@example.com"},
}

// message returns message i (0-based) of the corpus.
func message(i int, rng *rand.Rand, base time.Time) []byte {
	s := senders[rng.IntN(len(senders))]
	topic := rng.IntN(len(subjects))
	subj := subjects[topic]
	// About a third are replies or forwards in a thread of their topic.
	var inReplyTo string
	switch r := rng.IntN(9); {
	case r < 2 && i > 0:
		subj = "Re: " + subj
		inReplyTo = fmt.Sprintf("<m%d.%d@bench.test>", topic, rng.IntN(i))
	case r == 2 && i > 0:
		subj = "RE: re: " + subj
		inReplyTo = fmt.Sprintf("<m%d.%d@bench.test>", topic, rng.IntN(i))
	case r == 3:
		subj = "Fwd: " + subj
	case r == 4:
		subj = strings.ToUpper(subj[:1]) + subj[1:]
	}
	subj = fmt.Sprintf("%s #%d", subj, rng.IntN(50))
	if rng.IntN(5) == 0 || !isASCII(subj) {
		subj = mime.QEncoding.Encode("utf-8", subj)
	}
	from := "<" + s.addr + ">"
	if s.name != "" {
		from = mime.QEncoding.Encode("utf-8", s.name) + " " + from
	}
	// Dates spread over a year, not in arrival order.
	date := base.Add(-time.Duration(rng.IntN(365*24*60)) * time.Minute)
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\n", from)
	fmt.Fprintf(&b, "To: Bench User <user@bench.test>\r\n")
	fmt.Fprintf(&b, "Subject: %s\r\n", subj)
	fmt.Fprintf(&b, "Date: %s\r\n", date.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <m%d.%d@bench.test>\r\n", topic, i)
	if inReplyTo != "" {
		fmt.Fprintf(&b, "In-Reply-To: %s\r\nReferences: %s\r\n", inReplyTo, inReplyTo)
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	fmt.Fprintf(&b, "Message %d about %s.\r\n\r\n", i, subjects[topic])
	for n := 20 + rng.IntN(40); n > 0; n-- {
		b.WriteString("The quick brown fox jumps over the lazy dog, and then some more words.\r\n")
	}
	return []byte(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
