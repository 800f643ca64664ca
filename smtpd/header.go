package smtpd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"
)

// headerFields splits the header section of msg (RFC 5322 section 2.2)
// into its fields, each with its continuation lines and line endings, and
// returns the offset where the fields end. The fields are contiguous from
// offset 0. The section ends at the empty line, or at the first line that
// is neither a field nor a continuation (taken as the start of the body).
func headerFields(msg []byte) (fields [][]byte, end int) {
	i := 0
	for i < len(msg) {
		line, j := nextLine(msg, i)
		switch {
		case line[0] == ' ' || line[0] == '\t':
			if len(fields) == 0 {
				return fields, i
			}
			last := fields[len(fields)-1]
			fields[len(fields)-1] = last[:len(last)+len(line)]
		case isFieldStart(line):
			fields = append(fields, line)
		default: // the empty line, or a body without one
			return fields, i
		}
		i = j
	}
	return fields, i
}

// nextLine is the line of msg that starts at i, with its "\n" if it has
// one, and where the next one starts.
func nextLine(msg []byte, i int) (line []byte, next int) {
	j := bytes.IndexByte(msg[i:], '\n')
	if j < 0 {
		return msg[i:], len(msg)
	}
	return msg[i : i+j+1], i + j + 1
}

// headerEnd checks that the header section of msg, whose fields
// headerFields found to end at end, ends where RFC 5322 section 2.1 says:
// at the empty line, or at the end of a message without a body. A line
// that is neither a field nor a continuation is taken there as the start
// of the body, but other parsers (go-msgauth's DKIM signer, mail clients)
// read on past it: a From: after it would be signed and shown without
// having been checked. For the same reason a CR that does not end a line
// (RFC 5322 section 2.3 allows none) is refused in the header: parsers
// that take it for a line break would see fields no one checked.
func headerEnd(msg []byte, end int) error {
	for h := msg[:end]; ; {
		k := bytes.IndexByte(h, '\r')
		if k < 0 {
			break
		}
		if k+1 == len(h) || h[k+1] != '\n' {
			return errors.New("bare CR in the header")
		}
		h = h[k+1:]
	}
	rest := msg[end:]
	if len(rest) == 0 || bytes.HasPrefix(rest, []byte("\r\n")) || rest[0] == '\n' {
		return nil
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	return fmt.Errorf("header line %q is neither a field nor a continuation", clean(string(line[:min(len(line), 80)])))
}

// isFieldStart reports whether line starts a field: a name of printable
// ASCII other than ":" (RFC 5322 section 3.6.8), then ":" (after
// optional blanks, the obsolete syntax of section 4.5).
func isFieldStart(line []byte) bool {
	for k, c := range line {
		switch {
		case c == ':':
			return k > 0
		case c == ' ' || c == '\t':
			rest := bytes.TrimLeft(line[k:], " \t")
			return k > 0 && len(rest) > 0 && rest[0] == ':'
		case c < 33 || c > 126:
			return false
		}
	}
	return false
}

// fieldName is a field's name in lower case.
func fieldName(f []byte) string {
	name, _, _ := bytes.Cut(f, []byte(":"))
	return strings.ToLower(string(bytes.TrimRight(name, " \t")))
}

// fieldValue is a field's body, unfolded (RFC 5322 section 2.2.3).
func fieldValue(f []byte) string {
	_, v, _ := bytes.Cut(f, []byte(":"))
	s := strings.ReplaceAll(string(v), "\r\n", "")
	return strings.TrimSpace(strings.ReplaceAll(s, "\n", ""))
}

// headerLine makes what an Authenticator returned one field ending in
// CRLF, or "".
func headerLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s + "\r\n"
}

// authservID is the authserv-id of an Authentication-Results field (RFC
// 8601 section 2.2), in lower case: its first token, after any comment.
// s may be a whole field or only its body.
func authservID(s string) string {
	if name, v, ok := strings.Cut(s, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "authentication-results") {
		s = v
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "")
	for {
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, "(") {
			break
		}
		depth, k := 0, 0
		for k = 0; k < len(s); k++ {
			if s[k] == '(' {
				depth++
			} else if s[k] == ')' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		if k >= len(s) {
			return ""
		}
		s = s[k+1:]
	}
	end := strings.IndexAny(s, "; \t(")
	if end >= 0 {
		s = s[:end]
	}
	return strings.ToLower(s)
}

// stripAuthResults removes from msg's header every Authentication-Results
// field whose authserv-id is one of ids (compared without case; "" ids are
// ignored): a border MTA must remove those that claim to come from its own
// ADMD (RFC 8601 section 5), which were forged upstream. It returns msg
// itself when there is nothing to remove.
func stripAuthResults(msg []byte, ids ...string) []byte {
	// Fields are looked for up to the empty line, also past a line that
	// is neither a field nor a continuation: strict parsers (headerFields)
	// read what follows it as the body, lenient ones (some mail clients)
	// as more fields, and a forged verdict must not survive for them.
	drop := func(f []byte) bool {
		if fieldName(f) != "authentication-results" {
			return false
		}
		id := authservID(fieldValue(f))
		for _, want := range ids {
			if want != "" && id == strings.ToLower(want) {
				return true
			}
		}
		return false
	}
	var cut [][2]int // spans of msg to leave out
	field := -1      // start of the field being read; -1: none
	endField := func(at int) {
		if field >= 0 && drop(msg[field:at]) {
			cut = append(cut, [2]int{field, at})
		}
		field = -1
	}
	i := 0
	for i < len(msg) {
		line, j := nextLine(msg, i)
		switch {
		case line[0] == ' ' || line[0] == '\t': // continues the field, if any
		case isFieldStart(line):
			endField(i)
			field = i
		case bytes.Equal(line, []byte("\r\n")) || bytes.Equal(line, []byte("\n")):
			endField(i)
			j = len(msg) // the body: nothing more to look at
		default:
			endField(i)
		}
		i = j
	}
	endField(min(i, len(msg)))
	if len(cut) == 0 {
		return msg
	}
	out := make([]byte, 0, len(msg))
	from := 0
	for _, c := range cut {
		out = append(out, msg[from:c[0]]...)
		from = c[1]
	}
	return append(out, msg[from:]...)
}

// wordDecoder decodes RFC 2047 display names well enough to reach the
// addresses: a charset it does not know is passed through, since only the
// addresses matter here.
var wordDecoder = &mime.WordDecoder{CharsetReader: func(charset string, input io.Reader) (io.Reader, error) {
	return input, nil
}}

// fromAddresses returns every address of every From: field of a header
// (RFC 5322 section 3.6.2: a mailbox-list), or an error when there is none
// or one cannot be parsed.
func fromAddresses(fields [][]byte) ([]string, error) {
	var out []string
	p := mail.AddressParser{WordDecoder: wordDecoder}
	for _, f := range fields {
		if fieldName(f) != "from" {
			continue
		}
		list, err := p.ParseList(fieldValue(f))
		if err != nil {
			return nil, fmt.Errorf("From: %q: %w", clean(fieldValue(f)), err)
		}
		for _, a := range list {
			out = append(out, a.Address)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no From: address")
	}
	return out, nil
}

// addMissing appends a Date: and a Message-ID: field to a submitted
// message that lacks them (RFC 6409 sections 8.2 and 8.3: the MSA may add
// them; many receivers refuse mail without a Message-ID).
func addMissing(msg []byte, fields [][]byte, end int, at time.Time, id, hostname string) []byte {
	var hasDate, hasID bool
	for _, f := range fields {
		switch fieldName(f) {
		case "date":
			hasDate = true
		case "message-id":
			hasID = true
		}
	}
	if hasDate && hasID {
		return msg
	}
	var add strings.Builder
	if end > 0 && msg[end-1] != '\n' {
		add.WriteString("\r\n")
	}
	if !hasDate {
		add.WriteString("Date: " + at.Format(time.RFC1123Z) + "\r\n")
	}
	if !hasID {
		add.WriteString("Message-ID: <" + id + "@" + clean(hostname) + ">\r\n")
	}
	out := make([]byte, 0, len(msg)+add.Len())
	out = append(out, msg[:end]...)
	out = append(out, add.String()...)
	return append(out, msg[end:]...)
}
