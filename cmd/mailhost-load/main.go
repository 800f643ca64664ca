// Command mailhost-load measures a mail server over SMTP and IMAP. Against
// mailhost it first provisions a domain and mailboxes through the management
// API; against any other server (-provision=false) it uses mailboxes that
// already exist, named by -user and sharing -password.
//
// Phases, in order, each skippable:
//
//   - deliver (-n > 0): N messages of S bytes over C concurrent SMTP
//     connections (DATA, or BDAT with -bdat), round robin over M
//     mailboxes; throughput, and the latency
//     from the end of DATA to the 250 reply (median, p99, max); with -slice K
//     the same per K messages, to see whether cost grows as mailboxes fill.
//     With -rate R the messages start on a fixed schedule of R a second in
//     total (spread over the -smtp addresses), to measure the cost per
//     message below saturation; the result gives the rate achieved.
//   - wait (-wait): for servers whose 250 means "queued" (Postfix), poll
//     IMAP STATUS until every message is in its mailbox, and report the end
//     to end rate from the first MAIL to the last message stored.
//   - submission (-submit N > 0, -submission ADDR): C authenticated
//     sessions (STARTTLS, then AUTH PLAIN as mailbox i%M with -password),
//     each sending from its own address (envelope and From:) to remote
//     recipients rcptK@-rcpt-domain: messages per second into the queue,
//     and end of DATA to 250 latency. With -sink ADDR the tool also runs a
//     loopback SMTP server there, which mailhost must relay to (start it
//     with MAILHOST_RELAY=ADDR): a probe message must arrive first (else
//     the run stops with an error), then the sink reports the drain rate
//     and the time from the first submission to the last arrival.
//   - fetch (-fetch): one IMAP session, SELECT INBOX of the first mailbox,
//     one FETCH 1:* BODY.PEEK[]; messages and MB per second.
//   - logins (-logins K): one login per mailbox (untimed warm-up, reported),
//     then K connect, [STARTTLS,] LOGIN, LOGOUT cycles from -login-clients
//     clients; logins per second.
//
// Given -pid, each phase also reports the server's peak resident size
// during that phase (the kernel's high-water mark, reset at the start of the
// phase through /proc/PID/clear_refs; without permission to reset it, the
// highest resident size sampled every 10 ms) and the server's CPU time;
// given -cpu-tree PIDS, the CPU time of those processes' trees, for
// servers made of many processes.
// -json FILE appends the figures as one JSON object per run.
//
// Every loop is bounded in count and time (-timeout), and the tool talks only
// to the addresses it is given: use loopback.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

type options struct {
	api, key, smtpAddr, imapAddr string
	provision                    bool
	domain, userFormat, password string
	n, size, conns, mailboxes    int
	slice                        int
	rate                         float64
	wait, bdat, pipelining       bool
	submission, sink, rcptDomain string
	submitN                      int
	probeTimeout                 time.Duration
	fetch                        bool
	logins, loginClients         int
	pid                          int
	cpuTrees                     []int
	starttls                     bool
	jsonFile, label              string
	timeout                      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.api, "api", "http://127.0.0.1:8080", "management API base URL (with -provision)")
	flag.StringVar(&o.key, "key", os.Getenv("MAILHOST_KEY"), "API key (env MAILHOST_KEY); required with -provision")
	flag.BoolVar(&o.provision, "provision", true, "create -domain and its -m mailboxes through mailhost's API; false: use existing mailboxes named by -user")
	flag.StringVar(&o.smtpAddr, "smtp", "127.0.0.1:2525", "SMTP address to deliver to; several, comma-separated, take the connections in turn")
	flag.StringVar(&o.imapAddr, "imap", "127.0.0.1:2143", "IMAP address; empty skips the IMAP phases")
	flag.StringVar(&o.domain, "domain", "", "mail domain (default: load-UNIXTIME.test with -provision, else required)")
	flag.StringVar(&o.userFormat, "user", "user%d@", "mailbox address for index i (fmt, %d = i); a trailing @ is followed by -domain")
	flag.StringVar(&o.password, "password", "load-test-password", "password of every mailbox (set on them with -provision)")
	flag.IntVar(&o.n, "n", 2000, "messages to deliver (0 skips delivery)")
	flag.IntVar(&o.size, "size", 4096, "message size in bytes, headers included")
	flag.IntVar(&o.conns, "c", 20, "concurrent SMTP connections")
	flag.IntVar(&o.mailboxes, "m", 100, "mailboxes to spread the messages over")
	flag.BoolVar(&o.pipelining, "pipelining", false, "send MAIL, RCPT and DATA as one group (PIPELINING, RFC 2920), as Postfix's SMTP client does; the server must offer it")
	flag.BoolVar(&o.bdat, "bdat", false, "send messages with BDAT (CHUNKING, RFC 3030) instead of DATA; the server must offer it")
	flag.Float64Var(&o.rate, "rate", 0, "deliver at this many messages a second in total, spread over the -smtp addresses (an open-loop schedule; -c must be large enough to carry it); 0: as fast as the connections go")
	flag.IntVar(&o.slice, "slice", 0, "also report throughput and latency per this many messages (0: off)")
	flag.BoolVar(&o.wait, "wait", false, "after delivery, poll IMAP STATUS until every message is stored (for queueing servers)")
	flag.StringVar(&o.submission, "submission", "127.0.0.1:2587", "SMTP submission address (STARTTLS, AUTH PLAIN), for -submit")
	flag.IntVar(&o.submitN, "submit", 0, "messages to submit as the mailboxes, to remote recipients (0 skips); over -c sessions, -size bytes each")
	flag.StringVar(&o.rcptDomain, "rcpt-domain", "sink.test", "domain of the remote recipients of -submit")
	flag.StringVar(&o.sink, "sink", "", "run a loopback SMTP sink on this address and time the queue's drain to it (mailhost started with MAILHOST_RELAY=this address); empty: no sink")
	flag.DurationVar(&o.probeTimeout, "probe-timeout", 30*time.Second, "how long the probe message may take to reach the -sink")
	flag.BoolVar(&o.fetch, "fetch", true, "FETCH 1:* BODY.PEEK[] the first mailbox's INBOX in one session")
	flag.IntVar(&o.logins, "logins", 1000, "IMAP logins to time (0 skips)")
	flag.IntVar(&o.loginClients, "login-clients", 4, "concurrent IMAP login clients")
	flag.IntVar(&o.pid, "pid", 0, "server process id, to report its peak resident size and CPU time per phase")
	flag.Func("cpu-tree", "comma-separated process ids: report per phase the CPU of these processes and all their descendants, exited ones included (for multi-process servers)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				return fmt.Errorf("bad process id %q", f)
			}
			o.cpuTrees = append(o.cpuTrees, pid)
		}
		return nil
	})
	flag.BoolVar(&o.starttls, "starttls", true, "use STARTTLS for IMAP (any certificate accepted)")
	flag.StringVar(&o.jsonFile, "json", "", "append the results to this file as one JSON object")
	flag.StringVar(&o.label, "label", "", "free text copied into the JSON results (server name, run number)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "mailhost-load:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	// The protocol clients take no context: a hung server is ended here.
	time.AfterFunc(o.timeout+5*time.Second, func() {
		fmt.Fprintln(os.Stderr, "mailhost-load: timeout")
		os.Exit(1)
	})
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "mailhost-load:", err)
		os.Exit(1)
	}
}

func (o *options) check() error {
	if o.domain == "" {
		if !o.provision {
			return errors.New("-domain is required with -provision=false")
		}
		o.domain = fmt.Sprintf("load-%d.test", time.Now().Unix())
	}
	if o.provision && o.key == "" {
		return errors.New("-key (or MAILHOST_KEY) is required with -provision")
	}
	if !strings.Contains(o.userFormat, "%d") {
		return fmt.Errorf("-user %q has no %%d", o.userFormat)
	}
	if o.mailboxes < 1 || o.conns < 1 || o.loginClients < 1 || o.n < 0 || o.logins < 0 || o.slice < 0 || o.submitN < 0 {
		return errors.New("-m, -c and -login-clients must be at least 1; -n, -submit, -logins and -slice at least 0")
	}
	if o.rate < 0 {
		return errors.New("-rate must be at least 0")
	}
	if o.submitN > probeID {
		return fmt.Errorf("-submit must be below %d", probeID)
	}
	if o.sink != "" && o.submitN == 0 {
		return errors.New("-sink needs -submit")
	}
	if o.size < 512 {
		return errors.New("-size must be at least 512 bytes (the headers take about 200)")
	}
	if o.wait && o.imapAddr == "" {
		return errors.New("-wait needs -imap")
	}
	return nil
}

// addresses are the M mailbox addresses, index i for mailbox i.
func (o options) addresses() []string {
	addrs := make([]string, o.mailboxes)
	for i := range addrs {
		a := fmt.Sprintf(o.userFormat, i)
		if strings.HasSuffix(a, "@") {
			a += o.domain
		}
		addrs[i] = a
	}
	return addrs
}

func run(ctx context.Context, o options) error {
	res := results{Label: o.label, Size: o.size, Conns: o.conns, Mailboxes: o.mailboxes, StartTLS: o.starttls, BDAT: o.bdat}
	addrs := o.addresses()
	if o.provision {
		t0 := time.Now()
		if err := provision(ctx, o, addrs); err != nil {
			return err
		}
		fmt.Printf("provisioned %s with %d mailboxes in %.1fs\n", o.domain, len(addrs), time.Since(t0).Seconds())
	}
	var before map[string]int // messages per mailbox before delivery, for -wait
	var cnt *counter
	if o.wait {
		// The sessions are opened before delivery so that no login
		// competes with it.
		cnt = newCounter(o)
		defer cnt.close()
		var err error
		if before, err = countAll(ctx, cnt, addrs, nil); err != nil {
			return fmt.Errorf("count before delivery: %w", err)
		}
	}
	if o.n > 0 {
		ph := startPhase(o.pid, o.cpuTrees)
		d, err := deliver(ctx, o, addrs)
		if err != nil {
			return err
		}
		res.Deliver = d
		d.print(o)
		if o.wait {
			want := map[string]int{}
			for i := 0; i < o.n; i++ {
				want[addrs[i%len(addrs)]]++
			}
			for a, k := range before {
				want[a] += k
			}
			if _, err := countAll(ctx, cnt, addrs, want); err != nil {
				return fmt.Errorf("wait for delivery: %w", err)
			}
			e2e := time.Since(d.start)
			res.Deliver.EndToEndSeconds = e2e.Seconds()
			res.Deliver.EndToEndRate = float64(o.n) / e2e.Seconds()
			cnt.close()
			fmt.Printf("smtp: all %d messages stored (IMAP STATUS) %.2fs after the first MAIL: %.0f msg/s end to end\n",
				o.n, e2e.Seconds(), res.Deliver.EndToEndRate)
		}
		res.Deliver.Server = ph.end("deliver")
	}
	if o.submitN > 0 {
		var k *sink
		if o.sink != "" {
			var err error
			if k, err = startSink(o.sink); err != nil {
				return err
			}
			defer k.close()
		}
		r, err := submit(ctx, o, addrs, k)
		if err != nil {
			return err
		}
		res.Submit = r
	}
	if o.imapAddr != "" && o.fetch {
		ph := startPhase(o.pid, o.cpuTrees)
		f, err := fetchAll(o, addrs[0])
		if err != nil {
			return err
		}
		f.Server = ph.end("fetch")
		res.Fetch = &f
	}
	if o.imapAddr != "" && o.logins > 0 {
		ph := startPhase(o.pid, o.cpuTrees)
		l, err := logins(ctx, o, addrs)
		if err != nil {
			return err
		}
		l.Server = ph.end("logins")
		res.Logins = &l
	}
	if o.jsonFile != "" {
		return res.append(o.jsonFile)
	}
	return nil
}
