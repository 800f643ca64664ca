package managesieve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadCommand checks that any byte stream read as commands gives
// tokens or an error, never a panic, and that no string is longer than
// the literal limit or the line limit.
func FuzzReadCommand(f *testing.F) {
	for _, s := range []string{
		"LISTSCRIPTS\r\n",
		"PUTSCRIPT \"a\" {5+}\r\nkeep;\r\n",
		"PUTSCRIPT \"a\" {5}\r\nkeep;\r\nNOOP \"x\"\r\n",
		"AUTHENTICATE \"PLAIN\" \"AGFsaWNlAHNlY3JldA==\"\r\n",
		"HAVESPACE \"x\\\"y\" 100\r\n",
		"{99999999}\r\n",
		"\"unterminated\r\n",
		"CHECKSCRIPT {20+}\r\nshort\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		for i := 0; i < 100; i++ {
			toks, err := readCommand(br, 64)
			var line *errLine
			var bad *errBadSyntax
			switch {
			case err == nil:
			case errors.Is(err, errTooLarge), errors.As(err, &bad):
				continue
			case errors.As(err, &line), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				return
			default:
				t.Fatalf("readCommand error %T %v", err, err)
			}
			if len(toks) > maxTokens {
				t.Fatalf("%d tokens", len(toks))
			}
			for _, tk := range toks {
				if len(tk.s) > max(64, maxLine) {
					t.Fatalf("token of %d octets", len(tk.s))
				}
			}
		}
	})
}
