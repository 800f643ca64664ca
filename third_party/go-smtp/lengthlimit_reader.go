package smtp

import (
	"bytes"
	"errors"
	"io"
)

var ErrTooLongLine = errors.New("smtp: too long a line in input stream")

// lineLimitReader reads from the underlying Reader but restricts
// line length of lines in input stream to a certain length.
//
// If line length exceeds the limit - Read returns ErrTooLongLine
type lineLimitReader struct {
	R         io.Reader
	LineLimit int

	curLineLength int
}

func (r *lineLimitReader) Read(b []byte) (int, error) {
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

	if r.LineLimit > 0 {
		// mailhost patch: the same count, a line at a time
		// (bytes.IndexByte) instead of a byte at a time.
		for rest := b[:n]; ; {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				r.curLineLength += len(rest)
				if r.curLineLength > r.LineLimit {
					r.curLineLength = r.LineLimit + 1 // where the byte-wise count stopped
					return 0, ErrTooLongLine
				}
				return n, nil
			}
			r.curLineLength += i
			if r.curLineLength > r.LineLimit {
				r.curLineLength = r.LineLimit + 1
				return 0, ErrTooLongLine
			}
			r.curLineLength = 1 // the LF counts on the line it starts
			rest = rest[i+1:]
		}
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
