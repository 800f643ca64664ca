package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sample is one delivered message: when its 250 came and how long after
// the end of DATA.
type sample struct {
	done time.Time
	lat  time.Duration
}

// body is the part of every message after its headers: printable lines of
// 72 characters, so that no server re-encodes or rejects it. It is built
// once; each message only writes its own headers in front of it.
func body(size, headerLen int) []byte {
	var b bytes.Buffer
	line := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 1) + "\r\n"
	want := max(size-headerLen, 2)
	for b.Len()+len(line) <= want-2 {
		b.WriteString(line)
	}
	for b.Len() < want-2 {
		b.WriteByte('x')
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// mxSender is the sender of the messages delivered to the MX.
const mxSender = "load@sender.test"

// header is message id's headers, padded with an X-Pad header to length
// bytes (when shorter) so that every message has exactly the size asked for.
func header(id int, from, to, date string, length int) []byte {
	h := fmt.Appendf(nil, "From: %s\r\nTo: %s\r\nSubject: load %09d\r\nMessage-ID: <load-%09d@sender.test>\r\nDate: %s\r\nX-Pad: ",
		from, to, id, id, date)
	for len(h)+4 < length {
		h = append(h, 'p')
	}
	return append(h, "\r\n\r\n"...)
}

// deliver sends o.n messages over o.conns connections, each taking the next
// message number from a shared counter; message i goes to addrs[i%len].
func deliver(ctx context.Context, o options, addrs []string) (*deliverResult, error) {
	date := time.Now().Format(time.RFC1123Z)
	hlen := 0
	for _, a := range addrs {
		hlen = max(hlen, len(header(0, mxSender, a, date, 0)))
	}
	tail := body(o.size, hlen)
	for _, a := range addrs {
		if err := dotSafe(append(header(0, mxSender, a, date, hlen), tail...)); err != nil {
			return nil, fmt.Errorf("smtp: %w", err)
		}
	}

	var next, late atomic.Int64
	samples := make([][]sample, o.conns)
	errs := make(chan error, o.conns)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range o.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := deliverOn(ctx, o, c, addrs, date, tail, hlen, start, &next, &late, &samples[c]); err != nil {
				errs <- err
				next.Store(int64(o.n)) // stop the others: the figures would be wrong
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	var all []sample
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) != o.n {
		return nil, fmt.Errorf("smtp: %d messages delivered, want %d", len(all), o.n)
	}
	r := &deliverResult{start: start, Messages: len(all), Seconds: elapsed.Seconds(), Rate: float64(len(all)) / elapsed.Seconds(),
		TargetRate: o.rate, Late: int(late.Load())}
	r.MBps = r.Rate * float64(o.size) / (1 << 20)
	r.Latency = latencies(all)
	if o.slice > 0 {
		slices.SortFunc(all, func(a, b sample) int { return a.done.Compare(b.done) })
		from := start
		for i := 0; i < len(all); i += o.slice {
			part := all[i:min(i+o.slice, len(all))]
			to := part[len(part)-1].done
			r.Slices = append(r.Slices, sliceResult{
				First: i + 1, Last: i + len(part),
				Rate:    float64(len(part)) / to.Sub(from).Seconds(),
				Latency: latencies(part),
			})
			from = to
		}
	}
	return r, nil
}

// deliverOn is connection n's loop: MAIL, RCPT, DATA per message, timing
// from the client's end of DATA to the reply. The connections go round
// robin to the servers of -smtp (several nodes: one load, as a client
// population spread by DNS would be), and take the next message from
// one count, so a faster server gets more of them.
//
// With -rate R, message i starts no earlier than i/R seconds after the
// start, whichever connection takes it (an open-loop schedule, so a slow
// reply does not lower the offered rate while connections are free);
// a message that starts more than 10 ms after its time is counted late:
// the connections could not keep up with the rate.
func deliverOn(ctx context.Context, o options, n int, addrs []string, date string, tail []byte, hlen int, start time.Time, next, late *atomic.Int64, out *[]sample) error {
	servers := strings.Split(o.smtpAddr, ",")
	c, err := dialSMTP(servers[n%len(servers)], "load.sender.test", 10*time.Second)
	if err != nil {
		return err
	}
	c.bdat, c.pipe = o.bdat, o.pipelining
	defer c.conn.Close()
	for ctx.Err() == nil {
		i := int(next.Add(1)) - 1
		if i >= o.n {
			return c.quit()
		}
		if o.rate > 0 {
			at := start.Add(time.Duration(float64(i) / o.rate * float64(time.Second)))
			if d := time.Until(at); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return ctx.Err()
				}
			} else if d < -10*time.Millisecond {
				late.Add(1)
			}
		}
		to := addrs[i%len(addrs)]
		lat, err := c.send(mxSender, to, header(i, mxSender, to, date, hlen), tail)
		if err != nil {
			return err
		}
		*out = append(*out, sample{done: time.Now(), lat: lat})
	}
	return ctx.Err()
}

// latencies summarises end-of-DATA-to-250 times.
func latencies(s []sample) latencyResult {
	d := make([]time.Duration, len(s))
	for i := range s {
		d[i] = s[i].lat
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	if len(d) == 0 {
		return latencyResult{}
	}
	return latencyResult{P50ms: ms(d[len(d)/2]), P99ms: ms(d[min(len(d)*99/100, len(d)-1)]), Maxms: ms(d[len(d)-1])}
}

func (r *deliverResult) print(o options) {
	cmd := "DATA"
	if o.bdat {
		cmd = "BDAT"
	}
	fmt.Printf("smtp: %d messages of %d bytes (%s) over %d connections to %d mailboxes in %.2fs: %.0f msg/s, %.1f MB/s\n",
		r.Messages, o.size, cmd, o.conns, o.mailboxes, r.Seconds, r.Rate, r.MBps)
	if r.TargetRate > 0 {
		fmt.Printf("smtp: rate asked %.0f msg/s, achieved %.1f msg/s; %d messages started more than 10 ms late\n", r.TargetRate, r.Rate, r.Late)
	}
	fmt.Printf("smtp: end of DATA to reply: median %.2f ms, p99 %.2f ms, max %.2f ms\n", r.Latency.P50ms, r.Latency.P99ms, r.Latency.Maxms)
	for _, s := range r.Slices {
		fmt.Printf("smtp:   messages %6d-%6d: %6.0f msg/s, median %.2f ms, p99 %.2f ms\n", s.First, s.Last, s.Rate, s.Latency.P50ms, s.Latency.P99ms)
	}
}
