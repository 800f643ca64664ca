package smtp

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// BenchmarkDataReader reads a 4 KB message of 76-byte lines through
// dataReader (mailhost patch: a run at a time) and upstream's byte-wise
// Read (byteDataReader), as bytes.Buffer.ReadFrom does in the server.
func BenchmarkDataReader(b *testing.B) {
	msg := []byte(strings.Repeat(strings.Repeat("x", 74)+"\r\n", 54) + ".\r\n")
	for _, c := range []struct {
		name string
		read func(r *dataReader) func([]byte) (int, error)
	}{
		{"runs", func(r *dataReader) func([]byte) (int, error) { return r.Read }},
		{"bytewise", func(r *dataReader) func([]byte) (int, error) {
			return func(p []byte) (int, error) { return byteDataReader(r, p) }
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			src := bytes.NewReader(msg)
			br := bufio.NewReaderSize(src, 4096)
			var out bytes.Buffer
			for i := 0; i < b.N; i++ {
				src.Reset(msg)
				br.Reset(src)
				out.Reset()
				r := &dataReader{r: br}
				if _, err := out.ReadFrom(readerFunc(c.read(r))); err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
