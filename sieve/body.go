package sieve

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message"
)

// The body test (RFC 5173).

// maxHeaderBytes bounds the header read before the body.
const maxHeaderBytes = 256 << 10

type bodyPart struct {
	typ  string // lower-case type/subtype
	text string // decoded (transfer encoding and charset)
}

type bodyParts struct {
	raw   string
	parts []bodyPart
}

func (r *run) loadBody() (*bodyParts, error) {
	if r.body != nil {
		return r.body, nil
	}
	rc, err := r.msg.Open()
	if err != nil {
		return nil, fmt.Errorf("open message for the body test: %w", err)
	}
	defer rc.Close()
	buf, err := io.ReadAll(io.LimitReader(rc, maxHeaderBytes+r.opts.MaxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("read message for the body test: %w", err)
	}
	b := &bodyParts{}
	end := len(buf)
	if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
		end = i + 4
	} else if i := bytes.Index(buf, []byte("\n\n")); i >= 0 {
		end = i + 2
	}
	raw := buf[end:]
	if int64(len(raw)) > r.opts.MaxBodyBytes {
		raw = raw[:r.opts.MaxBodyBytes]
	}
	b.raw = string(raw)

	budget := r.opts.MaxBodyBytes
	ent, err := message.Read(bytes.NewReader(buf))
	if err == nil || message.IsUnknownCharset(err) || message.IsUnknownEncoding(err) {
		_ = ent.Walk(func(_ []int, e *message.Entity, _ error) error {
			if budget <= 0 {
				return io.EOF
			}
			typ, _, _ := e.Header.ContentType()
			typ = strings.ToLower(typ)
			if typ == "" {
				typ = "text/plain"
			}
			if strings.HasPrefix(typ, "multipart/") {
				return nil
			}
			data, _ := io.ReadAll(io.LimitReader(e.Body, budget))
			budget -= int64(len(data))
			r.work += len(data)
			b.parts = append(b.parts, bodyPart{typ: typ, text: string(data)})
			return nil
		})
	}
	r.body = b
	return b, nil
}

func (r *run) bodyValues(t *test) ([]string, error) {
	b, err := r.loadBody()
	if err != nil {
		return nil, err
	}
	switch t.body {
	case bodyRaw:
		return []string{b.raw}, nil
	case bodyText:
		var out []string
		for _, p := range b.parts {
			if strings.HasPrefix(p.typ, "text/") {
				text := p.text
				if p.typ == "text/html" {
					text = stripTags(text)
				}
				out = append(out, text)
			}
		}
		return out, nil
	}
	types := r.expandAll(t.content)
	var out []string
	for _, p := range b.parts {
		for _, ct := range types {
			if contentMatches(p.typ, ct) {
				out = append(out, p.text)
				break
			}
		}
	}
	return out, nil
}

// contentMatches is the :content rule (RFC 5173 section 5.2): "" is any
// type, "type" any subtype of it, "type/subtype" exactly that.
func contentMatches(typ, want string) bool {
	want = strings.ToLower(strings.TrimSpace(want))
	if want == "" {
		return true
	}
	if !strings.Contains(want, "/") {
		return strings.HasPrefix(typ, want+"/")
	}
	return typ == want
}

// stripTags drops HTML tags, so :text on text/html sees the text (RFC
// 5173 section 5.3 leaves the conversion to the implementation).
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '<':
			in = true
		case c == '>' && in:
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}
