// Command rcbench drives Debian's Roundcube in headless Chromium against
// IMAP servers side by side (bench/roundcube.sh runs it against mailhost
// and Dovecot): it fills a mailbox with the same messages on each, then
// times what a person does in Roundcube and counts the IMAP bytes each
// action costs, through a counting proxy between Roundcube and the server.
//
//	rcbench fill -addr HOST:PORT -user U -pass P -n 5000
//	rcbench run -server mailhost=HOST:PORT -server dovecot=HOST:PORT \
//	    -user U -pass P -dir STATE -phase cold -reps 1 >>results.jsonl
//	rcbench summary results.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/mailhost/mailhost/internal/roundcube"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rcbench fill|run|summary ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = fill(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "summary":
		err = summary(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rcbench:", err)
		os.Exit(1)
	}
}

// fill APPENDs the corpus to INBOX, one message after the other so that
// message i gets UID i+1 on every server.
func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	addr := fs.String("addr", "", "IMAP server host:port (plain, loopback)")
	user := fs.String("user", "", "login")
	pass := fs.String("pass", "", "password")
	n := fs.Int("n", 5000, "messages")
	fs.Parse(args)
	c, err := imapclient.DialInsecure(*addr, nil)
	if err != nil {
		return fmt.Errorf("dial %s: %w", *addr, err)
	}
	defer c.Close()
	if err := c.Login(*user, *pass).Wait(); err != nil {
		return fmt.Errorf("login %s: %w", *user, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	start := time.Now()
	for i := 0; i < *n; i++ {
		msg := message(i, rng, base)
		cmd := c.Append("INBOX", int64(len(msg)), &imap.AppendOptions{Time: base.Add(time.Duration(i) * time.Minute)})
		if _, err := cmd.Write(msg); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
		if err := cmd.Close(); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
		if _, err := cmd.Wait(); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
	}
	fmt.Fprintf(os.Stderr, "rcbench: appended %d messages to %s in %v\n", *n, *addr, time.Since(start).Round(time.Millisecond))
	return c.Logout().Wait()
}

type serverFlag []string

func (s *serverFlag) String() string     { return strings.Join(*s, ",") }
func (s *serverFlag) Set(v string) error { *s = append(*s, v); return nil }

// record is one line of results.jsonl.
type record struct {
	Server string  `json:"server"`
	Phase  string  `json:"phase"`
	Rep    int     `json:"rep"`
	Action string  `json:"action"`
	Ms     float64 `json:"ms,omitempty"`
	Bytes  int64   `json:"imap_bytes,omitempty"`
	Conns  int64   `json:"imap_conns,omitempty"`
	Rows   int     `json:"rows,omitempty"`
	Note   string  `json:"note,omitempty"`
	Time   string  `json:"time"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var servers serverFlag
	fs.Var(&servers, "server", "NAME=HOST:PORT of an IMAP server (repeat); the first is compared with the last")
	user := fs.String("user", "", "login")
	pass := fs.String("pass", "", "password")
	dir := fs.String("dir", "", "state directory (a Roundcube configuration and database per server)")
	phase := fs.String("phase", "warm", "label of this run (cold, warm, first)")
	reps := fs.Int("reps", 1, "repetitions of the whole sequence per server")
	search := fs.String("search", "invoice", "quick-search term")
	debug := fs.Bool("debug", false, "Roundcube's imap_debug log into DIR/NAME/logs")
	fs.Parse(args)
	if len(servers) == 0 || *dir == "" {
		return fmt.Errorf("run needs -server and -dir")
	}
	if m := roundcube.Missing(); m != "" {
		return fmt.Errorf("missing: %s", m)
	}
	type target struct {
		name string
		cnt  *roundcube.Counter
		rc   *roundcube.Server
	}
	var targets []*target
	defer func() {
		for _, t := range targets {
			if t.rc != nil {
				t.rc.Stop()
			}
			t.cnt.Close()
		}
	}()
	for _, s := range servers {
		name, addr, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("-server %q: want NAME=HOST:PORT", s)
		}
		cnt, err := roundcube.NewCounter(addr)
		if err != nil {
			return err
		}
		t := &target{name: name, cnt: cnt}
		targets = append(targets, t)
		t.rc, err = roundcube.Start(roundcube.Options{Dir: filepath.Join(*dir, name), IMAP: cnt.Addr(), Debug: *debug})
		if err != nil {
			return err
		}
	}
	br, err := roundcube.NewBrowser()
	if err != nil {
		return err
	}
	defer br.Close()

	out := json.NewEncoder(os.Stdout)
	orders := map[string]map[string][]string{} // action -> server -> rows
	for rep := 0; rep < *reps; rep++ {
		for k := range targets {
			// Alternate which server goes first.
			t := targets[(k+rep)%len(targets)]
			emit := func(r record) {
				r.Server, r.Phase, r.Rep, r.Time = t.name, *phase, rep, time.Now().UTC().Format(time.RFC3339)
				out.Encode(r)
			}
			res, err := session(br, t.rc.URL, t.cnt, *user, *pass, *search)
			for _, r := range res {
				emit(r.record)
				if r.rowIDs != nil && rep == 0 {
					if orders[r.Action] == nil {
						orders[r.Action] = map[string][]string{}
					}
					orders[r.Action][t.name] = r.rowIDs
				}
			}
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", t.name, err, t.rc.ErrorsLog(filepath.Join(*dir, t.name)))
			}
		}
	}
	// The order of each sorted view against the last server's (Dovecot).
	ref := targets[len(targets)-1].name
	actions := make([]string, 0, len(orders))
	for a := range orders {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		for _, t := range targets[:len(targets)-1] {
			got, want := orders[a][t.name], orders[a][ref]
			note := "same order as " + ref
			if !slices.Equal(got, want) {
				note = fmt.Sprintf("DIFFERENT order from %s: %s first rows %v, %s %v", ref, t.name, head(got), ref, head(want))
			}
			out.Encode(record{Server: t.name, Phase: *phase, Action: "order " + a, Rows: len(got), Note: note, Time: time.Now().UTC().Format(time.RFC3339)})
		}
	}
	return nil
}

func head(s []string) []string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

type result struct {
	record
	rowIDs []string
}

// session is one person's visit: log in, sort three ways, the thread
// view, move one message to Trash, open one, search.
func session(br *roundcube.Browser, base string, cnt *roundcube.Counter, user, pass, term string) ([]result, error) {
	tb, err := br.NewTab()
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	var res []result
	measure := func(action string, f func() (time.Duration, error), keepRows bool) error {
		b0, c0 := cnt.Bytes(), cnt.Conns.Load()
		d, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		r := result{record: record{Action: action, Ms: float64(d.Microseconds()) / 1000, Bytes: cnt.Bytes() - b0, Conns: cnt.Conns.Load() - c0}}
		ids, err := tb.Rows()
		if err != nil {
			return fmt.Errorf("%s: rows: %w", action, err)
		}
		r.Rows = len(ids)
		if keepRows {
			r.rowIDs = ids
		}
		res = append(res, r)
		return nil
	}
	if err := measure("login to first page", func() (time.Duration, error) { return tb.Login(base, user, pass) }, false); err != nil {
		return res, err
	}
	// No preview pane loads behind the list's back: a selected row would
	// otherwise load the message into it and count in the next action.
	if err := tb.Eval(`rcmail.env.contentframe = null`, nil); err != nil {
		return res, err
	}
	// A list request even when the list is already so (set_list_options
	// sends none then): a visit's first sort by date is not free.
	list := func(col, order string, threads int) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			return tb.Ajax(fmt.Sprintf(`rcmail.set_list_sorting(%q, %q); rcmail.list_mailbox('', '', %q, {_threads: %d})`, col, order, col+"_"+order, threads), "list")
		}
	}
	sortBy := func(col, order string) func() (time.Duration, error) { return list(col, order, 0) }
	for _, s := range []struct{ name, col, order string }{
		{"sort by date", "date", "DESC"},
		{"sort by subject", "subject", "ASC"},
		{"sort by sender", "from", "ASC"},
	} {
		if err := measure(s.name, sortBy(s.col, s.order), true); err != nil {
			return res, err
		}
	}
	var offered bool
	if err := tb.Eval(`!!rcmail.env.threads`, &offered); err != nil {
		return res, err
	}
	if !offered {
		res = append(res, result{record: record{Action: "thread view", Note: "not offered (no THREAD capability)"}})
	} else if err := measure("thread view", list("date", "DESC", 1), true); err != nil {
		return res, err
	}
	// Back to the plain list by date, untimed.
	if _, err := sortBy("date", "DESC")(); err != nil {
		return res, err
	}
	var uid string
	if err := measure("move to Trash", func() (time.Duration, error) {
		if err := tb.Eval(`(() => { const r = rcmail.message_list.get_first_row(); rcmail.message_list.select(r); return String(r); })()`, &uid); err != nil {
			return 0, err
		}
		return tb.Ajax(`rcmail.command('delete')`, "move", "delete")
	}, false); err != nil {
		return res, err
	}
	var first string
	if err := tb.Eval(`String(rcmail.message_list.get_first_row())`, &first); err != nil {
		return res, err
	}
	if first == uid {
		return res, fmt.Errorf("move to Trash: message %s still first in the list", uid)
	}
	if err := measure("open a message", func() (time.Duration, error) {
		start := time.Now()
		err := tb.Do(30*time.Second, chromedp.Navigate(base+"/?_task=mail&_mbox=INBOX&_action=show&_uid="+first))
		return time.Since(start), err
	}, false); err != nil {
		return res, err
	}
	var body string
	if err := tb.Eval(`document.body.innerText`, &body); err != nil || !strings.Contains(body, "quick brown fox") {
		return res, fmt.Errorf("open a message: body not shown (%v)", err)
	}
	// Back to the list, untimed.
	if err := tb.Do(30*time.Second, chromedp.Navigate(base+"/?_task=mail&_mbox=INBOX")); err != nil {
		return res, err
	}
	if err := tb.Until(`window.rcmail && rcmail.message_list && rcmail.message_list.rowcount > 0 && !rcmail.busy`, 60*time.Second); err != nil {
		return res, err
	}
	tb.Eval(`rcmail.env.contentframe = null`, nil)
	if err := measure("search", func() (time.Duration, error) {
		return tb.Ajax(fmt.Sprintf(`rcmail.gui_objects.qsearchbox.value = %q; rcmail.command('search')`, term), "search")
	}, true); err != nil {
		return res, err
	}
	return res, nil
}

func summary(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("summary RESULTS.jsonl")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	type key struct{ phase, action, server string }
	ms := map[key][]float64{}
	bytes := map[key][]int64{}
	notes := []string{}
	var servers, actions, phases []string
	add := func(list *[]string, v string) {
		if !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		if strings.HasPrefix(r.Action, "order ") || r.Note != "" {
			notes = append(notes, fmt.Sprintf("%s %s %s: %s", r.Phase, r.Server, r.Action, r.Note))
			if strings.HasPrefix(r.Action, "order ") {
				continue
			}
		}
		if r.Ms == 0 {
			continue
		}
		add(&servers, r.Server)
		add(&actions, r.Action)
		add(&phases, r.Phase)
		k := key{r.Phase, r.Action, r.Server}
		ms[k] = append(ms[k], r.Ms)
		bytes[k] = append(bytes[k], r.Bytes)
	}
	sort.Strings(servers) // dovecot before mailhost
	for _, p := range phases {
		fmt.Printf("\n%s (median of %d)\n\n| action |", p, len(ms[key{p, actions[0], servers[0]}]))
		for _, s := range servers {
			fmt.Printf(" %s ms | %s IMAP bytes |", s, s)
		}
		fmt.Printf("\n|---|")
		for range servers {
			fmt.Printf("---:|---:|")
		}
		fmt.Println()
		for _, a := range actions {
			fmt.Printf("| %s |", a)
			for _, s := range servers {
				k := key{p, a, s}
				if len(ms[k]) == 0 {
					fmt.Printf(" - | - |")
					continue
				}
				fmt.Printf(" %.0f | %d |", median(ms[k]), medianInt(bytes[k]))
			}
			fmt.Println()
		}
	}
	fmt.Println()
	slices.Sort(notes)
	for _, n := range slices.Compact(notes) {
		fmt.Println("-", n)
	}
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
