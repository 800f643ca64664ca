package imapd

import (
	"bufio"
	"compress/flate"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// variedBody is a 4 KB message whose header varies as a real folder's do
// (senders, recipients, subjects, dates, Message-IDs with random parts,
// replies with References), so that what COMPRESS saves is not flattered
// by benchBody's identical headers.
func variedBody(r *rand.Rand, i int) []byte {
	words := strings.Fields("invoice meeting report quarterly update project review lunch friday budget draft contract " +
		"release notes travel plans team offsite server migration holiday schedule customer feedback question urgent")
	names := strings.Fields("Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil Trent Victor Walter")
	domains := strings.Fields("example.org example.net mail.example.com corp.example lists.example.org shop.example")
	person := func() string {
		f, l := names[r.IntN(len(names))], names[r.IntN(len(names))]
		return fmt.Sprintf("%s %s <%s.%s%d@%s>", f, l, strings.ToLower(f), strings.ToLower(l), r.IntN(100), domains[r.IntN(len(domains))])
	}
	var subj []string
	for range 2 + r.IntN(6) {
		subj = append(subj, words[r.IntN(len(words))])
	}
	var h strings.Builder
	fmt.Fprintf(&h, "From: %s\r\nTo: %s\r\n", person(), person())
	if r.IntN(3) == 0 {
		fmt.Fprintf(&h, "Cc: %s, %s\r\n", person(), person())
	}
	re := ""
	if r.IntN(3) == 0 {
		re = "Re: "
		fmt.Fprintf(&h, "In-Reply-To: <%016x@%s>\r\nReferences: <%016x@%s>\r\n", r.Uint64(), domains[r.IntN(len(domains))], r.Uint64(), domains[r.IntN(len(domains))])
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*37*time.Minute + time.Duration(r.IntN(3600))*time.Second)
	fmt.Fprintf(&h, "Subject: %s%s #%d\r\nDate: %s\r\nMessage-ID: <%016x.%d@%s>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
		re, strings.Join(subj, " "), r.IntN(10000), at.Format(time.RFC1123Z), r.Uint64(), i, domains[r.IntN(len(domains))])
	line := "the quick brown fox jumps over the lazy dog, and again, 0123456789\r\n"
	body := strings.Repeat(line, 4096/len(line)+1)
	return []byte(h.String() + body[:max(4096-h.Len(), 0)])
}

// countingConn counts the bytes read off the connection.
type countingConn struct {
	net.Conn
	n int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n += int64(n)
	return n, err
}

// BenchmarkFolderOpenCompress is the bytes a client reads to open a folder
// of 10,000 messages, SELECT and then the listing fetch, without and with
// COMPRESS=DEFLATE (RFC 4978): "envelope" is UID FETCH 1:* (UID FLAGS
// RFC822.SIZE INTERNALDATE ENVELOPE), "headers" Thunderbird's listing by
// header fields. It reports wire bytes per open and their share of the
// uncompressed bytes (the target: at most 30%).
func BenchmarkFolderOpenCompress(b *testing.B) {
	const n = 10_000
	e := newEnv(b, envOptions{insecureAuth: true})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := w; i < n; i += 8 {
				if _, err := e.st.Deliver(context.Background(), mailstore.Delivery{
					Body: variedBody(r, i), ReceivedAt: time.Now(), MailboxIDs: []int64{e.mb.ID},
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	listings := map[string]string{
		"envelope": "UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)",
		"headers":  "UID FETCH 1:* (UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (From To Cc Bcc Subject Date Message-ID Priority X-Priority References Newsgroups In-Reply-To Content-Type Reply-To)])",
	}
	plain := map[string]float64{}
	for _, listing := range []string{"envelope", "headers"} {
		for _, compress := range []bool{false, true} {
			name := listing + "/plain"
			if compress {
				name = listing + "/deflate"
			}
			b.Run(name, func(b *testing.B) {
				var wire int64
				for b.Loop() {
					wire += openFolder(b, e.addr, compress, listings[listing], n)
				}
				per := float64(wire) / float64(b.N)
				b.ReportMetric(per, "wire-B/open")
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
				if !compress {
					plain[listing] = per
				} else if plain[listing] > 0 {
					b.ReportMetric(100*per/plain[listing], "%-of-plain")
				}
			})
		}
	}
}

// openFolder logs in on a new connection, enables COMPRESS if asked,
// SELECTs INBOX and runs listing; it answers the bytes read off the
// socket, greeting and login included.
func openFolder(b *testing.B, addr string, compress bool, listing string, n int) int64 {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	cc := &countingConn{Conn: nc}
	var r *bufio.Reader = bufio.NewReaderSize(cc, 64<<10)
	var w io.Writer = nc
	var zw *flate.Writer
	send := func(s string) {
		if _, err := io.WriteString(w, s); err != nil {
			b.Fatal(err)
		}
		if zw != nil {
			zw.Flush()
		}
	}
	wait := func(tag string) int {
		lines := 0
		for {
			l, err := r.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil {
				b.Fatalf("read: %v", err)
			}
			if n, _, ok := literalAtEnd(l); ok {
				if _, err := r.Discard(int(n)); err != nil {
					b.Fatal(err)
				}
				lines++
				continue
			}
			if strings.HasPrefix(string(l), tag+" ") {
				if !strings.HasPrefix(string(l), tag+" OK") {
					b.Fatalf("%s", l)
				}
				return lines
			}
			if strings.HasPrefix(string(l), "* ") && strings.Contains(string(l), " FETCH (") {
				lines++
			}
		}
	}
	r.ReadSlice('\n') // greeting
	send(`a LOGIN "alice@example.com" "alice's secret"` + "\r\n")
	wait("a")
	if compress {
		send("z COMPRESS DEFLATE\r\n")
		wait("z")
		zw, _ = flate.NewWriter(nc, flate.DefaultCompression)
		w = zw
		r = bufio.NewReaderSize(flate.NewReader(io.MultiReader(io.LimitReader(r, int64(r.Buffered())), cc)), 64<<10)
	}
	send("s SELECT INBOX\r\n")
	wait("s")
	send("f " + listing + "\r\n")
	if got := wait("f"); got != n {
		b.Fatalf("%s: %d FETCH responses, want %d", listing, got, n)
	}
	return cc.n
}
