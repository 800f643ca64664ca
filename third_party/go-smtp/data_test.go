package smtp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// mailhost patch: the end of the data and dot-unstuffing, stated once
// over the whole input and held against dataReader by TestDataReader and
// FuzzDataReader (data_fuzz_test.go).

// refData is the data of a DATA command as RFC 5321 sections 4.1.1.4 and
// 4.5.2 define it, read from the whole input at once rather than by a
// state machine: the data ends at the first CRLF "." CRLF, or at "." CRLF
// if that is where it starts; the content is what precedes the "." line,
// its last CRLF included; a dot that starts a line (at the start of the
// data or after a CRLF) is removed, and nothing else is. Bare CR and bare
// LF are content like any other byte. rest is what follows the end, the
// next command's. Without an end, content is all of in, unstuffed.
func refData(in []byte) (content, rest []byte, ended bool) {
	body := in
	switch i := bytes.Index(in, []byte("\r\n.\r\n")); {
	case bytes.HasPrefix(in, []byte(".\r\n")):
		body, rest, ended = nil, in[3:], true
	case i >= 0:
		body, rest, ended = in[:i+2], in[i+5:], true
	}
	content = []byte{}
	for i, c := range body {
		lineStart := i == 0 || i >= 2 && body[i-2] == '\r' && body[i-1] == '\n'
		if lineStart && c == '.' {
			continue
		}
		content = append(content, c)
	}
	if rest == nil {
		rest = []byte{}
	}
	return content, rest, ended
}

// dataReaderCases are what TestDataReader checks and FuzzDataReader
// starts from. err is io.EOF when the data ends.
var dataReaderCases = []struct {
	name, in, want, rest string
	err                  error
}{
	// The end of the data after a bare CR, and after a stuffed dot and
	// a bare CR, with a second transaction pipelined after it.
	{"CR before the end", "hi\r\r\n.\r\nMAIL FROM:<a@x.test>\r\n", "hi\r\r\n", "MAIL FROM:<a@x.test>\r\n", io.EOF},
	{"dot CR before the end", ".\r\r\n.\r\nRSET\r\n", "\r\r\n", "RSET\r\n", io.EOF},
	{"line of dot CR before the end", "a\r\n.\r\r\n.\r\nRSET\r\n", "a\r\n\r\r\n", "RSET\r\n", io.EOF},
	{"CRs before the end", "a\r\r\r\r\n.\r\nQUIT\r\n", "a\r\r\r\r\n", "QUIT\r\n", io.EOF},
	{"CR alone before the end", "\r\r\n.\r\n", "\r\r\n", "", io.EOF},
	{"second transaction", "Subject: one\r\n\r\nhi\r\r\n.\r\nMAIL FROM:<s@x.test>\r\nRCPT TO:<carol@a.test>\r\nDATA\r\nsecret\r\n.\r\n",
		"Subject: one\r\n\r\nhi\r\r\n", "MAIL FROM:<s@x.test>\r\nRCPT TO:<carol@a.test>\r\nDATA\r\nsecret\r\n.\r\n", io.EOF},
	// A stuffed dot then a CR that does not end the line: only the
	// dot goes.
	{"dot CR X", ".\rX\r\n.\r\n", "\rX\r\n", "", io.EOF},
	{"line of dot CR X", "a\r\n.\rX\r\n.\r\n", "a\r\n\rX\r\n", "", io.EOF},
	{"dot CR dot", "a\r\n.\r.\r\n.\r\n", "a\r\n\r.\r\n", "", io.EOF},
	{"dot CR LF is the end only at a line start", "a\r.\r\n.\r\n", "a\r.\r\n", "", io.EOF},
	// The empty message, and empty lines.
	{"empty", ".\r\nQUIT\r\n", "", "QUIT\r\n", io.EOF},
	{"one empty line", "\r\n.\r\nQUIT\r\n", "\r\n", "QUIT\r\n", io.EOF},
	{"two empty lines", "\r\n\r\n.\r\n", "\r\n\r\n", "", io.EOF},
	// Dot-stuffing: a dot that starts a line goes, whatever follows
	// it on the line; other dots stay.
	{"stuffed dot", "..\r\n.\r\n", ".\r\n", "", io.EOF},
	{"stuffed line", "a\r\n..dot\r\n...two\r\n.\r\n", "a\r\n.dot\r\n..two\r\n", "", io.EOF},
	{"dot then text", ".x\r\n.\r\n", "x\r\n", "", io.EOF},
	{"dot then blank", "a\r\n. \r\n.\r\n", "a\r\n \r\n", "", io.EOF},
	{"dot then LF", ".\nb\r\n.\r\n", "\nb\r\n", "", io.EOF},
	{"dots inside a line", "a.b.\r\n.\r\n", "a.b.\r\n", "", io.EOF},
	// Bare LF and bare CR are neither line ends nor the end.
	{"LF dot LF", "a\n.\nb\r\n.\r\n", "a\n.\nb\r\n", "", io.EOF},
	{"LF dot CRLF", "a\n.\r\nb\r\n.\r\n", "a\n.\r\nb\r\n", "", io.EOF},
	{"CR dot CR", "a\r.\rb\r\n.\r\n", "a\r.\rb\r\n", "", io.EOF},
	{"CRLF dot LF", "a\r\n.\nb\r\n.\r\n", "a\r\n\nb\r\n", "", io.EOF},
	{"LF dot dot", "a\n..e\r\n.\r\n", "a\n..e\r\n", "", io.EOF},
	{"CR LF CR LF dot", "a\r\n\r\r\n.\r\n", "a\r\n\r\r\n", "", io.EOF},
	{"long line of CRs", strings.Repeat("x\r", 40) + "\r\n.\r\nNOOP\r\n", strings.Repeat("x\r", 40) + "\r\n", "NOOP\r\n", io.EOF},
	// No end: the connection closed.
	{"nothing", "", "", "", io.ErrUnexpectedEOF},
	{"no end", "hello\r\n", "hello\r\n", "", io.ErrUnexpectedEOF},
	{"dot at the end", "hello\r\n.", "hello\r\n", "", io.ErrUnexpectedEOF},
	{"dot CR at the end", "hello\r\n.\r", "hello\r\n", "", io.ErrUnexpectedEOF},
	{"CRs dot CR at the end", "hello\r\r.\r", "hello\r\r.\r", "", io.ErrUnexpectedEOF},
}

// TestDataReader reads each case with reads of several sizes over
// buffers of several sizes, so that every state change happens at a
// boundary somewhere, and checks the content, the error and what is left
// for the next command; refData must agree with every case.
func TestDataReader(t *testing.T) {
	for _, c := range dataReaderCases {
		t.Run(c.name, func(t *testing.T) {
			content, rest, ended := refData([]byte(c.in))
			if c.err == io.EOF && (string(content) != c.want || string(rest) != c.rest || !ended) {
				t.Fatalf("refData(%q) = %q, %q, %v; want %q, %q, true", c.in, content, rest, ended, c.want, c.rest)
			}
			if c.err != io.EOF && ended {
				t.Fatalf("refData(%q) found an end", c.in)
			}
			for _, chunk := range []int{1, 2, 3, 7, 4096} {
				for _, size := range []int{16, 17, 4096} {
					t.Run(fmt.Sprintf("read %d buffer %d", chunk, size), func(t *testing.T) {
						r := &dataReader{r: newBufioReader(c.in, size)}
						got, err := readAll(r.Read, chunk)
						if string(got) != c.want || err != c.err {
							t.Fatalf("read %q, %v; want %q, %v", got, err, c.want, c.err)
						}
						left, _ := io.ReadAll(r.r)
						if string(left) != c.rest {
							t.Fatalf("left %q for the next command, want %q", left, c.rest)
						}
						checkDataReader(t, []byte(c.in), chunk, size, 0)
					})
				}
			}
		})
	}
}

// TestDataReaderLimit: the limit counts content bytes, and the reader,
// read on without it (as the connection does after 552), stops at the
// same end, leaving the next command.
func TestDataReaderLimit(t *testing.T) {
	for _, c := range dataReaderCases {
		for _, limit := range []int64{1, 2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s limit %d", c.name, limit), func(t *testing.T) {
				checkDataReader(t, []byte(c.in), 3, 16, limit)
			})
		}
	}
}

func newBufioReader(s string, size int) *bufio.Reader {
	return bufio.NewReaderSize(strings.NewReader(s), size)
}
