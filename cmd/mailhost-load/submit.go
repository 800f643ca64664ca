package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// probeID is the Message-ID number of the probe message sent before the
// timed submissions; the timed ones are 0..N-1.
const probeID = 999999999

// submitResult is what the submission phase measured.
type submitResult struct {
	Messages int     `json:"messages"`
	Sessions int     `json:"sessions"`
	Seconds  float64 `json:"seconds"`
	// Rate is messages accepted (250 after DATA) into the queue per second,
	// from the first MAIL to the last 250.
	Rate float64 `json:"msgs_per_s"`
	MBps float64 `json:"mb_per_s"`
	// Latency is from the client's end of DATA to the server's reply.
	Latency latencyResult `json:"end_of_data_to_reply"`
	// LoginSeconds is the time to open every session (connect, EHLO,
	// STARTTLS, EHLO, AUTH PLAIN), before the clock starts.
	LoginSeconds float64     `json:"login_seconds"`
	Sink         *sinkResult `json:"sink,omitempty"`
	// Server covers the timed submissions and the drain.
	Server *serverResult `json:"server"`
}

// sinkResult is what the loopback sink saw of the timed messages.
type sinkResult struct {
	// ProbeSeconds is from the probe's 250 to its arrival at the sink.
	ProbeSeconds float64 `json:"probe_seconds"`
	// BacklogAtLastSubmit is how many timed messages had not yet arrived
	// when the last submission's 250 came.
	BacklogAtLastSubmit int `json:"backlog_at_last_submit"`
	// Sessions is how many SMTP sessions mailhost opened to the sink.
	Sessions int `json:"sink_sessions"`
	// FirstToLastSeconds is from the first timed submission (its MAIL) to
	// the last timed message arriving; EndToEndRate is N over it.
	FirstToLastSeconds float64 `json:"first_submit_to_last_arrival_seconds"`
	EndToEndRate       float64 `json:"end_to_end_msgs_per_s"`
	// DrainRate is N over the time from the first to the last arrival.
	DrainRate float64 `json:"drain_msgs_per_s"`
	// LagSeconds is from the last submission's 250 to the last arrival:
	// about 0 when the queue drains as fast as it fills.
	LagSeconds float64 `json:"lag_after_last_submit_seconds"`
	// WhileFillingRate is the arrivals per second from the first
	// submission to the last 250; AfterRate the backlog over the lag.
	WhileFillingRate float64 `json:"drain_while_filling_msgs_per_s"`
	AfterRate        float64 `json:"drain_after_filling_msgs_per_s"`
	Duplicates       int     `json:"duplicates"`
	Unknown          int     `json:"unknown"`
}

// submission is one authenticated session and the mailbox it sends as.
type submission struct {
	c    *smtpConn
	from string
}

// openSubmissions opens o.conns sessions at once, session i logged in as
// addrs[i%len]: connect, EHLO, STARTTLS, EHLO, AUTH PLAIN.
func openSubmissions(o options, addrs []string) ([]submission, error) {
	subs := make([]submission, o.conns)
	errs := make(chan error, o.conns)
	var wg sync.WaitGroup
	for i := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := addrs[i%len(addrs)]
			c, err := dialSMTP(o.submission, "load.client.test", 10*time.Second)
			if err == nil {
				if err = c.startTLS("load.client.test"); err == nil {
					err = c.authPlain(from, o.password)
				}
				if err != nil {
					c.conn.Close()
				}
			}
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			subs[i] = submission{c: c, from: from}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		for _, s := range subs {
			if s.c != nil {
				s.c.conn.Close()
			}
		}
		return nil, err
	}
	return subs, nil
}

// submit sends o.submitN messages of o.size bytes over o.conns
// authenticated submission sessions to remote recipients
// rcptK@o.rcptDomain, each from its session's own address (envelope and
// From:). With a sink, a probe message goes first and must arrive there;
// then the timed messages, and the wait until the sink has them all.
func submit(ctx context.Context, o options, addrs []string, k *sink) (*submitResult, error) {
	date := time.Now().Format(time.RFC1123Z)
	rcpt := func(i int) string { return fmt.Sprintf("rcpt%d@%s", i%1000, o.rcptDomain) }
	hlen := 0
	for _, a := range addrs[:min(len(addrs), o.conns)] {
		hlen = max(hlen, len(header(probeID, a, rcpt(999), date, 0)))
	}
	tail := body(o.size, hlen)
	if err := dotSafe(append(header(probeID, addrs[0], rcpt(999), date, hlen), tail...)); err != nil {
		return nil, fmt.Errorf("submission: %w", err)
	}

	t0 := time.Now()
	subs, err := openSubmissions(o, addrs)
	if err != nil {
		return nil, fmt.Errorf("submission: %w", err)
	}
	defer func() {
		for _, s := range subs {
			s.c.conn.Close()
		}
	}()
	r := &submitResult{Sessions: o.conns, LoginSeconds: time.Since(t0).Seconds()}
	fmt.Printf("submission: %d sessions opened (STARTTLS, AUTH PLAIN) in %.2fs\n", o.conns, r.LoginSeconds)

	if k != nil {
		s := subs[0]
		if _, err := s.c.send(s.from, rcpt(999), header(probeID, s.from, rcpt(999), date, hlen), tail); err != nil {
			return nil, fmt.Errorf("submission: probe message: %w", err)
		}
		sent := time.Now()
		for !k.has(probeID) {
			if time.Since(sent) > o.probeTimeout {
				return nil, fmt.Errorf("the probe message was queued (250) but did not reach the sink at %s within %s: is mailhost started with MAILHOST_RELAY=%s?",
					k.ln.Addr(), o.probeTimeout, k.ln.Addr())
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, first, _ := k.arrivals(probeID, probeID+1)
		r.Sink = &sinkResult{ProbeSeconds: first.Sub(sent).Seconds()}
		fmt.Printf("sink: probe message arrived %.3fs after its 250\n", r.Sink.ProbeSeconds)
	}

	ph := startPhase(o.pid, o.cpuTrees)
	var next atomic.Int64
	samples := make([][]sample, len(subs))
	errs := make(chan error, len(subs))
	var wg sync.WaitGroup
	start := time.Now()
	for c, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= o.submitN {
					if err := s.c.quit(); err != nil {
						errs <- fmt.Errorf("session %d: QUIT: %w", c, err)
					}
					return
				}
				lat, err := s.c.send(s.from, rcpt(i), header(i, s.from, rcpt(i), date, hlen), tail)
				if err != nil {
					errs <- fmt.Errorf("session %d as %s: %w", c, s.from, err)
					next.Store(int64(o.submitN)) // stop the others: the figures would be wrong
					return
				}
				samples[c] = append(samples[c], sample{done: time.Now(), lat: lat})
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("submission: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var all []sample
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) != o.submitN {
		return nil, fmt.Errorf("submission: %d messages accepted, want %d", len(all), o.submitN)
	}
	lastSubmit := slices.MaxFunc(all, func(a, b sample) int { return a.done.Compare(b.done) }).done
	el := lastSubmit.Sub(start)
	r.Messages, r.Seconds = len(all), el.Seconds()
	r.Rate = float64(len(all)) / el.Seconds()
	r.MBps = r.Rate * float64(o.size) / (1 << 20)
	r.Latency = latencies(all)
	fmt.Printf("submission: %d messages of %d bytes from %d sessions (STARTTLS, AUTH) queued in %.2fs: %.0f msg/s, %.1f MB/s\n",
		r.Messages, o.size, o.conns, r.Seconds, r.Rate, r.MBps)
	fmt.Printf("submission: end of DATA to reply: median %.2f ms, p99 %.2f ms, max %.2f ms\n", r.Latency.P50ms, r.Latency.P99ms, r.Latency.Maxms)

	if k != nil {
		times, _, _ := k.arrivals(0, o.submitN)
		backlog := o.submitN
		for _, t := range times {
			if !t.After(lastSubmit) {
				backlog--
			}
		}
		if err := k.waitFor(ctx, o.submitN+1); err != nil {
			return nil, err
		}
		times, first, last := k.arrivals(0, o.submitN)
		if len(times) != o.submitN {
			return nil, fmt.Errorf("sink: %d of %d timed messages arrived", len(times), o.submitN)
		}
		s := r.Sink
		s.BacklogAtLastSubmit = backlog
		s.FirstToLastSeconds = last.Sub(start).Seconds()
		s.EndToEndRate = float64(o.submitN) / s.FirstToLastSeconds
		s.DrainRate = float64(o.submitN) / last.Sub(first).Seconds()
		s.LagSeconds = last.Sub(lastSubmit).Seconds()
		s.WhileFillingRate = float64(o.submitN-backlog) / r.Seconds
		if s.LagSeconds > 0 {
			s.AfterRate = float64(backlog) / s.LagSeconds
		}
		s.Duplicates, s.Unknown, _ = k.odd()
		s.Sessions = k.sessions()
		fmt.Printf("sink: all %d messages arrived %.2fs after the first submission: %.0f msg/s end to end; drain %.0f msg/s (first to last arrival)\n",
			o.submitN, s.FirstToLastSeconds, s.EndToEndRate, s.DrainRate)
		fmt.Printf("sink: %.0f msg/s arrived while the queue filled; %d not yet arrived at the last 250, the last of them %.2fs after it (%.0f msg/s); %d duplicates, %d without a load Message-ID; %d SMTP sessions\n",
			s.WhileFillingRate, s.BacklogAtLastSubmit, s.LagSeconds, s.AfterRate, s.Duplicates, s.Unknown, s.Sessions)
	}
	r.Server = ph.end("submission")
	return r, nil
}
