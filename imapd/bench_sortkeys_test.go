package imapd

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSortKeys is SORT and THREAD over 100,000 messages' kept keys
// (sortkeys.go), without the server: what a warm SORT costs beyond the
// search and the answer. The messages are bench/folderbench's -threads
// 10: conversations spread over the folder.
func BenchmarkSortKeys(b *testing.B) {
	const n = 100_000
	base := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	msgs := make([]sortMsg, n)
	nt := n / 10
	for i := range msgs {
		t, r := i%nt, i/nt
		subj := fmt.Sprintf("topic %d of the weekly report", (t*7919)%nt)
		h := fmt.Sprintf("Date: %s\r\nFrom: \"User %d\" <u%d@example.org>\r\nSubject: %s\r\nMessage-ID: <t%d.r%d@x>\r\n",
			base.Add(time.Duration(i+(i*7919)%600-300)*time.Second).Format(time.RFC1123Z), (i*31)%997, (i*31)%997, subj, t, r)
		if r > 0 {
			h = "Subject: Re: " + h[len("Subject: "):] // a reply; the first field is replaced below
			h = fmt.Sprintf("Date: %s\r\nFrom: u%d@example.org\r\nSubject: Re: %s\r\nMessage-ID: <t%d.r%d@x>\r\nIn-Reply-To: <t%d.r%d@x>\r\nReferences: <t%d.r0@x> <t%d.r%d@x>\r\n",
				base.Add(time.Duration(i+(i*7919)%600-300)*time.Second).Format(time.RFC1123Z), (i*31)%997, subj, t, r, t, r-1, t, t, r-1)
		}
		msgs[i] = sortMsg{Seq: uint32(i + 1), UID: uint32(i + 1), Size: int64(i % 1000), Arrival: base.Add(time.Duration(i) * time.Second), Header: []byte(h + "\r\n")}
	}
	f, kept := keptFolder(msgs)
	for _, p := range []string{"DATE", "SUBJECT", "FROM", "REVERSE DATE SUBJECT"} {
		c, _ := parseSortCriteria([]string{p})
		if p == "REVERSE DATE SUBJECT" {
			c = []sortCriterion{{sortDate, true}, {sortSubject, false}}
		}
		b.Run("SORT_"+p, func(b *testing.B) {
			for b.Loop() {
				orderMsgs(kept, c, f.rank)
			}
		})
	}
	b.Run("rank_SUBJECT", func(b *testing.B) {
		for b.Loop() {
			f.ranks[sortSubject] = nil
			f.rank(sortSubject)
		}
	})
	b.Run("THREAD_REFERENCES", func(b *testing.B) {
		for b.Loop() {
			threadReferences(kept)
		}
	})
	b.Run("THREAD_REFS", func(b *testing.B) {
		for b.Loop() {
			threadRefs(kept)
		}
	})
	// A folder's first SORT (SUBJECT): every key decoded, ranked, then
	// the counting sort; against comparing the decoded keys directly.
	subj := []sortCriterion{{Key: sortSubject}}
	b.Run("first_SORT_SUBJECT", func(b *testing.B) {
		for b.Loop() {
			g := &folderKeys{}
			keys := make([]msgKeys, len(msgs))
			uids := make([]uint32, len(msgs))
			ms := make([]sortMsg, len(msgs))
			for i := range msgs {
				decodeKeys(&keys[i], msgs[i].Header, msgs[i].Arrival, groupSubject)
				uids[i] = msgs[i].UID
			}
			g.insert(uids, keys)
			for i := range ms {
				ms[i] = sortMsg{Seq: msgs[i].Seq, UID: msgs[i].UID, K: &g.keys[i], pos: int32(i)}
			}
			orderMsgs(ms, subj, g.rank)
		}
	})
	b.Run("first_SORT_SUBJECT_compare", func(b *testing.B) {
		for b.Loop() {
			sortMessages(msgs, subj)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			var k msgKeys
			for i := range msgs[:1000] {
				k = msgKeys{}
				decodeKeys(&k, msgs[i].Header, msgs[i].Arrival, ^keyGroup(0))
			}
		}
	})
}
