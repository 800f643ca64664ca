package imapd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
)

// FuzzLiteralAtEnd: the argument parser's literal scanner never panics,
// and a literal it finds is announced at the line's end with a size of
// at least 0.
func FuzzLiteralAtEnd(f *testing.F) {
	for _, s := range []string{"a LOGIN {5}\r\n", "a APPEND INBOX {12+}\r\n", "a APPEND x ~{3}\n", "{}", "{-1}", "{+}", "x {99999999999999999999}\r\n", "}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		n, _, ok := literalAtEnd(line)
		if !ok {
			return
		}
		if n < 0 || !bytes.Contains(line, []byte("{")) || !bytes.HasSuffix(bytes.TrimRight(line, "\r\n"), []byte("}")) {
			t.Fatalf("literalAtEnd(%q) = %d, true", line, n)
		}
	})
}

// FuzzConversation sends arbitrary bytes, literals and line breaks
// included, to a session (logged in and with INBOX selected, or not
// yet), then closes its side: the server must answer or close, and never
// panic. FuzzCommand covers single lines; this is imapserver's reading
// of lines and literals under Options.CommandLimits.
func FuzzConversation(f *testing.F) {
	for _, s := range []string{
		"a LOGIN {17}\r\nalice@example.com {14}\r\nalice's secret\r\nb NOOP\r\n",
		"a LOGIN {99999}\r\n",
		"a APPEND INBOX {5+}\r\nhello\r\n",
		"a APPEND INBOX (\\Seen) {10}\r\n",
		"a SELECT {5}\r\nINBOX\r\nb FETCH 1 BODY[]\r\n",
		"a NOOP\r\nb CAPABILITY\nc LOGOUT\r\n",
		"a ID (\"name\" {3}\r\nabc)\r\n",
		"a STARTTLS\r\n",
		"a AUTHENTICATE PLAIN\r\nAGFsaWNlQGV4YW1wbGUuY29tAGFsaWNlJ3Mgc2VjcmV0\r\n",
		"\r\n\r\n",
		strings.Repeat("(", 3000) + "\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	logs := &syncBuffer{}
	e := newEnv(f, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	addr := unlimitedServer(f, e, logs)
	f.Fuzz(func(t *testing.T, data []byte, login bool) {
		rc := dialRaw(t, addr)
		if login {
			if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(tagged, "OK") {
				t.Fatalf("LOGIN: %s", tagged)
			}
			if _, tagged := rc.cmd(`SELECT INBOX`); !strings.HasPrefix(tagged, "OK") {
				t.Fatalf("SELECT: %s", tagged)
			}
		}
		rc.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		rc.c.Write(data)
		rc.c.(*net.TCPConn).CloseWrite()
		rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, rc.r)
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("server panicked on %q:\n%s", data, logs.String())
		}
	})
}

// unlimitedServer serves e's store on another listener without the
// limits a fuzzer would meet at once, and at random: failed logins,
// connections per address and their rate, a mailbox's connections.
func unlimitedServer(f *testing.F, e *env, logs io.Writer) string {
	f.Helper()
	none := credential.Budget{Burst: 1 << 30, PerHour: 1 << 30}
	srv := New(Config{
		Store: e.st, AllowInsecureAuth: true,
		Logins:        credential.NewLogins(credential.LoginConfig{Accounts: e.st, Guesses: credential.GuessLimits{Pair: none, Account: none, Address: none}}),
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
		MaxConnsPerIP: 1 << 20, MaxConnsPerUserIP: -1, MaxConnRatePerIP: -1,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
	})
	return ln.Addr().String()
}

// FuzzFramingInStep: imapserver's framing of commands under
// Options.CommandLimits and its decoder agree on where a command ends. A logged-in client sends one line of its own ending with
// a non-synchronizing literal of n bytes, the literal and the end of its
// line, then "z NOOP": whatever the first line is, the server answers it
// once (one tagged response, or an untagged BAD when it has no tag) and
// then the NOOP, or says BYE before it closes. A second answer before the
// NOOP's is the literal run as a command; a close without BYE leaves the
// client without a word.
func FuzzFramingInStep(f *testing.F) {
	for _, s := range []string{"a20 E)", "a NOOP)", "a LOGIN", "a E(", "a UID E)", "a SELECT", "a APPEND INBOX", "a SEARCH (", "a ID (", "a", "", "a  b", "a b\"", "a{1} b", "a FETCH 1 (BODY[]"} {
		f.Add(s, "x", uint8(1))
		f.Add(s, "a NOOP\r\n", uint8(5))
	}
	logs := &syncBuffer{}
	e := newEnv(f, envOptions{insecureAuth: true})
	addr := unlimitedServer(f, e, logs)
	f.Fuzz(func(t *testing.T, first, lit string, n uint8) {
		if strings.ContainsAny(first, "\r\n") || strings.HasPrefix(first, "z") || n == 0 {
			return
		}
		lit = strings.Repeat(lit+"x", int(n))[:n]
		rc := dialRaw(t, addr)
		if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(tagged, "OK") {
			t.Fatalf("LOGIN: %s", tagged)
		}
		data := first + " {" + strconv.Itoa(int(n)) + "+}\r\n" + lit + "\r\nz NOOP\r\n"
		rc.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := rc.c.Write([]byte(data)); err != nil {
			t.Fatalf("write %q: %v", data, err)
		}
		var got []string
		answers := 0
		for {
			rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			l, err := rc.r.ReadString('\n')
			if err != nil {
				if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "* BYE") {
					t.Fatalf("%q: closed (%v) without BYE after %q", data, err, got)
				}
				return
			}
			got = append(got, l)
			switch {
			case strings.HasPrefix(l, "z "):
				if !strings.HasPrefix(l, "z OK") {
					t.Fatalf("%q: NOOP = %q", data, got)
				}
				return
			case strings.HasPrefix(l, "* BAD"), !strings.HasPrefix(l, "* ") && !strings.HasPrefix(l, "+ "):
				answers++
			}
			if answers > 1 {
				t.Fatalf("%q: answered twice before the NOOP (the literal ran as a command): %q", data, got)
			}
		}
	})
}
