package imapd

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestThreadWire: the examples of RFC 5256 section 4.
func TestThreadWire(t *testing.T) {
	n := func(seq uint32, kids ...*threadNode) *threadNode {
		return &threadNode{Seq: seq, UID: seq + 100, Children: kids}
	}
	threads := []*threadNode{
		n(2),
		n(3, n(6, n(4, n(23)), n(44, n(7, n(96))))),
	}
	if got, want := threadWire(threads, false), "(2)(3 6 (4 23)(44 7 96))"; got != want {
		t.Errorf("threadWire = %s, want %s", got, want)
	}
	if got, want := threadWire(threads[:1], true), "(102)"; got != want {
		t.Errorf("threadWire with UIDs = %s, want %s", got, want)
	}
	// A dummy parent of 3 and 5.
	if got, want := threadWire([]*threadNode{n(0, n(3), n(5))}, false), "((3)(5))"; got != want {
		t.Errorf("threadWire = %s, want %s", got, want)
	}
	if got := threadWire(nil, false); got != "" {
		t.Errorf("threadWire(nil) = %q", got)
	}
}

func mustThread(msgs []sortMsg, refs bool) string {
	if refs {
		return threadWire(threadReferences(msgs), false)
	}
	return threadWire(threadOrderedSubject(msgs), false)
}

func TestThreadReferences(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2008, 2, 22, h, m, 0, 0, time.UTC) }
	// Dovecot's imaptest "thread" (thread.mbox): a References loop.
	a := mboxMsg(1, at(17, 6), 10, "Message-ID: <a@b>")
	b := mboxMsg(2, at(15, 6), 10, "Message-Id: <b@b>", "References: <c@b> <a@b>")
	c := mboxMsg(3, at(16, 6), 10, "Message-Id: <c@b>", "References: <b@b>")
	if got, want := mustThread([]sortMsg{a, b, c}, true), "(3 1 2)"; got != want {
		t.Errorf("thread.mbox: %s, want %s", got, want)
	}
	// Message 1 expunged: its place is a dummy between 3 and 2, pruned.
	b.Seq, c.Seq = 1, 2
	if got, want := mustThread([]sortMsg{b, c}, true), "(2 1)"; got != want {
		t.Errorf("thread.mbox without 1: %s, want %s", got, want)
	}

	day := func(n int) time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n) }
	for _, tt := range []struct {
		name string
		msgs []sortMsg
		want string
	}{
		{"no ids", []sortMsg{mboxMsg(1, day(1), 1), mboxMsg(2, day(0), 1)}, "(2)(1)"},
		{"reply chain", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "Subject: hi"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "References: <1@x>", "Subject: Re: hi"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "References: <1@x> <2@x>", "Subject: Re: hi"),
			mboxMsg(4, day(3), 1, "Message-ID: <4@x>", "In-Reply-To: <1@x>", "Subject: Re: hi"),
		}, "(1 (2 3)(4))"},
		// In-Reply-To counts only without References, and only its
		// first valid id; an old-style phrase around it is ignored.
		{"in-reply-to", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "In-Reply-To: Your message of Monday <2@x> <1@x>"),
			mboxMsg(4, day(3), 1, "Message-ID: <4@x>", "In-Reply-To: <2@x>", "References: <1@x>"),
		}, "(1 4)(2 3)"},
		// Two replies to a message that is not there: a dummy parent.
		{"dummy with two children", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "References: <gone@x>", "Subject: a"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "References: <gone@x>", "Subject: b"),
		}, "((1)(2))"},
		// A dummy with one child is the child.
		{"dummy with one child", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "References: <gone@x> <also-gone@x>", "Subject: a"),
		}, "(1)"},
		// Duplicate Message-IDs: the first is the one referenced.
		{"duplicate ids", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <d@x>", "Subject: one"),
			mboxMsg(2, day(1), 1, "Message-ID: <d@x>", "Subject: two"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "References: <d@x>", "Subject: three"),
		}, "(1 3)(2)"},
		// A loop through two messages, and a message referencing itself.
		{"loop", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <a@x>", "References: <b@x>"),
			mboxMsg(2, day(1), 1, "Message-ID: <b@x>", "References: <a@x>"),
			mboxMsg(3, day(2), 1, "Message-ID: <s@x>", "References: <s@x>"),
		}, "(2 1)(3)"},
		{"loop in one References", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <m@x>", "References: <p@x> <q@x> <p@x>"),
		}, "(1)"},
		// Missing and invalid Dates sort by arrival.
		{"missing dates", []sortMsg{
			mboxMsg(1, day(5), 1, "Message-ID: <1@x>", "Subject: a"),
			mboxMsg(2, day(0), 1, "Message-ID: <2@x>", "Date: Tue, 10 Nov 2026 00:00:00 +0000", "Subject: b"),
			mboxMsg(3, day(1), 1, "Message-ID: <3@x>", "Date: garbage", "Subject: c"),
		}, "(3)(1)(2)"},
		// Step 5: threads of one base subject are merged; a reply goes
		// under the message that is not one.
		{"subject merge, reply", []sortMsg{
			mboxMsg(1, day(1), 1, "Message-ID: <1@x>", "Subject: Re: lunch"),
			mboxMsg(2, day(0), 1, "Message-ID: <2@x>", "Subject: lunch"),
		}, "(2 1)"},
		{"subject merge, neither a reply", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "Subject: lunch"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "Subject: LUNCH"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "Subject: [list] lunch"),
		}, "((1)(2)(3))"},
		{"subject merge into a dummy", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "References: <gone@x>", "Subject: Re: plan"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "References: <gone@x>", "Subject: Re: plan"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "Subject: plan"),
		}, "((1)(2)(3))"},
		{"empty subjects are not merged", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "Subject: Re:"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>"),
		}, "(1)(2)"},
		// A reply that arrived before what it replies to.
		{"out of order", []sortMsg{
			mboxMsg(1, day(1), 1, "Message-ID: <2@x>", "References: <1@x>", "Subject: Re: x"),
			mboxMsg(2, day(0), 1, "Message-ID: <1@x>", "Subject: x"),
		}, "(2 1)"},
	} {
		if got := mustThread(tt.msgs, true); got != tt.want {
			t.Errorf("%s: THREAD REFERENCES = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestThreadRefs: THREAD=REFS (draft-ietf-morg-inthread) links as
// REFERENCES does, gathers nothing by subject, and orders the threads by
// their latest message.
func TestThreadRefs(t *testing.T) {
	day := func(n int) time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n) }
	for _, tt := range []struct {
		name string
		msgs []sortMsg
		want string
	}{
		{"no ids", []sortMsg{mboxMsg(1, day(1), 1), mboxMsg(2, day(0), 1)}, "(2)(1)"},
		// A late reply moves its thread after a newer one.
		{"latest reply", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "Subject: old"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "Subject: new"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "References: <1@x>", "Subject: Re: old"),
		}, "(2)(1 3)"},
		// Children stay in sent-date order within the thread.
		{"siblings by date", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>"),
			mboxMsg(2, day(3), 1, "Message-ID: <2@x>", "In-Reply-To: <1@x>"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>", "In-Reply-To: <1@x>"),
			mboxMsg(4, day(1), 1, "Message-ID: <4@x>"),
		}, "(4)(1 (3)(2))"},
		// No gathering by base subject, unlike REFERENCES' step 5.
		{"no subject merge", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "Subject: lunch"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>", "Subject: Re: lunch"),
		}, "(1)(2)"},
		// A dummy keeps its children; it sorts by the latest of them.
		{"dummy", []sortMsg{
			mboxMsg(1, day(0), 1, "Message-ID: <1@x>", "References: <gone@x>"),
			mboxMsg(2, day(4), 1, "Message-ID: <2@x>", "References: <gone@x>"),
			mboxMsg(3, day(2), 1, "Message-ID: <3@x>"),
		}, "(3)((1)(2))"},
		// Equal latest dates: the thread of the lower message first.
		{"tie", []sortMsg{
			mboxMsg(1, day(1), 1, "Message-ID: <1@x>"),
			mboxMsg(2, day(1), 1, "Message-ID: <2@x>"),
		}, "(1)(2)"},
	} {
		if got := threadWire(threadRefs(tt.msgs), false); got != tt.want {
			t.Errorf("%s: THREAD REFS = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestThreadOrderedSubject(t *testing.T) {
	day := func(n int) time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n) }
	msgs := []sortMsg{
		mboxMsg(1, day(3), 1, "Subject: b"),
		mboxMsg(2, day(0), 1, "Subject: a"),
		mboxMsg(3, day(4), 1, "Subject: Re: a"),
		mboxMsg(4, day(1), 1, "Subject: Fwd: B"),
		mboxMsg(5, day(2), 1, "Subject: c"),
		mboxMsg(6, day(2), 1, "Subject: [x] a"),
		mboxMsg(7, day(0), 1),
	}
	// Threads by the date of their first message (2 and 7 tie: sequence
	// order); the first the parent of all the others.
	if got, want := mustThread(msgs, false), "(2 (6)(3))(7)(4 1)(5)"; got != want {
		t.Errorf("THREAD ORDEREDSUBJECT = %s, want %s", got, want)
	}
}

// synthetic is n messages in threads of 1 to 40, each reply's References
// the ids above it (at most 10, as clients cut them), a tenth of them
// arriving out of order, subjects with list tags and "Re:".
func synthetic(n int) []sortMsg {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]sortMsg, 0, n)
	for thread := 0; len(msgs) < n; thread++ {
		size := 1 + r.IntN(40)
		var chain []string
		subj := fmt.Sprintf("[list-%d] Topic number %d about %x", thread%7, thread, r.Uint32())
		for i := 0; i < size && len(msgs) < n; i++ {
			id := fmt.Sprintf("%d.%d.%x@mail.example.org", thread, i, r.Uint64())
			var b strings.Builder
			seq := uint32(len(msgs) + 1)
			sent := base.Add(time.Duration(seq)*time.Minute - time.Duration(r.IntN(600))*time.Second)
			fmt.Fprintf(&b, "Date: %s\r\n", sent.Format(rfc5322Date))
			fmt.Fprintf(&b, "From: \"Sender %d\" <user%d@example.org>\r\n", r.IntN(500), r.IntN(500))
			fmt.Fprintf(&b, "To: list-%d@lists.example.org\r\n", thread%7)
			s := subj
			if i > 0 {
				s = "Re: " + subj
				refs := chain[max(0, len(chain)-10):]
				if r.IntN(10) == 0 && len(refs) > 1 {
					refs = refs[1:] // a client that cut the list
				}
				fmt.Fprintf(&b, "In-Reply-To: <%s>\r\n", refs[len(refs)-1])
				b.WriteString("References:")
				for _, ref := range refs {
					fmt.Fprintf(&b, "\r\n <%s>", ref)
				}
				b.WriteString("\r\n")
			}
			fmt.Fprintf(&b, "Subject: %s\r\nMessage-ID: <%s>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", s, id)
			chain = append(chain, id)
			msgs = append(msgs, sortMsg{Seq: seq, UID: seq, Size: int64(500 + r.IntN(50000)), Arrival: sent, Header: []byte(b.String())})
		}
	}
	// A tenth out of order: swap with a neighbour.
	for i := 0; i+1 < len(msgs); i += 10 {
		msgs[i].Header, msgs[i+1].Header = msgs[i+1].Header, msgs[i].Header
	}
	return msgs
}

// TestThreadSynthetic: every message is in the answer once.
func TestThreadSynthetic(t *testing.T) {
	msgs := synthetic(2000)
	for _, refs := range []bool{true, false} {
		var threads []*threadNode
		if refs {
			threads = threadReferences(msgs)
		} else {
			threads = threadOrderedSubject(msgs)
		}
		seen := map[uint32]int{}
		var walk func(n *threadNode)
		walk = func(n *threadNode) {
			if n.Seq != 0 {
				seen[n.Seq]++
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		for _, th := range threads {
			walk(th)
		}
		if len(seen) != len(msgs) {
			t.Errorf("refs %v: %d messages in the threads, want %d", refs, len(seen), len(msgs))
		}
		for seq, n := range seen {
			if n != 1 {
				t.Errorf("refs %v: message %d in the threads %d times", refs, seq, n)
			}
		}
	}
}

// benchSizes runs fn over synthetic folders of 10,000 and 100,000
// messages, reporting the CPU time per operation too (cpu-ms/op, the
// process's user and system time, GC included): wall time says little on
// a shared machine.
func benchSizes(b *testing.B, fn func(msgs []sortMsg)) {
	for _, n := range []int{10_000, 100_000} {
		msgs := synthetic(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				fn(msgs)
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

func BenchmarkSortSubject(b *testing.B) {
	crit := []sortCriterion{{Key: sortSubject}}
	benchSizes(b, func(msgs []sortMsg) { sortMessages(msgs, crit) })
}

func BenchmarkSortReverseDate(b *testing.B) {
	crit := []sortCriterion{{Key: sortDate, Reverse: true}}
	benchSizes(b, func(msgs []sortMsg) { sortMessages(msgs, crit) })
}

func BenchmarkSortDisplayFrom(b *testing.B) {
	crit := []sortCriterion{{Key: sortDisplayFrom}, {Key: sortSize, Reverse: true}}
	benchSizes(b, func(msgs []sortMsg) { sortMessages(msgs, crit) })
}

func BenchmarkThreadReferences(b *testing.B) {
	benchSizes(b, func(msgs []sortMsg) { threadWire(threadReferences(msgs), false) })
}

func BenchmarkThreadOrderedSubject(b *testing.B) {
	benchSizes(b, func(msgs []sortMsg) { threadWire(threadOrderedSubject(msgs), false) })
}

// TestThreadDeepChain: a reply chain 20,000 long, each References
// naming the ten messages above it, is one thread, in order.
func TestThreadDeepChain(t *testing.T) {
	const n = 20_000
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]sortMsg, n)
	for i := range msgs {
		var refs []string
		for j := max(0, i-10); j < i; j++ {
			refs = append(refs, fmt.Sprintf("<%d@x>", j))
		}
		f := []string{fmt.Sprintf("Message-ID: <%d@x>", i), "Subject: Re: deep"}
		if len(refs) > 0 {
			f = append(f, "References: "+strings.Join(refs, "\r\n "))
		}
		msgs[i] = mboxMsg(uint32(i+1), at.Add(time.Duration(i)*time.Second), 1, f...)
	}
	threads := threadReferences(msgs)
	if len(threads) != 1 {
		t.Fatalf("%d threads, want 1", len(threads))
	}
	depth := 0
	for n := threads[0]; ; n = n.Children[0] {
		depth++
		if n.Seq != uint32(depth) {
			t.Fatalf("message at depth %d is %d", depth, n.Seq)
		}
		if len(n.Children) != 1 {
			break
		}
	}
	if depth != n {
		t.Errorf("chain of %d, want %d", depth, n)
	}
}
