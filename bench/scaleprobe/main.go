// Command scaleprobe times the store calls behind a server's requests on
// a store built by bench/populate (its names: partner pN, domain
// dN.scale.test, mailbox uN@dD.scale.test), in process and without a
// cache in front, so that what grows with the store's size shows:
//
//	rcpt     MailboxByEmail of a random mailbox (the MX's RCPT look-up,
//	         IMAP's and SMTP AUTH's before the password hash)
//	open     Folder + Messages of u0's INBOX (-big messages): a SELECT
//	list     Mailboxes of a random domain, a page of 50 (GET /users/)
//	domains  Domains of a partner, a page of 50 (GET /domains/)
//	usage    Mailbox (counters) and DomainUsage (GET .../usage)
//	deliver  Deliver from 32 goroutines to random mailboxes for -deliver
//	         (one message of 2 KB each): messages a second
//	purge    1,000 messages of 400 days ago appended to the last
//	         mailbox, its domain's retention set to 365 days, then one
//	         PurgeBefore: the pass's time and what it deleted
//
// It prints one JSON object. It changes the store (deliver, purge): run
// it after the read-only probes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// openStore is the one place the tool names a backend.
func openStore(ctx context.Context, store string) (mailstore.Store, error) {
	if pgstore.IsURL(store) {
		return pgstore.Open(ctx, store, pgstore.Options{Node: "scaleprobe", RecipientTTL: -1, BodyCacheBytes: -1})
	}
	return boltstore.Open(ctx, store, boltstore.Options{})
}

var (
	storeFlag = flag.String("store", "", "bbolt data directory or postgres:// URL")
	partners  = flag.Int("partners", 100, "partners (as populated)")
	domains   = flag.Int("domains", 10000, "domains (as populated)")
	mailboxes = flag.Int("mailboxes", 1000000, "mailboxes (as populated)")
	n         = flag.Int("n", 200, "samples of each read")
	deliverD  = flag.Duration("deliver", 10*time.Second, "how long to deliver")
	label     = flag.String("label", "", "label of the result")
)

func domainName(d int) string { return fmt.Sprintf("d%d.scale.test", d) }
func domainOf(m int) int      { return m * *domains / *mailboxes }
func email(m int) string      { return fmt.Sprintf("u%d@%s", m, domainName(domainOf(m))) }

type stat struct {
	MedianUs float64 `json:"median_us"`
	P90Us    float64 `json:"p90_us"`
	MaxUs    float64 `json:"max_us"`
	N        int     `json:"n"`
}

func timeIt(k int, fn func(i int) error) (stat, error) {
	var d []float64
	for i := range k {
		t := time.Now()
		if err := fn(i); err != nil {
			return stat{}, err
		}
		d = append(d, float64(time.Since(t).Microseconds()))
	}
	slices.Sort(d)
	return stat{MedianUs: d[len(d)/2], P90Us: d[len(d)*9/10], MaxUs: d[len(d)-1], N: k}, nil
}

func main() {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		log.Fatalf("scaleprobe: %v", err)
	}
}

func run(ctx context.Context) error {
	t0 := time.Now()
	s, err := openStore(ctx, *storeFlag)
	if err != nil {
		return err
	}
	defer s.Close()
	out := map[string]any{"label": *label, "mailboxes": *mailboxes, "open_ms": float64(time.Since(t0).Microseconds()) / 1000}
	r := rand.New(rand.NewPCG(1, 2))
	pids := map[int]int64{}
	partnerID := func(d int) (int64, error) {
		p := d % *partners
		if id, ok := pids[p]; ok {
			return id, nil
		}
		pt, err := s.PartnerByName(ctx, fmt.Sprintf("p%d", p))
		pids[p] = pt.ID
		return pt.ID, err
	}
	if out["rcpt"], err = timeIt(*n, func(int) error {
		_, _, err := s.MailboxByEmail(ctx, email(r.IntN(*mailboxes)))
		return err
	}); err != nil {
		return fmt.Errorf("rcpt: %w", err)
	}
	u0, _, err := s.MailboxByEmail(ctx, email(0))
	if err != nil {
		return err
	}
	var msgs int
	if out["open"], err = timeIt(max(*n/10, 5), func(int) error {
		f, err := s.Folder(ctx, u0.ID, "INBOX")
		if err != nil {
			return err
		}
		m, err := s.Messages(ctx, u0.ID, f.ID)
		msgs = len(m)
		return err
	}); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	out["open_messages"] = msgs
	if out["list"], err = timeIt(*n, func(int) error {
		d := r.IntN(*domains)
		pid, err := partnerID(d)
		if err != nil {
			return err
		}
		dom, err := s.Domain(ctx, pid, domainName(d))
		if err != nil {
			return err
		}
		_, _, err = s.Mailboxes(ctx, pid, dom.ID, mailstore.Page{Limit: 50})
		return err
	}); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	// The partner-wide list, first page and last: OFFSET paging reads the
	// rows before the page, so the last page of a partner's mailboxes
	// costs what they are.
	perPartner := *mailboxes / *partners
	for _, pg := range []struct {
		key    string
		offset int
	}{{"partner_list_first", 0}, {"partner_list_last", max(perPartner-50, 0)}} {
		if out[pg.key], err = timeIt(max(*n/10, 5), func(int) error {
			pid, err := partnerID(r.IntN(*partners))
			if err != nil {
				return err
			}
			_, _, err = s.Mailboxes(ctx, pid, 0, mailstore.Page{Limit: 50, Offset: pg.offset})
			return err
		}); err != nil {
			return fmt.Errorf("%s: %w", pg.key, err)
		}
		out[pg.key+"_offset"] = pg.offset
	}
	if out["domains"], err = timeIt(*n, func(int) error {
		pid, err := partnerID(r.IntN(*partners))
		if err != nil {
			return err
		}
		_, _, err = s.Domains(ctx, pid, mailstore.Page{Limit: 50})
		return err
	}); err != nil {
		return fmt.Errorf("domains: %w", err)
	}
	month := time.Now().UTC().Format("2006-01")
	if out["usage"], err = timeIt(*n, func(int) error {
		m := r.IntN(*mailboxes)
		d := domainOf(m)
		pid, err := partnerID(d)
		if err != nil {
			return err
		}
		if _, err := s.Mailbox(ctx, pid, email(m)); err != nil {
			return err
		}
		_, err = s.DomainUsage(ctx, pid, domainName(d), month)
		return err
	}); err != nil {
		return fmt.Errorf("usage: %w", err)
	}

	// Delivery: ids of random mailboxes first, so that the timed part is
	// Deliver alone.
	ids := make([]int64, 500)
	for i := range ids {
		mb, _, err := s.MailboxByEmail(ctx, email(r.IntN(*mailboxes)))
		if err != nil {
			return err
		}
		ids[i] = mb.ID
	}
	body := make([]byte, 0, 2048)
	body = append(body, "From: a@b.example\r\nTo: x@scale.test\r\nSubject: probe\r\nMessage-ID: <p@b.example>\r\n\r\n"...)
	for len(body) < 2046 {
		body = append(body, "probe text "...)
	}
	body = append(body[:2046], "\r\n"...)
	var delivered atomic.Int64
	var wg sync.WaitGroup
	var derr error
	var once sync.Once
	end := time.Now().Add(*deliverD)
	dstart := time.Now()
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(end); i += 32 {
				_, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: time.Now(), MailboxIDs: []int64{ids[i%len(ids)]}})
				if err != nil {
					once.Do(func() { derr = err })
					return
				}
				delivered.Add(1)
			}
		}()
	}
	wg.Wait()
	if derr != nil {
		return fmt.Errorf("deliver: %w", derr)
	}
	out["deliver_per_s"] = float64(delivered.Load()) / time.Since(dstart).Seconds()

	// Retention: 1,000 old messages in the last mailbox, its domain's
	// retention set, one pass.
	last := *mailboxes - 1
	mb, _, err := s.MailboxByEmail(ctx, email(last))
	if err != nil {
		return err
	}
	f, err := s.Folder(ctx, mb.ID, "Archive")
	if err != nil {
		return err
	}
	old := time.Now().AddDate(0, 0, -400)
	for range 1000 {
		if _, err := s.Append(ctx, mb.ID, f.ID, body, nil, old); err != nil {
			return fmt.Errorf("append: %w", err)
		}
	}
	d := domainOf(last)
	pid, err := partnerID(d)
	if err != nil {
		return err
	}
	if _, err := s.SetRetention(ctx, pid, domainName(d), 365); err != nil {
		return err
	}
	pt := time.Now()
	res, err := s.PurgeBefore(ctx, time.Now())
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	out["purge_ms"] = float64(time.Since(pt).Microseconds()) / 1000
	out["purge_results"] = res
	if _, err := s.SetRetention(ctx, pid, domainName(d), 0); err != nil {
		return err
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}
