package smtp

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// mailhost patch: dataReader and lineLimitReader read a run of bytes at
// once. FuzzDataReader holds dataReader to refData (data_test.go), the
// end of the data and the unstuffing stated over the whole input;
// FuzzLineLimitReader holds lineLimitReader to the byte-at-a-time
// original (kept here); both on any input, buffer size and read size.

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
	for i, c := range dataReaderCases {
		f.Add([]byte(c.in), uint8(i), uint8(i*7), uint16(0))
		f.Add([]byte(c.in), uint8(0), uint8(0), uint16(1+i%5))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk, bufExtra uint8, limit uint16) {
		checkDataReader(t, data, int(chunk)%64+1, 16+int(bufExtra), int64(limit))
	})
}

// checkDataReader reads data with a dataReader, in reads of chunk bytes
// over a bufio.Reader of size bytes, with a message limit unless limit
// is 0, and checks what it gives, the error that ends it and the bytes
// it leaves for the next command against refData.
func checkDataReader(t *testing.T, data []byte, chunk, size int, limit int64) {
	t.Helper()
	content, rest, ended := refData(data)
	wantErr := io.EOF
	if !ended {
		wantErr = io.ErrUnexpectedEOF
		// A dot at the start of a line, then a CR, at the very end: the
		// reader holds the CR back until it sees whether LF follows.
		if n := len(data); n >= 2 && data[n-2] == '.' && data[n-1] == '\r' && (n == 2 || n >= 4 && data[n-4] == '\r' && data[n-3] == '\n') {
			content = content[:len(content)-1]
		}
	}
	r := &dataReader{r: bufio.NewReaderSize(bytes.NewReader(data), size)}
	if limit > 0 {
		r.limited, r.n = true, limit
	}
	got, err := readAll(r.Read, chunk)
	if limit > 0 && int64(len(content)) >= limit {
		// The limit counts the bytes given (a message of exactly limit
		// bytes is refused too), and the connection reads the rest of
		// the data without it, as conn.go's handleData does.
		if err != ErrDataTooLarge || !bytes.Equal(got, content[:limit]) {
			t.Fatalf("%q with limit %d: read %q, %v; want %q, %v", data, limit, got, err, content[:limit], ErrDataTooLarge)
		}
		r.limited = false
		more, err2 := readAll(r.Read, chunk)
		got, err = append(got, more...), err2
	}
	if !bytes.Equal(got, content) || err != wantErr {
		t.Fatalf("%q: read %q, %v; want %q, %v", data, got, err, content, wantErr)
	}
	// What follows the end of the data is left to the next command.
	left, _ := io.ReadAll(r.r)
	if !bytes.Equal(left, rest) {
		t.Fatalf("%q: left %q for the next command, want %q", data, left, rest)
	}
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
