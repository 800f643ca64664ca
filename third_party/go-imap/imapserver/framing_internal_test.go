package imapserver

// mailhost patch: the framer of Options.CommandLimits (see PATCHES.md).

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
)

func TestCommandNameScan(t *testing.T) {
	for _, tc := range []struct {
		line, tag, name string
		ok              bool
	}{
		{"a1 getquotaroot INBOX\r\n", "a1", "GETQUOTAROOT", true},
		{"a1 ID NIL\r\n", "a1", "ID", true},
		{"a1 STARTTLS\r\n", "a1", "STARTTLS", true},
		{"a] NOOP\n", "a]", "NOOP", true},
		{"DONE\r\n", "", "", false},
		{"a+ ID NIL\r\n", "a+", "", false},
		{"* ID NIL\r\n", "*", "", false},
		{"a1 ID(\r\n", "a1", "", false},
		{" ID NIL\r\n", "", "", false},
	} {
		tag, name, ok := commandName([]byte(tc.line))
		if tag != tc.tag || name != tc.name || ok != tc.ok {
			t.Errorf("commandName(%q) = %q, %q, %v, want %q, %q, %v", tc.line, tag, name, ok, tc.tag, tc.name, tc.ok)
		}
	}
}

// FuzzCommandName: the tag and name the framer reads at the start of a
// command line are an IMAP tag and an upper-case atom.
func FuzzCommandName(f *testing.F) {
	for _, s := range []string{"a1 LOGIN x y\r\n", "* OK", "+ x", "a\x00 NOOP", "a noop\n", "a", " a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		tag, name, ok := commandName(line)
		if !ok {
			return
		}
		for i := 0; i < len(tag); i++ {
			if !isTagChar(tag[i]) {
				t.Fatalf("commandName(%q) tag %q", line, tag)
			}
		}
		if tag == "" || name == "" || strings.ToUpper(name) != name || strings.ContainsAny(name, " \r\n") {
			t.Fatalf("commandName(%q) = %q, %q, true", line, tag, name)
		}
	})
}

// FuzzLiteralAtEnd: the framer's literal scanner never panics, and a
// literal it finds is announced at the line's end with a size of at
// least 0.
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

// TestRefusalKeepsReadTimeout: the framer bounds its own reading of a
// command it refuses, then gives the wait for the next command the
// timeout imapserver had set (35 minutes once logged in), not its own.
func TestRefusalKeepsReadTimeout(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	c := newConn(server, &Server{options: Options{CommandLimits: &CommandLimits{}}})
	c.state = imap.ConnStateAuthenticated
	c.setReadTimeout(idleReadTimeout)
	go func() {
		fmt.Fprint(client, "a1  NOOP\r\n")
		r := bufio.NewReader(client)
		if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "a1 BAD") {
			t.Errorf("refusal = %q, want a1 BAD", l)
		}
		fmt.Fprint(client, "a2 NOOP\r\n")
	}()
	if b, err := c.br.ReadByte(); err != nil || b != 'a' {
		t.Fatalf("next command: %q, %v", b, err)
	}
	if c.readTimeout != idleReadTimeout {
		t.Errorf("read timeout after a refusal = %v, want %v", c.readTimeout, idleReadTimeout)
	}
}
