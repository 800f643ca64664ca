package imapwire

// mailhost patch: RawLine (see PATCHES.md, commands a session serves).

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestRawLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" a b\r\nNEXT", " a b\r\n"},
		{"\r\n", "\r\n"},
		{" {3}\r\nx\r\n rest\r\nNEXT", " {3}\r\nx\r\n rest\r\n"},
		{" {2+}\r\n\r\n\r\n", " {2+}\r\n\r\n\r\n"},
		{" }{\r\n", " }{\r\n"},
		{" lone LF\nNEXT", " lone LF\n"},
	} {
		dec := NewDecoder(bufio.NewReader(strings.NewReader(c.in)), ConnSideServer)
		var got []byte
		if !dec.RawLine(&got) || string(got) != c.want {
			t.Errorf("RawLine(%q) = %q, %v; want %q", c.in, got, dec.Err(), c.want)
		}
	}
	dec := NewDecoder(bufio.NewReader(strings.NewReader(" {10}\r\nshort")), ConnSideServer)
	var got []byte
	if dec.RawLine(&got) {
		t.Errorf("RawLine of a cut literal = %q, want an error", got)
	}
}

// FuzzRawLine: whatever comes, RawLine reads a prefix of it that ends a
// line, holding each literal it announced whole, or fails; it never reads
// more than MaxSize bytes besides literals.
func FuzzRawLine(f *testing.F) {
	for _, s := range []string{" a\r\n", " {1}\r\nx\r\n", " {0+}\r\n\r\n", " {99999999999}\r\n", " ((\"{\r\n", " {1}\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		dec := NewDecoder(bufio.NewReader(strings.NewReader(in)), ConnSideServer)
		dec.MaxSize = 1024
		var lits int64
		dec.CheckBufferedLiteralFunc = func(size int64, nonSync bool) error {
			if size > 4096 {
				return &DecoderExpectError{Message: "too big"}
			}
			lits += size
			return nil
		}
		var got []byte
		if !dec.RawLine(&got) {
			return
		}
		if !strings.HasPrefix(in, string(got)) || !bytes.HasSuffix(got, []byte("\n")) {
			t.Fatalf("RawLine(%q) = %q: not a prefix ending a line", in, got)
		}
		if int64(len(got))-lits > dec.MaxSize+1 {
			t.Fatalf("RawLine(%q) read %d bytes besides %d of literals, over MaxSize", in, len(got), lits)
		}
	})
}
