package autoconfig

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// node is any XML element, for reading answers without the types that
// wrote them.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []node     `xml:",any"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) all(name string) []node {
	var out []node
	for _, c := range n.Nodes {
		if c.XMLName.Local == name {
			out = append(out, c)
		}
	}
	return out
}

// one is the text of the only child called name, or "" when there is
// none.
func (n node) one(name string) string {
	if c := n.all(name); len(c) == 1 {
		return strings.TrimSpace(c[0].Text)
	}
	return ""
}

func parse(t *testing.T, body []byte) node {
	t.Helper()
	var n node
	if err := xml.Unmarshal(body, &n); err != nil {
		t.Fatalf("answer is not XML: %v\n%s", err, body)
	}
	return n
}

// thunderbirdRules checks body as Thunderbird's reader of the format
// (comm-central mail/components/accountcreation/modules/readFromXML and
// its Sanitizer) does, and answers what it found wrong: an emailProvider
// with a host name id; domains that are host names; a displayName; at
// least one usable incomingServer (type pop3, imap, nntp or exchange) and
// one outgoingServer (type smtp); in each, a host name
// ([a-z0-9.%-], lower case once cleaned up), a port from 1 to 65535, a
// socketType of plain, SSL or STARTTLS, a username, and an
// authentication the reader knows.
func thunderbirdRules(body []byte) []string {
	var bad []string
	var root node
	if err := xml.Unmarshal(body, &root); err != nil {
		return []string{"not XML: " + err.Error()}
	}
	if root.XMLName.Local != "clientConfig" {
		return []string{"root is " + root.XMLName.Local}
	}
	hostname := regexp.MustCompile(`^[a-z0-9\-.%]+$`)
	isHost := func(s string) bool {
		return s != "" && hostname.MatchString(strings.ToLower(strings.TrimSuffix(s, ".")))
	}
	ps := root.all("emailProvider")
	if len(ps) != 1 {
		return []string{fmt.Sprintf("%d emailProvider", len(ps))}
	}
	p := ps[0]
	if !isHost(p.attr("id")) {
		bad = append(bad, "emailProvider id "+p.attr("id"))
	}
	for _, d := range p.all("domain") {
		if !isHost(strings.TrimSpace(d.Text)) {
			bad = append(bad, "domain "+d.Text)
		}
	}
	if p.one("displayName") == "" {
		bad = append(bad, "no displayName")
	}
	auths := []string{"password-cleartext", "plain", "password-encrypted", "secure", "GSSAPI", "NTLM", "OAuth2", "TLS-client-cert", "none", "client-IP-address"}
	server := func(kind string, types []string) {
		ok := 0
		for _, s := range p.all(kind) {
			var why []string
			if !slices.Contains(types, s.attr("type")) {
				why = append(why, "type "+s.attr("type"))
			}
			if !isHost(s.one("hostname")) {
				why = append(why, "hostname "+s.one("hostname"))
			}
			if n, err := strconv.Atoi(s.one("port")); err != nil || n < 1 || n > 65535 {
				why = append(why, "port "+s.one("port"))
			}
			if !slices.Contains([]string{"plain", "SSL", "STARTTLS"}, s.one("socketType")) {
				why = append(why, "socketType "+s.one("socketType"))
			}
			if s.one("username") == "" {
				why = append(why, "no username")
			}
			for _, a := range s.all("authentication") {
				if !slices.Contains(auths, strings.TrimSpace(a.Text)) {
					why = append(why, "authentication "+a.Text)
				}
			}
			if len(s.all("authentication")) == 0 {
				why = append(why, "no authentication")
			}
			if len(why) > 0 {
				bad = append(bad, kind+": "+strings.Join(why, ", "))
			} else {
				ok++
			}
		}
		if ok == 0 {
			bad = append(bad, "no usable "+kind)
		}
	}
	server("incomingServer", []string{"pop3", "imap", "nntp", "exchange"})
	server("outgoingServer", []string{"smtp"})
	return bad
}

var standard = Servers{Host: "mx.example.net", IMAPS: 993, IMAP: 143, Submissions: 465, Submission: 587}

func TestThunderbirdFormat(t *testing.T) {
	for _, tt := range []struct {
		name    string
		servers Servers
		// want lists "type socketType port" of the servers, in order.
		want []string
	}{
		{"standard ports", standard, []string{"imap SSL 993", "imap STARTTLS 143", "smtp SSL 465", "smtp STARTTLS 587"}},
		{"behind NAT", Servers{Host: "mail.example.net", IMAPS: 10993, Submission: 10587},
			[]string{"imap SSL 10993", "smtp STARTTLS 10587"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := Thunderbird(tt.servers, "example.com")
			if bad := thunderbirdRules(body); len(bad) > 0 {
				t.Fatalf("Thunderbird() breaks Thunderbird's rules: %v\n%s", bad, body)
			}
			root := parse(t, body)
			p := root.all("emailProvider")[0]
			if root.attr("version") != "1.1" || p.attr("id") != "example.com" || p.one("domain") != "example.com" {
				t.Errorf("Thunderbird() version %q, id %q, domain %q; want 1.1, example.com", root.attr("version"), p.attr("id"), p.one("domain"))
			}
			var got []string
			for _, kind := range []string{"incomingServer", "outgoingServer"} {
				for _, s := range p.all(kind) {
					got = append(got, s.attr("type")+" "+s.one("socketType")+" "+s.one("port"))
					if s.one("hostname") != tt.servers.Host || s.one("username") != "%EMAILADDRESS%" {
						t.Errorf("%s: hostname %q, username %q", kind, s.one("hostname"), s.one("username"))
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Thunderbird() servers = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestThunderbirdRules checks the checker: each broken config is caught.
func TestThunderbirdRules(t *testing.T) {
	good := string(Thunderbird(standard, "example.com"))
	for name, broken := range map[string]string{
		"bad port":       strings.Replace(good, "<port>993</port>", "<port>0</port>", 1),
		"bad socket":     strings.ReplaceAll(good, "<socketType>SSL</socketType>", "<socketType>TLS</socketType>"),
		"no username":    strings.ReplaceAll(good, "<username>%EMAILADDRESS%</username>", ""),
		"bad hostname":   strings.ReplaceAll(good, "mx.example.net", "mx example"),
		"no outgoing":    regexp.MustCompile(`(?s)<outgoingServer.*</outgoingServer>`).ReplaceAllString(good, ""),
		"no displayName": regexp.MustCompile(`<displayName>.*</displayName>`).ReplaceAllString(good, ""),
	} {
		if bad := thunderbirdRules([]byte(broken)); len(bad) == 0 {
			t.Errorf("%s: thunderbirdRules found nothing wrong", name)
		}
	}
}

// env is a Handler on a real listener over a bbolt store hosting
// example.com.
type env struct {
	srv *httptest.Server
}

func newEnv(t *testing.T, s Servers) *env {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	p, err := st.CreatePartner(ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}}, now); err != nil {
		t.Fatalf("CreateDomain() = %v", err)
	}
	if _, err := st.CreateMailbox(ctx, p.ID, "example.com", "alice@example.com", "x", now); err != nil {
		t.Fatalf("CreateMailbox() = %v", err)
	}
	h := New(Config{Servers: s, Domains: st, Logger: slog.New(slog.DiscardHandler)})
	e := &env{srv: httptest.NewServer(h)}
	t.Cleanup(e.srv.Close)
	return e
}

// do sends a request with the Host header host ("" for the listener's).
func (e *env) do(t *testing.T, method, path, host, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func TestThunderbirdEndpoints(t *testing.T) {
	e := newEnv(t, standard)
	var first []byte
	for _, tt := range []struct {
		name, path, host string
		want             int
	}{
		{"mailbox", "/mail/config-v1.1.xml?emailaddress=alice%40example.com", "autoconfig.example.com", 200},
		// Not a mailbox: the same answer, so nothing tells which exist.
		{"unknown address", "/mail/config-v1.1.xml?emailaddress=nobody%40example.com", "autoconfig.example.com", 200},
		{"upper case", "/mail/config-v1.1.xml?emailaddress=Nobody%40EXAMPLE.com", "", 200},
		{"host only", "/mail/config-v1.1.xml", "autoconfig.example.com:80", 200},
		{"well-known on the domain", "/.well-known/autoconfig/mail/config-v1.1.xml", "example.com", 200},
		{"well-known with address", "/.well-known/autoconfig/mail/config-v1.1.xml?emailaddress=alice%40example.com", "autoconfig.example.com", 200},
		{"domain not hosted", "/mail/config-v1.1.xml?emailaddress=alice%40example.org", "autoconfig.example.org", 404},
		{"host not hosted", "/mail/config-v1.1.xml", "autoconfig.example.org", 404},
		{"host is an address", "/mail/config-v1.1.xml", "127.0.0.1", 404},
		{"bad address", "/mail/config-v1.1.xml?emailaddress=alice", "autoconfig.example.com", 400},
		{"other path", "/mail/config.xml", "autoconfig.example.com", 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, body := e.do(t, "GET", tt.path, tt.host, "")
			if status != tt.want {
				t.Fatalf("GET %s (Host %s) = %d %s, want %d", tt.path, tt.host, status, body, tt.want)
			}
			if status != 200 {
				return
			}
			if ct := hdr.Get("Content-Type"); ct != "application/xml" {
				t.Errorf("Content-Type = %q", ct)
			}
			if bad := thunderbirdRules(body); len(bad) > 0 {
				t.Errorf("answer breaks Thunderbird's rules: %v", bad)
			}
			if first == nil {
				first = body
			} else if !bytes.Equal(body, first) {
				t.Errorf("answer differs from the first:\n%s\nwant\n%s", body, first)
			}
		})
	}
	if status, _, _ := e.do(t, "POST", "/mail/config-v1.1.xml", "autoconfig.example.com", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("POST /mail/config-v1.1.xml = %d, want 405", status)
	}
}

func TestNoClientPorts(t *testing.T) {
	e := newEnv(t, Servers{Host: "mx.example.net", IMAPS: 993})
	if status, _, body := e.do(t, "GET", "/mail/config-v1.1.xml?emailaddress=alice%40example.com", "", ""); status != 404 {
		t.Errorf("without a submission port: %d %s, want 404", status, body)
	}
}

// autodiscoverRequest is what Outlook posts ([MS-OXDSCLI] 4.1).
func autodiscoverRequest(email, schema string) string {
	return `<?xml version="1.0" encoding="utf-8"?>
<Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006">
  <Request>
    <EMailAddress>` + email + `</EMailAddress>
    <AcceptableResponseSchema>` + schema + `</AcceptableResponseSchema>
  </Request>
</Autodiscover>`
}

func TestAutodiscover(t *testing.T) {
	e := newEnv(t, standard)
	const outlook = "http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a"
	for _, tt := range []struct {
		name, path, body string
		want             int
	}{
		{"mailbox", PathAutodiscover, autodiscoverRequest("alice@example.com", outlook), 200},
		{"capitalised path", PathAutodiscoverCaps, autodiscoverRequest("bob@example.com", outlook), 200},
		{"domain not hosted", PathAutodiscover, autodiscoverRequest("alice@example.org", outlook), 404},
		{"ActiveSync", PathAutodiscover, autodiscoverRequest("alice@example.com", "http://schemas.microsoft.com/exchange/autodiscover/mobilesync/responseschema/2006"), 404},
		{"not XML", PathAutodiscover, "alice@example.com", 400},
		{"no address", PathAutodiscover, autodiscoverRequest("", outlook), 400},
		{"too long", PathAutodiscover, autodiscoverRequest("alice@example.com", outlook) + strings.Repeat(" ", maxRequest), 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := e.do(t, "POST", tt.path, "autodiscover.example.com", tt.body)
			if status != tt.want {
				t.Fatalf("POST %s = %d %s, want %d", tt.path, status, body, tt.want)
			}
			if status != 200 {
				return
			}
			root := parse(t, body)
			if root.XMLName.Space != nsResponse || root.XMLName.Local != "Autodiscover" {
				t.Errorf("root = %v", root.XMLName)
			}
			r := root.all("Response")
			if len(r) != 1 || r[0].XMLName.Space != outlook {
				t.Fatalf("Response = %+v", r)
			}
			acct := r[0].all("Account")[0]
			if acct.one("AccountType") != "email" || acct.one("Action") != "settings" {
				t.Errorf("AccountType %q, Action %q", acct.one("AccountType"), acct.one("Action"))
			}
			var got []string
			for _, p := range acct.all("Protocol") {
				got = append(got, strings.Join([]string{p.one("Type"), p.one("Server"), p.one("Port"), p.one("LoginName"), p.one("Encryption"), p.one("AuthRequired")}, " "))
			}
			email := strings.TrimSpace(parse(t, []byte(tt.body)).all("Request")[0].one("EMailAddress"))
			want := []string{"IMAP mx.example.net 993 " + email + " SSL on", "SMTP mx.example.net 465 " + email + " SSL on"}
			if !slices.Equal(got, want) {
				t.Errorf("Protocols = %q, want %q", got, want)
			}
		})
	}
}

func TestMobileConfig(t *testing.T) {
	body := MobileConfig(Servers{Host: "mx.example.net", IMAP: 143, Submissions: 465}, "alice@example.com")
	root := parse(t, body)
	if root.XMLName.Local != "plist" {
		t.Fatalf("root = %s", root.XMLName.Local)
	}
	// dict reads a plist <dict> into key -> value text ("true"/"false"
	// for booleans).
	dict := func(d node) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(d.Nodes); i += 2 {
			k, v := d.Nodes[i], d.Nodes[i+1]
			if k.XMLName.Local != "key" {
				t.Fatalf("dict entry %d is <%s>, want <key>", i, k.XMLName.Local)
			}
			switch v.XMLName.Local {
			case "true", "false":
				m[k.Text] = v.XMLName.Local
			default:
				m[k.Text] = v.Text
			}
		}
		return m
	}
	top := root.all("dict")[0]
	outer := dict(top)
	if outer["PayloadType"] != "Configuration" || outer["PayloadVersion"] != "1" || outer["PayloadUUID"] == "" || outer["PayloadIdentifier"] == "" {
		t.Errorf("profile = %v", outer)
	}
	var acct map[string]string
	for i, n := range top.Nodes {
		if n.XMLName.Local == "key" && n.Text == "PayloadContent" {
			acct = dict(top.Nodes[i+1].all("dict")[0])
		}
	}
	want := map[string]string{
		"PayloadType":                  "com.apple.mail.managed",
		"EmailAccountType":             "EmailTypeIMAP",
		"EmailAddress":                 "alice@example.com",
		"IncomingMailServerHostName":   "mx.example.net",
		"IncomingMailServerPortNumber": "143",
		"IncomingMailServerUseSSL":     "true",
		"IncomingMailServerUsername":   "alice@example.com",
		"OutgoingMailServerHostName":   "mx.example.net",
		"OutgoingMailServerPortNumber": "465",
		"OutgoingMailServerUseSSL":     "true",
		"OutgoingMailServerUsername":   "alice@example.com",
	}
	for k, v := range want {
		if acct[k] != v {
			t.Errorf("account %s = %q, want %q", k, acct[k], v)
		}
	}
	for k := range acct {
		if strings.Contains(strings.ToLower(k), "password") && k != "OutgoingPasswordSameAsIncomingPassword" {
			t.Errorf("profile carries %s", k)
		}
	}
	uuid := regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-5[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$`)
	if !uuid.MatchString(acct["PayloadUUID"]) || !uuid.MatchString(outer["PayloadUUID"]) || acct["PayloadUUID"] == outer["PayloadUUID"] {
		t.Errorf("UUIDs %q and %q", outer["PayloadUUID"], acct["PayloadUUID"])
	}
	if again := MobileConfig(Servers{Host: "mx.example.net", IMAP: 143, Submissions: 465}, "alice@example.com"); !bytes.Equal(again, body) {
		t.Error("a second profile differs: installing it would add a second account")
	}
}
