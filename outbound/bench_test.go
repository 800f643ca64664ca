package outbound

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// BenchmarkQueueThroughput measures the queue end to end: 8 submitters
// queue 4 KB messages with Store.Deliver (a Relay part, one remote
// recipient each, as SMTP submission does) and Wake the Sender, which
// claims them, sends them over SMTP to a sink on 127.0.0.1 that accepts
// everything, and records each attempt. One op is one message queued and
// delivered. msg/s is b.N over the time until the sink has them all and
// the queue is empty; submit_msg/s is the rate the submitters kept up
// meanwhile (the Sender's commits compete with theirs for the store).
//
// Sub-benchmarks, by route and by when the Sender runs:
//
//	relay: every message through Config.Relay (up to PerRelay =
//	       Workers = 8 sessions; the figures in BENCHMARKS.md were taken
//	       when a relay counted as one destination of 4 sessions)
//	mx:    16 destination domains through their MX (the fake resolver's),
//	       up to Workers = 8 sessions
//	stream: the Sender drains while the submitters fill
//	drain:  the b.N messages are queued first, untimed; then the Sender
//	        starts and drains the backlog alone
//
// Every Config field is at its default but the route.
func BenchmarkQueueThroughput(b *testing.B) {
	for _, mode := range []string{"relay", "mx"} {
		for _, phase := range []string{"stream", "drain"} {
			b.Run(mode+"/"+phase, func(b *testing.B) { benchThroughput(b, mode, phase == "drain") })
		}
	}
}

func benchThroughput(b *testing.B, mode string, backlog bool) {
	const submitters = 8
	const domains = 16
	f := benchFixture(b)
	sink := newSink(b)
	body := message4K()

	var names []string
	for i := range domains {
		names = append(names, fmt.Sprintf("d%d.test", i))
	}
	cfg := Config{Store: f.st, Hostname: "out.bench", Port: sink.port, Resolver: mxFor(names...), AllowPrivate: true}
	if mode == "relay" {
		cfg.Relay = sink.addr
	}
	s := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	started := false
	run := func() {
		started = true
		go func() { s.Run(ctx); close(ran) }()
	}
	defer func() {
		cancel()
		if started {
			<-ran
		}
	}()
	if !backlog {
		run()
	}

	submit := func() time.Duration {
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range submitters {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(b.N) {
						return
					}
					to := fmt.Sprintf("u%d@%s", i, names[int(i)%domains])
					_, err := f.st.Deliver(context.Background(), mailstore.Delivery{Body: body, ReceivedAt: time.Now(),
						Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: f.domain.ID, From: "bob@a.test", To: []string{to}}}})
					if err != nil {
						b.Error(err)
						return
					}
					s.Wake()
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}

	b.SetBytes(int64(len(body)))
	var submitted time.Duration
	if backlog {
		b.StopTimer()
		submitted = submit()
		b.StartTimer()
		run()
	}
	b.ResetTimer()
	start := time.Now()
	if !backlog {
		submitted = submit()
	}
	for sink.count.Load() < int64(b.N) {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("sink has %d of %d messages after 5 minutes", sink.count.Load(), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		_, n, err := f.st.OutboundEntries(context.Background(), mailstore.Page{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	b.ReportMetric(float64(b.N)/submitted.Seconds(), "submit_msg/s")
}

// benchFixture is newFixture for a benchmark: a store with a.test and
// bob, with the highest transfer cap.
func benchFixture(b *testing.B) *fixture {
	b.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, b.TempDir(), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	p, err := st.CreatePartner(ctx, "acme", testNow)
	if err != nil {
		b.Fatal(err)
	}
	plan := mailstore.Plan{Name: "big", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 1 << 30}
	d, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.test", Plan: plan, MaxMailboxes: 10, MaxAliases: 10}, testNow)
	if err != nil {
		b.Fatal(err)
	}
	return &fixture{st: st, partner: p, domain: d}
}

// message4K is a message of exactly 4096 bytes in lines of 80.
func message4K() []byte {
	b := []byte(message("bench"))
	for len(b) < 4096-80 {
		b = append(b, strings.Repeat("x", 78)+"\r\n"...)
	}
	b = append(b, strings.Repeat("y", 4096-len(b)-2)+"\r\n"...)
	return b
}

// sink is an SMTP server on 127.0.0.1 that accepts every message and
// counts them.
type sink struct {
	addr  string
	port  int
	count atomic.Int64
}

func newSink(b *testing.B) *sink {
	b.Helper()
	k := &sink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return sinkSession{k}, nil }))
	srv.Domain = "sink.test"
	srv.ErrorLog = discardLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	k.addr, k.port = ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return k
}

type sinkSession struct{ k *sink }

func (sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s sinkSession) Data(r io.Reader) error {
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return err
	}
	s.k.count.Add(1)
	return nil
}
func (sinkSession) Reset()        {}
func (sinkSession) Logout() error { return nil }
