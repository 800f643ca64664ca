package sieve

import (
	"bytes"
	"io"
	"strings"
)

// RawMessage is a Message over the bytes of a whole message.
type RawMessage struct {
	raw    []byte
	fields map[string][]string // lower-case name → unfolded values
}

// NewMessage indexes the header of raw (CRLF or LF line ends); the body
// is read only by the body test. A header that never ends makes the
// whole message header.
func NewMessage(raw []byte) *RawMessage {
	m := &RawMessage{raw: raw, fields: map[string][]string{}}
	rest := raw
	var name string
	var val []byte
	flush := func() {
		if name != "" {
			v := strings.TrimRight(string(val), "\r\n")
			k := strings.ToLower(name)
			m.fields[k] = append(m.fields[k], v)
		}
		name, val = "", nil
	}
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var line []byte
		if i < 0 {
			line, rest = rest, nil
		} else {
			line, rest = rest[:i], rest[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// Unfolding removes the line break, not the blank (RFC
			// 5322 section 2.2.3).
			if name != "" {
				val = append(val, line...)
			}
			continue
		}
		flush()
		c := bytes.IndexByte(line, ':')
		if c <= 0 {
			continue
		}
		name = string(bytes.TrimRight(line[:c], " \t"))
		val = append([]byte(nil), bytes.TrimLeft(line[c+1:], " \t")...)
	}
	flush()
	return m
}

// Header implements Message.
func (m *RawMessage) Header(name string) []string { return m.fields[strings.ToLower(name)] }

// Size implements Message.
func (m *RawMessage) Size() int64 { return int64(len(m.raw)) }

// Open implements Message.
func (m *RawMessage) Open() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(m.raw)), nil
}
