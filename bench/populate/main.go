// Command populate builds a provider-size store through the store's own
// write paths: partners, domains and mailboxes through the control
// plane's create calls, messages through Deliver from many goroutines at
// once, so that they go in the store's group-commit batches (up to 256
// deliveries a transaction on either backend) as the MX's do. It does
// not go through SMTP: the point is a store of a given size, not a
// delivery benchmark.
//
//	populate -store /work/scale/bolt-big -mailboxes 100000 -domains 1000 -messages 2000000
//	populate -store 'postgres://postgres@127.0.0.1:55440/postgres?sslmode=disable' -state /work/scale/pg.state ...
//
// Names are deterministic (partner pN, domain dN.scale.test, mailbox
// uN@dD.scale.test, password "password" for all), so the probe
// (bench/scaleprobe) can find them. Mailbox 0 (u0@d0.scale.test) also
// gets -big messages in its INBOX, the folder the probe opens.
//
// It saves its progress in the state file after every chunk; run again
// with the same flags, it goes on from the last chunk saved (a chunk cut
// short is delivered again, so a few messages may be there twice).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// openStore is the one place the tool names a backend: a postgres:// URL
// is PostgreSQL, anything else a bbolt data directory.
func openStore(ctx context.Context, store string) (mailstore.Store, error) {
	if pgstore.IsURL(store) {
		return pgstore.Open(ctx, store, pgstore.Options{Node: "populate", MaxConns: 8, RecipientTTL: -1})
	}
	return boltstore.Open(ctx, store, boltstore.Options{})
}

type state struct {
	Partners  []int64 `json:"partners"`
	Domains   int     `json:"domains"`   // created (in order)
	Mailboxes int     `json:"mailboxes"` // created; ids in the ids file
	Big       int     `json:"big"`       // messages delivered to mailbox 0's INBOX
	Messages  int     `json:"messages"`  // messages delivered round the mailboxes
}

var (
	storeFlag = flag.String("store", "", "bbolt data directory or postgres:// URL")
	stateFlag = flag.String("state", "", "state file (default populate.state in the bbolt directory)")
	partners  = flag.Int("partners", 100, "partners")
	domains   = flag.Int("domains", 10000, "domains (spread over the partners)")
	mailboxes = flag.Int("mailboxes", 1000000, "mailboxes (spread over the domains)")
	messages  = flag.Int("messages", 10000000, "messages (round the mailboxes)")
	big       = flag.Int("big", 2000, "more messages in mailbox 0's INBOX")
	workers   = flag.Int("workers", 64, "concurrent calls")
	chunk     = flag.Int("chunk", 20000, "mailboxes or messages between saves of the state")
	until     = flag.Duration("for", 0, "stop (resumably) after this long; 0 runs to the end")
)

func main() {
	flag.Parse()
	if *storeFlag == "" {
		log.Fatal("populate: -store is required")
	}
	sf := *stateFlag
	if sf == "" {
		if pgstore.IsURL(*storeFlag) {
			log.Fatal("populate: -state is required with PostgreSQL")
		}
		sf = filepath.Join(*storeFlag, "populate.state")
	}
	ctx := context.Background()
	s, err := openStore(ctx, *storeFlag)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	p := &populator{s: s, stateFile: sf, idsFile: sf + ".ids", start: time.Now()}
	if err := p.run(ctx); err != nil {
		p.save()
		s.Close()
		log.Fatalf("populate: %v", err)
	}
}

type populator struct {
	s                  mailstore.Store
	stateFile, idsFile string
	st                 state
	ids                []int64
	start              time.Time
}

var errTime = errors.New("time is up (state saved; run again to go on)")

func (p *populator) load() error {
	b, err := os.ReadFile(p.stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &p.st); err != nil {
		return fmt.Errorf("state %s: %w", p.stateFile, err)
	}
	raw, err := os.ReadFile(p.idsFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := 0; i+8 <= len(raw); i += 8 {
		p.ids = append(p.ids, int64(binary.LittleEndian.Uint64(raw[i:])))
	}
	if len(p.ids) < p.st.Mailboxes {
		p.st.Mailboxes = len(p.ids)
	}
	p.ids = p.ids[:p.st.Mailboxes]
	return nil
}

func (p *populator) save() {
	b, _ := json.Marshal(p.st)
	tmp := p.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		_ = os.Rename(tmp, p.stateFile)
	}
}

func (p *populator) appendIDs(ids []int64) error {
	f, err := os.OpenFile(p.idsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 8*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(id))
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func domainName(d int) string { return fmt.Sprintf("d%d.scale.test", d) }

// domainOf: mailboxes are spread over the domains in contiguous runs.
func domainOf(m int) int { return m * *domains / *mailboxes }

func email(m int) string { return fmt.Sprintf("u%d@%s", m, domainName(domainOf(m))) }

func partnerOf(d int) int { return d % *partners }

func (p *populator) timeUp() bool { return *until > 0 && time.Since(p.start) > *until }

// parallel runs fn(i) for i in [from, to) on the workers, printing a
// progress line every 10 s; the first error stops it.
func parallel(what string, from, to int, fn func(i int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t0 := time.Now()
	go func() {
		tk := time.NewTicker(10 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				n := done.Load()
				rate := float64(n) / time.Since(t0).Seconds()
				left := float64(to-from) - float64(n)
				log.Printf("%s: %d / %d of this chunk (at %d), %.0f/s, chunk ends in %s", what, n, to-from, from, rate,
					time.Duration(left/rate*float64(time.Second)).Round(time.Second))
			}
		}
	}()
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(to))
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	return firstErr
}

func (p *populator) run(ctx context.Context) error {
	if err := p.load(); err != nil {
		return err
	}
	now := time.Now()
	log.Printf("populate: resuming at %+v", state{Domains: p.st.Domains, Mailboxes: p.st.Mailboxes, Big: p.st.Big, Messages: p.st.Messages})
	for i := len(p.st.Partners); i < *partners; i++ {
		name := fmt.Sprintf("p%d", i)
		pt, err := p.s.CreatePartner(ctx, name, now)
		if errors.Is(err, mailstore.ErrPartnerExists) {
			pt, err = p.s.PartnerByName(ctx, name)
		}
		if err != nil {
			return fmt.Errorf("partner %s: %w", name, err)
		}
		p.st.Partners = append(p.st.Partners, pt.ID)
	}
	p.save()
	if p.st.Domains < *domains {
		t0 := time.Now()
		err := parallel("domains", p.st.Domains, *domains, func(d int) error {
			pid := p.st.Partners[partnerOf(d)]
			_, err := p.s.CreateDomain(ctx, pid, mailstore.NewDomain{
				Name: domainName(d), Plan: mailstore.Plan{Name: "scale", QuotaMB: 2048, TransferMonthlyMB: 100000},
			}, now)
			if err != nil && !errors.Is(err, mailstore.ErrDomainExists) {
				return fmt.Errorf("domain %s: %w", domainName(d), err)
			}
			if _, err := p.s.SetVerified(ctx, pid, domainName(d), true, now); err != nil {
				return fmt.Errorf("verify %s: %w", domainName(d), err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		log.Printf("domains: %d in %s", *domains-p.st.Domains, time.Since(t0).Round(time.Millisecond))
		p.st.Domains = *domains
		p.save()
	}
	hash, err := credential.HashPassword("password")
	if err != nil {
		return err
	}
	t0, n0 := time.Now(), p.st.Mailboxes
	for p.st.Mailboxes < *mailboxes {
		if p.timeUp() {
			return errTime
		}
		from, to := p.st.Mailboxes, min(p.st.Mailboxes+*chunk, *mailboxes)
		ids := make([]int64, to-from)
		err := parallel("mailboxes", from, to, func(m int) error {
			d := domainOf(m)
			pid := p.st.Partners[partnerOf(d)]
			mb, err := p.s.CreateMailbox(ctx, pid, domainName(d), email(m), hash, now)
			if errors.Is(err, mailstore.ErrEmailExists) {
				mb, err = p.s.Mailbox(ctx, pid, email(m))
			}
			if err != nil {
				return fmt.Errorf("mailbox %s: %w", email(m), err)
			}
			ids[m-from] = mb.ID
			return nil
		})
		if err != nil {
			return err
		}
		if err := p.appendIDs(ids); err != nil {
			return err
		}
		p.ids = append(p.ids, ids...)
		p.st.Mailboxes = to
		p.save()
		el := time.Since(t0).Seconds()
		log.Printf("mailboxes: %d / %d, %.0f/s overall", to, *mailboxes, float64(to-n0)/el)
	}
	gen := newGenerator()
	if p.st.Big < *big && len(p.ids) > 0 {
		from := p.st.Big
		err := parallel("big folder", from, *big, func(i int) error {
			return p.deliver(ctx, gen, 0, i, "INBOX")
		})
		if err != nil {
			return err
		}
		p.st.Big = *big
		p.save()
	}
	t0, n0 = time.Now(), p.st.Messages
	for p.st.Messages < *messages {
		if p.timeUp() {
			return errTime
		}
		from, to := p.st.Messages, min(p.st.Messages+*chunk, *messages)
		err := parallel("messages", from, to, func(k int) error {
			return p.deliver(ctx, gen, k%len(p.ids), k, "")
		})
		if err != nil {
			return err
		}
		p.st.Messages = to
		p.save()
		el := time.Since(t0).Seconds()
		rate := float64(to-n0) / el
		log.Printf("messages: %d / %d, %.0f msg/s overall, %s to go", to, *messages, rate,
			time.Duration(float64(*messages-to)/rate*float64(time.Second)).Round(time.Second))
	}
	log.Printf("populate: done: %d partners, %d domains, %d mailboxes, %d messages (+%d in u0's INBOX) in %s",
		len(p.st.Partners), p.st.Domains, p.st.Mailboxes, p.st.Messages, p.st.Big, time.Since(p.start).Round(time.Second))
	return nil
}

// folders is the mix of where a message lies, in percent: most in
// INBOX, the rest filed, sent or deleted as a mailbox's history has them.
var folders = []struct {
	name string
	pct  int
}{{"INBOX", 62}, {"Archive", 14}, {"Sent", 10}, {"Trash", 6}, {"Junk", 5}, {"Drafts", 3}}

func (p *populator) deliver(ctx context.Context, g *generator, m, k int, folder string) error {
	r := rand.New(rand.NewPCG(uint64(k), uint64(m)))
	if folder == "" {
		x := r.IntN(100)
		for _, f := range folders {
			if x < f.pct {
				folder = f.name
				break
			}
			x -= f.pct
		}
	}
	var flags []string
	if r.IntN(100) < 75 {
		flags = append(flags, `\Seen`)
	}
	if r.IntN(100) < 4 {
		flags = append(flags, `\Flagged`)
	}
	if folder == "Sent" && r.IntN(100) < 30 {
		flags = append(flags, `\Answered`)
	}
	// Within the last 90 days, older ones fewer.
	age := time.Duration(r.ExpFloat64() * float64(20*24*time.Hour))
	age = min(age, 89*24*time.Hour)
	received := time.Now().Add(-age).Truncate(time.Second)
	body := g.message(r, email(m), received, k)
	id := p.ids[m]
	_, err := p.s.Deliver(ctx, mailstore.Delivery{
		Body: body, ReceivedAt: received, MailboxIDs: []int64{id}, IgnoreQuota: true,
		Placements: []mailstore.Placement{{MailboxID: id, Folder: folder, Flags: flags}},
	})
	if err != nil {
		return fmt.Errorf("deliver to %s: %w", email(m), err)
	}
	return nil
}

type generator struct {
	words []string
}

func newGenerator() *generator {
	return &generator{words: strings.Fields(`the meeting invoice report project update please review attached
		thanks regards schedule next week order shipped account password reset newsletter offer
		team quarterly budget draft final agenda notes call tomorrow today customer support ticket
		delivery confirmation payment received welcome hello question about your our new service`)}
}

var senders = []string{"news@shop.example", "billing@utility.example", "alice@partner.example",
	"noreply@social.example", "bob@company.example", "support@saas.example", "carol@friends.example"}

// message is a plausible message: two Received lines, the usual
// originator fields, sometimes a DKIM-Signature and a List-Unsubscribe,
// MIME text of 300 to about 6,000 bytes (most near 1.5 KB).
func (g *generator) message(r *rand.Rand, to string, at time.Time, k int) []byte {
	var b strings.Builder
	from := senders[r.IntN(len(senders))]
	host := from[strings.IndexByte(from, '@')+1:]
	fmt.Fprintf(&b, "Received: from mx.%s (mx.%s [192.0.2.%d])\r\n\tby mx.scale.test with ESMTPS id %x\r\n\tfor <%s>; %s\r\n",
		host, host, r.IntN(250)+1, r.Uint64(), to, at.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Received: from [10.0.%d.%d] by mx.%s with ESMTPSA; %s\r\n", r.IntN(250), r.IntN(250), host, at.Add(-2*time.Second).Format(time.RFC1123Z))
	if r.IntN(100) < 60 {
		fmt.Fprintf(&b, "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=%s; s=s1;\r\n\th=from:to:subject:date:message-id; bh=%x=;\r\n\tb=%x%x%x%x\r\n",
			host, r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\n", from, to)
	subj := make([]string, 3+r.IntN(6))
	for i := range subj {
		subj[i] = g.words[r.IntN(len(g.words))]
	}
	fmt.Fprintf(&b, "Subject: %s\r\nDate: %s\r\nMessage-ID: <%d.%x@%s>\r\nMIME-Version: 1.0\r\n",
		strings.Join(subj, " "), at.Format(time.RFC1123Z), k, r.Uint64(), host)
	if r.IntN(100) < 30 {
		fmt.Fprintf(&b, "List-Unsubscribe: <https://%s/u/%x>\r\n", host, r.Uint64())
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	n := 300 + int(r.ExpFloat64()*1200)
	n = min(n, 6000)
	line := 0
	for b.Len() < n+600 {
		w := g.words[r.IntN(len(g.words))]
		b.WriteString(w)
		line += len(w) + 1
		if line > 70 {
			b.WriteString("\r\n")
			line = 0
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}
