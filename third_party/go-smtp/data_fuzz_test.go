package smtp

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// mailhost patch: dataReader and lineLimitReader read a run of bytes at
// once; these fuzz targets hold them to the byte-at-a-time originals
// (kept here) on any input, buffer size and read size.

// byteDataReader is dataReader.Read as upstream wrote it.
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

// readAll reads r to its end with reads of size at most chunk, and
// answers what came, the error that ended it and what was left unread.
func readAll(read func([]byte) (int, error), chunk int) ([]byte, error) {
	var out []byte
	buf := make([]byte, chunk)
	for i := 0; i < 1<<20; i++ {
		n, err := read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func FuzzDataReader(f *testing.F) {
	f.Add([]byte("Subject: x\r\n\r\nhello\r\n..dot\r\n.\r\nQUIT\r\n"), uint8(7), uint8(0), uint16(0))
	f.Add([]byte("a\rb\r\r\n.\rx\r\n.\r\n"), uint8(1), uint8(3), uint16(5))
	f.Add([]byte("no end"), uint8(200), uint8(40), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk, bufExtra uint8, limit uint16) {
		c := int(chunk)%64 + 1
		size := 16 + int(bufExtra)
		newR := &dataReader{r: bufio.NewReaderSize(bytes.NewReader(data), size)}
		oldR := &dataReader{r: bufio.NewReaderSize(bytes.NewReader(data), size)}
		if limit > 0 {
			newR.limited, newR.n = true, int64(limit)
			oldR.limited, oldR.n = true, int64(limit)
		}
		got, gerr := readAll(newR.Read, c)
		want, werr := readAll(func(b []byte) (int, error) { return byteDataReader(oldR, b) }, c)
		if !bytes.Equal(got, want) || gerr != werr {
			t.Fatalf("read %q, %v; byte at a time %q, %v", got, gerr, want, werr)
		}
		// What follows the end of the data is left to the next command.
		restNew, _ := io.ReadAll(newR.r)
		restOld, _ := io.ReadAll(oldR.r)
		if !bytes.Equal(restNew, restOld) {
			t.Fatalf("left %q, byte at a time %q", restNew, restOld)
		}
	})
}

// byteLineLimit is lineLimitReader.Read as upstream wrote it.
func byteLineLimit(r *lineLimitReader, b []byte) (int, error) {
	if r.curLineLength > r.LineLimit && r.LineLimit > 0 {
		return 0, ErrTooLongLine
	}
	n, err := r.R.Read(b)
	if err != nil {
		return n, err
	}
	if r.LineLimit == 0 {
		return n, nil
	}
	for _, chr := range b[:n] {
		if chr == '\n' {
			r.curLineLength = 0
		}
		r.curLineLength++
		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
	}
	return n, nil
}

func FuzzLineLimitReader(f *testing.F) {
	f.Add([]byte("short\nlines\nhere\n"), uint8(4), uint8(6))
	f.Add([]byte("a much longer line than the limit\n"), uint8(9), uint8(10))
	f.Add([]byte("\n\n\nxx"), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk, limit uint8) {
		c := int(chunk)%64 + 1
		newR := &lineLimitReader{R: bytes.NewReader(data), LineLimit: int(limit)}
		oldR := &lineLimitReader{R: bytes.NewReader(data), LineLimit: int(limit)}
		got, gerr := readAll(newR.Read, c)
		want, werr := readAll(func(b []byte) (int, error) { return byteLineLimit(oldR, b) }, c)
		if !bytes.Equal(got, want) || gerr != werr || newR.curLineLength != oldR.curLineLength {
			t.Fatalf("read %q, %v (line %d); byte at a time %q, %v (line %d)", got, gerr, newR.curLineLength, want, werr, oldR.curLineLength)
		}
	})
}
