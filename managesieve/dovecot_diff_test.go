package managesieve

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dovecottest"
	"github.com/mailhost/mailhost/policy"
)

// The ManageSieve differential test: the exchange Roundcube's
// managesieve plugin (Net_Sieve) drives, sent to mailhost and to
// Dovecot's Pigeonhole managesieved, responses compared after normalising
// what may differ (see sieveNormalise and the tables below).

// sieveDiffConn reads ManageSieve responses with literals inline, in any
// position (Pigeonhole sends error texts as literals).
type sieveDiffConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialSieveDiff(t *testing.T, addr string) (*sieveDiffConn, []string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	d := &sieveDiffConn{c: c, r: bufio.NewReader(c)}
	g, err := d.response()
	if err != nil {
		t.Fatalf("%s greeting: %v", addr, err)
	}
	return d, g
}

var sieveLiteralAtEnd = regexp.MustCompile(`\{(\d+)\+?\}$`)

// response reads lines up to and including the OK, NO or BYE line.
func (d *sieveDiffConn) response() ([]string, error) {
	var lines []string
	for {
		var b strings.Builder
		for {
			d.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			l, err := d.r.ReadString('\n')
			if err != nil {
				return lines, err
			}
			l = strings.TrimRight(l, "\r\n")
			b.WriteString(l)
			m := sieveLiteralAtEnd.FindStringSubmatch(l)
			if m == nil {
				break
			}
			n, _ := strconv.Atoi(m[1])
			buf := make([]byte, n)
			if _, err := io.ReadFull(d.r, buf); err != nil {
				return lines, err
			}
			b.WriteString("\r\n")
			b.Write(buf)
		}
		l := b.String()
		lines = append(lines, l)
		for _, s := range []string{"OK", "NO", "BYE"} {
			if l == s || strings.HasPrefix(l, s+" ") {
				return lines, nil
			}
		}
	}
}

func (d *sieveDiffConn) exec(cmd string) ([]string, error) {
	d.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(d.c, cmd+"\r\n"); err != nil {
		return nil, err
	}
	return d.response()
}

// sieveLit is s as a non-synchronizing literal, as Net_Sieve sends
// scripts.
func sieveLit(s string) string { return fmt.Sprintf("{%d+}\r\n%s", len(s), s) }

var (
	sieveStatus = regexp.MustCompile(`^(OK|NO|BYE)(?: \(([^)]*)\))?`)
	capLine     = regexp.MustCompile(`^"([^"]+)"(?: "([^"]*)")?$`)
)

// sieveNormalise keeps of a response: status responses without their
// human text (the response code stays); capability lines apart, into
// caps, to be compared as sets; other lines (LISTSCRIPTS's, GETSCRIPT's
// literal) as they are, sorted, since LISTSCRIPTS's order is the
// server's.
func sieveNormalise(lines []string, caps map[string]string) []string {
	var out []string
	for i, l := range lines {
		last := i == len(lines)-1
		if last {
			m := sieveStatus.FindStringSubmatch(l)
			if m != nil {
				l = m[1]
				if m[2] != "" {
					l += " (" + strings.ToUpper(m[2]) + ")"
				}
			}
			slices.Sort(out)
			return append(out, l)
		}
		if m := capLine.FindStringSubmatch(l); m != nil && caps != nil && isCapName(m[1]) {
			caps[strings.ToUpper(m[1])] = m[2]
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

func isCapName(s string) bool {
	switch strings.ToUpper(s) {
	case "IMPLEMENTATION", "SIEVE", "SASL", "STARTTLS", "NOTIFY", "MAXREDIRECTS", "LANGUAGE", "OWNER", "VERSION", "UNAUTHENTICATE":
		return true
	}
	return false
}

// Scripts of the exchange.
const (
	diffFilter = `require ["fileinto"];
# rule:[move from X]
if header :contains "from" "x@example.org" {
  fileinto "Folder Y";
  stop;
}
`
	diffVacation = `require ["vacation"];
# rule:[vacation]
if true {
  vacation :days 1 :subject "Away" "I am away.";
}
`
	diffBroken    = "require [\"fileinto\"];\nif header :contains \"from\" {\n  fileinto \"x\";\n}\n"
	diffUnknown   = "require [\"nosuchextension\"];\nkeep;\n"
	diffMissing   = "fileinto \"x\";\n"
	diffUTF8      = "# Grüße\nif header :contains \"subject\" \"Grüße\" { discard; }\n"
	diffVariables = "require [\"variables\", \"fileinto\", \"mailbox\"];\nif header :matches \"subject\" \"*\" { set \"s\" \"${1}\"; }\nfileinto :create \"Archive\";\n"
)

// acceptedSieveDiffs are the commands whose responses may differ, each
// with the reason.
var acceptedSieveDiffs = map[string]string{
	`HAVESPACE "big" 100000`: "the limits are each server's: mailhost's store takes at most 10,000 bytes in this test (memStore), this Dovecot has no limit",
}

// acceptedSieveCaps are capability differences, each with the reason:
// a capability one side has, or a value allowed to differ.
var acceptedSieveCaps = map[string]string{
	"IMPLEMENTATION": "each server names itself",
	"NOTIFY":         "mailhost does not offer enotify (RFC 5435), so announces no notification methods",
	"MAXREDIRECTS":   "each server's own limit: mailhost 5 (sieve.DefaultMaxRedirects), Dovecot 4 (sieve_max_redirects), which it announces only after login",
	"UNAUTHENTICATE": "RFC 5804 section 2.14.1: Dovecot 2.3's managesieved does not offer it",
}

// acceptedSieveExtensions are the SIEVE extensions only one side
// announces, each with the reason.
var acceptedSieveExtensions = map[string]string{
	"ereject":      "RFC 5429's ereject: mailhost offers it, Debian's Pigeonhole does not announce it by default",
	"include":      "RFC 6609: not in mailhost (a user has one active script)",
	"enotify":      "RFC 5435: not in mailhost (no notification methods)",
	"environment":  "RFC 5183: not in mailhost",
	"ihave":        "RFC 5463: not in mailhost",
	"duplicate":    "RFC 7352: not in mailhost",
	"mime":         "RFC 5703: not in mailhost",
	"foreverypart": "RFC 5703: not in mailhost",
	"extracttext":  "RFC 5703: not in mailhost",
}

// TestDovecotManageSieveDifferential runs Roundcube's ManageSieve exchange
// on mailhost and on Dovecot's managesieved and compares the responses.
func TestDovecotManageSieveDifferential(t *testing.T) {
	dc := dovecottest.Start(t, dovecottest.Options{ManageSieve: true})
	st := newMemStore()
	_, mhAddr := start(t, Config{
		Store: st, Auth: passwords{dovecottest.User: dovecottest.Password},
		AllowInsecureAuth: true, Parse: policy.SieveOptions, Logger: quiet,
	})
	mh, mg := dialSieveDiff(t, mhAddr)
	dv, dg := dialSieveDiff(t, dc.ManageSieveAddr)
	mcaps, dcaps := map[string]string{}, map[string]string{}
	compareCaps := func(when string, m, d []string) {
		t.Helper()
		mn, dn := sieveNormalise(m, mcaps), sieveNormalise(d, dcaps)
		if !slices.Equal(mn, dn) {
			t.Errorf("%s: mailhost %q, dovecot %q", when, m, d)
		}
		for name, mv := range mcaps {
			dv, ok := dcaps[name]
			if reason := acceptedSieveCaps[name]; reason != "" {
				if ok && mv == dv {
					continue
				}
				t.Logf("%s: capability %s: mailhost %q, Dovecot %q (accepted: %s)", when, name, mv, dv, reason)
				continue
			}
			if !ok {
				t.Errorf("%s: capability %s only on mailhost (%q) and no reason listed", when, name, mv)
				continue
			}
			if name == "SIEVE" {
				compareSieveExtensions(t, when, mv, dv)
				continue
			}
			if mv != dv {
				t.Errorf("%s: capability %s = %q on mailhost, %q on Dovecot", when, name, mv, dv)
			}
		}
		for name, dv := range dcaps {
			if _, ok := mcaps[name]; !ok && acceptedSieveCaps[name] == "" {
				t.Errorf("%s: capability %s only on Dovecot (%q) and no reason listed", when, name, dv)
			}
		}
		clear(mcaps)
		clear(dcaps)
	}
	compareCaps("greeting", mg, dg)

	auth := "AUTHENTICATE \"PLAIN\" \"" + base64.StdEncoding.EncodeToString([]byte("\x00"+dovecottest.User+"\x00"+dovecottest.Password)) + "\""
	badAuth := "AUTHENTICATE \"PLAIN\" \"" + base64.StdEncoding.EncodeToString([]byte("\x00"+dovecottest.User+"\x00wrong")) + "\""
	steps := []string{
		`CAPABILITY`,
		`LISTSCRIPTS`,
		auth,
		`CAPABILITY`,
		`LISTSCRIPTS`,
		`HAVESPACE "roundcube" 100`,
		`HAVESPACE "big" 100000`,
		`CHECKSCRIPT ` + sieveLit(diffFilter),
		`CHECKSCRIPT ` + sieveLit(diffBroken),
		`CHECKSCRIPT ` + sieveLit(diffUnknown),
		`CHECKSCRIPT ` + sieveLit(diffMissing),
		`CHECKSCRIPT ` + sieveLit(diffUTF8),
		`CHECKSCRIPT ` + sieveLit(diffVariables),
		`CHECKSCRIPT ` + sieveLit(""),
		`PUTSCRIPT "roundcube" ` + sieveLit(diffFilter),
		`PUTSCRIPT "broken" ` + sieveLit(diffBroken),
		`PUTSCRIPT "vacation" ` + sieveLit(diffVacation),
		`PUTSCRIPT "utf8" ` + sieveLit(diffUTF8),
		`LISTSCRIPTS`,
		`SETACTIVE "roundcube"`,
		`SETACTIVE "nosuchscript"`,
		`LISTSCRIPTS`,
		`GETSCRIPT "roundcube"`,
		`GETSCRIPT "utf8"`,
		`GETSCRIPT "nosuchscript"`,
		`PUTSCRIPT "roundcube" ` + sieveLit(diffFilter+"# edited\n"),
		`GETSCRIPT "roundcube"`,
		`LISTSCRIPTS`,
		`RENAMESCRIPT "vacation" "away"`,
		`RENAMESCRIPT "nosuchscript" "other"`,
		`RENAMESCRIPT "away" "roundcube"`,
		`RENAMESCRIPT "roundcube" "filters"`,
		`LISTSCRIPTS`,
		`DELETESCRIPT "filters"`,
		`DELETESCRIPT "nosuchscript"`,
		`SETACTIVE ""`,
		`LISTSCRIPTS`,
		`DELETESCRIPT "filters"`,
		`DELETESCRIPT "utf8"`,
		`SETACTIVE "away"`,
		`LISTSCRIPTS`,
		`NOOP`,
		`NOOP "tag"`,
		`BOGUS`,
		`GETSCRIPT`,
		`UNAUTHENTICATE`,
		`LISTSCRIPTS`,
		auth,
		`LISTSCRIPTS`,
		`LOGOUT`,
	}
	for _, cmd := range steps {
		if cmd == `UNAUTHENTICATE` && (!slices.ContainsFunc(mg, isUnauth) || !slices.ContainsFunc(dg, isUnauth)) {
			// Only one side offers it (acceptedSieveCaps): skip the
			// step and what depends on it.
			if slices.ContainsFunc(mg, isUnauth) {
				if r, err := mh.exec(cmd); err != nil || !strings.HasPrefix(r[len(r)-1], "OK") {
					t.Errorf("mailhost UNAUTHENTICATE = %q, %v", r, err)
				}
				if r, err := mh.exec(auth); err != nil || !strings.HasPrefix(r[len(r)-1], "OK") {
					t.Errorf("mailhost AUTHENTICATE after UNAUTHENTICATE = %q, %v", r, err)
				}
			}
			continue
		}
		m, merr := mh.exec(cmd)
		d, derr := dv.exec(cmd)
		if merr != nil || derr != nil {
			t.Fatalf("%q: mailhost %q, %v; dovecot %q, %v\ndovecot log:\n%s", cmd, m, merr, d, derr, dc.Log())
		}
		if cmd == "CAPABILITY" {
			compareCaps(cmd, m, d)
			continue
		}
		mn, dn := sieveNormalise(m, nil), sieveNormalise(d, nil)
		if slices.Equal(mn, dn) {
			continue
		}
		if reason := acceptedSieveDiffs[cmd]; reason != "" {
			continue
		}
		t.Errorf("%s\n--- mailhost\n%s\n--- dovecot\n%s\n--- normalised mailhost\n%s\n--- normalised dovecot\n%s",
			cmd, strings.Join(m, "\n"), strings.Join(d, "\n"), strings.Join(mn, "\n"), strings.Join(dn, "\n"))
	}
	// A wrong password comes last, on connections of its own: Dovecot slows
	// every later login from the address after one (its auth penalty).
	for name, addr := range map[string]string{"mailhost": mhAddr, "dovecot": dc.ManageSieveAddr} {
		c, _ := dialSieveDiff(t, addr)
		r, err := c.exec(badAuth)
		if err != nil || sieveNormalise(r, nil)[len(r)-1] != "NO" {
			t.Errorf("%s: AUTHENTICATE with a wrong password = %q, %v; want NO", name, r, err)
		}
	}
}

func isUnauth(l string) bool { return l == `"UNAUTHENTICATE"` }

// compareSieveExtensions compares two SIEVE capability values as sets.
func compareSieveExtensions(t *testing.T, when, mh, dc string) {
	t.Helper()
	ms, ds := map[string]bool{}, map[string]bool{}
	for _, e := range strings.Fields(mh) {
		ms[e] = true
	}
	for _, e := range strings.Fields(dc) {
		ds[e] = true
	}
	for e := range ms {
		if !ds[e] && acceptedSieveExtensions[e] == "" {
			t.Errorf("%s: Sieve extension %s only on mailhost and no reason listed", when, e)
		}
	}
	for e := range ds {
		if !ms[e] && acceptedSieveExtensions[e] == "" {
			t.Errorf("%s: Sieve extension %s only on Dovecot and no reason listed", when, e)
		}
	}
}
