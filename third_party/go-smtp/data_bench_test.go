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

// byteDataReader is dataReader.Read as upstream v0.25.1 wrote it, kept
// for the comparison of speed only: it misses the end of the data after
// a bare CR (PATCHES.md item 7), so nothing else may use it.
func byteDataReader(r *dataReader, b []byte) (n int, err error) {
	if r.limited {
		if r.n <= 0 {
			return 0, ErrDataTooLarge
		}
		if int64(len(b)) > r.n {
			b = b[0:r.n]
		}
	}
	const (
		stateBeginLine = iota
		stateDot
		stateDotCR
		stateCR
		stateData
		stateEOF
	)
	for n < len(b) && r.state != stateEOF {
		var c byte
		c, err = r.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			break
		}
		switch r.state {
		case stateBeginLine:
			if c == '.' {
				r.state = stateDot
				continue
			}
			if c == '\r' {
				r.state = stateCR
				break
			}
			r.state = stateData
		case stateDot:
			if c == '\r' {
				r.state = stateDotCR
				continue
			}
			r.state = stateData
		case stateDotCR:
			if c == '\n' {
				r.state = stateEOF
				continue
			}
			r.state = stateData
		case stateCR:
			if c == '\n' {
				r.state = stateBeginLine
				break
			}
			r.state = stateData
		case stateData:
			if c == '\r' {
				r.state = stateCR
			}
		}
		b[n] = c
		n++
	}
	if err == nil && r.state == stateEOF {
		err = io.EOF
	}
	if r.limited {
		r.n -= int64(n)
	}
	return
}
