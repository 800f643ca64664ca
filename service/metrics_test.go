package service

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// scrape reads GET /metrics of api and answers each sample by its series
// as the text format writes it: name{label="value",...} (labels sorted).
func scrape(t *testing.T, api string) (map[string]float64, string) {
	t.Helper()
	resp, err := http.Get(api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics = %d %s, want 200 text/plain", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, string(b)
}

// TestMetricsScrape runs the service, sends mail over SMTP (delivered,
// over quota, unknown user) and submission (queued for a relay that
// cannot be reached), logs in over IMAP (wrong, then right), calls the
// API, and reads the series of each at GET /metrics from loopback. The
// Grafana dashboard uses only series the scrape has.
func TestMetricsScrape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there: every attempt is deferred
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_ALLOW_INSECURE_AUTH", "true",
		"MAILHOST_SUBMISSION", "127.0.0.1:0", "MAILHOST_RELAY", down, "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/domains/", `{"name":"example.com"}`},
		{"POST", "/users/", `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`},
		{"POST", "/users/", `{"domain_name":"example.com","email":"full@example.com","password":"password123"}`},
		{"PUT", "/users/full@example.com/quota", `{"quota_mb":1}`},
	} {
		if code, body := call(t, c.method, api+c.path, key, c.body); code/100 != 2 {
			t.Fatalf("%s %s = %d %s", c.method, c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	if code, _ := call(t, "GET", api+"/domains/nosuch.example", key, ""); code != 404 {
		t.Fatalf("GET /domains/nosuch.example = %d, want 404", code)
	}
	if code, _ := call(t, "GET", api+"/nowhere", key, ""); code != 404 {
		t.Fatalf("GET /nowhere = %d, want 404", code)
	}

	// SMTP: two delivered (the second fills full@), then a session whose
	// RCPTs are refused: full@ over its quota, and an unknown user.
	if err := deliverPlain(addrs.SMTP, "Subject: hi\r\n\r\nhello\r\n"); err != nil {
		t.Fatal(err)
	}
	big := "Subject: big\r\n\r\n" + strings.Repeat(strings.Repeat("x", 998)+"\r\n", 1100)
	if err := sendPlain(addrs.SMTP, "full@example.com", big); err != nil {
		t.Fatal(err)
	}
	c, err := smtp.Dial(addrs.SMTP)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("b@elsewhere.test", nil); err != nil {
		t.Fatal(err)
	}
	for rcpt, want := range map[string]int{"full@example.com": 452, "nobody@example.com": 550} {
		var se *smtp.SMTPError
		if err := c.Rcpt(rcpt, nil); !asSMTP(err, &se) || se.Code != want {
			t.Fatalf("RCPT TO:<%s> = %v, want %d", rcpt, err, want)
		}
	}
	c.Quit()
	c.Close()

	// Submission, queued for the relay that is down.
	msg := "From: a@example.com\r\nTo: bob@remote.test\r\nSubject: stuck\r\n\r\nnever sent\r\n"
	if err := submit(addrs.Submission, "a@example.com", "password123", "a@example.com", []string{"bob@remote.test"}, msg); err != nil {
		t.Fatalf("submit: %v", err)
	}

	// IMAP: a wrong password, then the right one; the session stays open.
	for _, pass := range []string{"wrong password", "password123"} {
		ic, err := imapclient.DialInsecure(addrs.IMAP, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = ic.Login("a@example.com", pass).Wait()
		if pass == "password123" {
			if err != nil {
				t.Fatal(err)
			}
			defer ic.Close()
			continue
		}
		if err == nil {
			t.Fatal("IMAP login with a wrong password succeeded")
		}
		ic.Close()
	}

	// ManageSieve: a wrong password, then LOGOUT.
	sc := dialSieve(t, addrs.ManageSieve, nil)
	if got := sc.login("a@example.com", "wrong password"); !strings.HasPrefix(got, "NO") {
		t.Fatalf("ManageSieve login with a wrong password = %q", got)
	}
	sc.do("LOGOUT")

	// The queue's attempt is recorded by a worker: wait for it.
	var m map[string]float64
	var text string
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, text = scrape(t, api)
		// And for the failed login's session to end on the server's side
		// (its client has closed, the server notices in its own time).
		if m[`mailhost_outbound_attempts_total{outcome="deferred"}`] >= 1 && m[`mailhost_imap_sessions_open`] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for series, want := range map[string]float64{
		`mailhost_smtp_sessions_total{listener="smtp",outcome="accepted"}`:              3,
		`mailhost_smtp_sessions_total{listener="submission",outcome="accepted"}`:        1,
		`mailhost_smtp_messages_total{listener="smtp",outcome="delivered"}`:             2,
		`mailhost_smtp_messages_total{listener="submission",outcome="delivered"}`:       1,
		`mailhost_smtp_recipients_total{listener="smtp",outcome="accepted"}`:            2,
		`mailhost_smtp_recipients_total{listener="smtp",outcome="over_quota"}`:          1,
		`mailhost_smtp_recipients_total{listener="smtp",outcome="refused_5xx"}`:         1,
		`mailhost_smtp_recipients_total{listener="submission",outcome="accepted"}`:      1,
		`mailhost_smtp_delivery_duration_seconds_count{listener="smtp"}`:                2,
		`mailhost_logins_total{outcome="success",protocol="imap"}`:                      1,
		`mailhost_logins_total{outcome="invalid",protocol="imap"}`:                      1,
		`mailhost_logins_total{outcome="throttled",protocol="imap"}`:                    0,
		`mailhost_logins_total{outcome="success",protocol="submission"}`:                1,
		`mailhost_imap_sessions_total{outcome="accepted"}`:                              2,
		`mailhost_imap_sessions_open`:                                                   1,
		`mailhost_logins_total{outcome="invalid",protocol="managesieve"}`:               1,
		`mailhost_managesieve_sessions_total{outcome="accepted"}`:                       1,
		`mailhost_managesieve_commands_total{command="AUTHENTICATE",result="no"}`:       1,
		`mailhost_managesieve_commands_total{command="LOGOUT",result="ok"}`:             1,
		`mailhost_api_requests_total{route="POST /domains/{$}",status="201"}`:           1,
		`mailhost_api_requests_total{route="POST /users/{$}",status="201"}`:             2,
		`mailhost_api_requests_total{route="GET /domains/{domain_name}",status="404"}`:  1,
		`mailhost_api_requests_total{route="unmatched",status="404"}`:                   1,
		`mailhost_api_request_duration_seconds_count{route="PUT /users/{email}/quota"}`: 1,
		`mailhost_outbound_queue_entries`:                                               1,
		`mailhost_outbound_queue_held_entries`:                                          0,
		`mailhost_outbound_attempts_total{outcome="deferred"}`:                          1,
		`mailhost_outbound_recipients_total{outcome="deferred"}`:                        1,
		`mailhost_outbound_attempts_total{outcome="delivered"}`:                         0,
		`mailhost_retention_deleted_messages_total`:                                     0,
	} {
		got, ok := m[series]
		if !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for _, series := range []string{
		"mailhost_outbound_queue_oldest_age_seconds", "mailhost_store_size_bytes", "mailhost_store_free_pages",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if _, ok := m[series]; !ok {
			t.Errorf("no %s in the scrape", series)
		}
	}
	if m["mailhost_store_size_bytes"] <= 0 {
		t.Errorf("mailhost_store_size_bytes = %v, want the file's size", m["mailhost_store_size_bytes"])
	}
	// No address or domain is a label value.
	for _, s := range []string{"example.com", "elsewhere.test", "remote.test", "@"} {
		if strings.Contains(text, s) {
			t.Errorf("the scrape names %q", s)
		}
	}
	checkDashboard(t, text)
}

// sendPlain sends msg to rcpt over SMTP without STARTTLS.
func sendPlain(addr, rcpt, msg string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.SendMail("b@elsewhere.test", []string{rcpt}, strings.NewReader(msg))
}

func asSMTP(err error, se **smtp.SMTPError) bool {
	e, ok := err.(*smtp.SMTPError)
	*se = e
	return ok
}

// metricName finds the series names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:mailhost|go|process)_[a-z0-9_]+\b`)

// checkDashboard: contrib/grafana/mailhost.json is valid JSON, each of
// its panels has a query, and every series it names is in the scrape
// (a histogram's _bucket, _count and _sum, a summary's _count and _sum included).
func checkDashboard(t *testing.T, scraped string) {
	t.Helper()
	b, err := os.ReadFile("../contrib/grafana/mailhost.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("contrib/grafana/mailhost.json: %v", err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(scraped, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			switch f[3] {
			case "histogram":
				names[f[2]+"_bucket"] = true
				fallthrough
			case "summary":
				names[f[2]+"_count"], names[f[2]+"_sum"] = true, true
			}
		}
	}
	used := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			found := metricName.FindAllString(tg.Expr, -1)
			if len(found) == 0 {
				t.Errorf("dashboard panel %q: query %q names no series", p.Title, tg.Expr)
			}
			for _, n := range found {
				used++
				if !names[n] {
					t.Errorf("dashboard panel %q uses %s, which the scrape does not have", p.Title, n)
				}
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard uses no series")
	}
}
